// Package elfx finds, in an x86-64 ELF shared object, the instructions of
// one function that call (or tail-jump to) another function, directly or
// through its PLT entry.
//
// mpiprobe places uprobes on such call sites rather than on the called
// function's entry when the callee is shared by a cold and a hot path: a
// probe on the call inside mca_pml_ob1_isend fires only when a new send is
// queued, while one on the callee would also fire on every retry.
//
// The scan reads the function's bytes without a full disassembler: a call
// site is an E8 (call rel32) or E9 (jmp rel32) opcode byte whose 32-bit
// displacement lands exactly on the callee or its PLT entry. A stray byte
// inside another instruction matches only if its next four bytes happen to
// equal that displacement (about one chance in 2^32 per byte), and matches
// that overlap are rejected.
package elfx
