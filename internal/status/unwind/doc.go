// Package unwind walks the call stack of a thread of another process from a
// snapshot of its registers, without stopping it.
//
// mpiprobe uses it to name the chain of callers of a thread that spins
// inside an MPI library. The registers (rip, rsp, rbp) come from a BPF perf
// sample or /proc/PID/task/TID/syscall, and the stack is read with
// process_vm_readv while the thread runs on. Debian builds its libraries
// without frame pointers, so the walk cannot follow rbp: it follows the
// DWARF call frame information (CFI) that every x86-64 ELF file carries in
// its .eh_frame section for C++ exceptions and for libgcc's unwinder.
//
// Load parses the .eh_frame of one file into a Table, using the binary
// search table of .eh_frame_hdr when the file has one and indexing the FDEs
// itself otherwise. Stack then repeats one step per frame: find the FDE
// covering the frame's instruction pointer (through Modules, which maps a
// runtime address to a file's Table and load bias), run its call frame
// instructions up to that address, compute the Canonical Frame Address and
// read the return address and saved rbp through procfs.Memory.
//
// The package supports what GCC and clang emit on x86-64: the DW_CFA
// instructions of DWARF 4 and 5 plus the GNU extensions, the DWARF
// expressions of glibc's PLT entries and signal trampoline, the
// augmentations "z", "R", "P", "L" and "S", and all pointer encodings but
// DW_EH_PE_funcrel and indirect FDE addresses. It does not read
// .debug_frame, so code with no .eh_frame (Go binaries, JIT code) cannot be
// unwound, nor can code that does not appear in the Modules given (the
// vDSO, unless its image is loaded with Load as well).
//
// Everything read is untrusted: a malformed file makes Load fail and a
// malformed FDE or a corrupt stack makes Stack stop with an error, never
// panic or loop. Instruction counts, expression steps and remembered
// states are capped, and every caller's CFA must lie above its callee's
// stack pointer.
//
// A Table is immutable and safe for concurrent use; the package has no
// global mutable state.
package unwind
