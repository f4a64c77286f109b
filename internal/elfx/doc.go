// Package elfx reads what mpiprobe needs from ELF files beyond debug/elf:
// GNU build ids (BuildID), the file offset of a dynamic function in its
// default symbol version (Symbols), the conversion between virtual
// addresses, file offsets and a mapping's load bias (Segments), struct
// field offsets from DWARF (StructFields) with the lookup of separate debug
// files by build id (DebugFile, OpenDebugFile), and the call sites of one
// function inside another (Sites).
//
// Everything here reads files that a traced process maps, which mpiprobe
// does not control: every reader returns an error for malformed input and
// never panics (the fuzz targets check it).
//
// # Call sites
//
// mpiprobe places uprobes on call sites rather than on the called
// function's entry when the callee is shared by a cold and a hot path: a
// probe on the call inside mca_pml_ob1_isend fires only when a new send is
// queued, while one on the callee would also fire on every retry. Sites
// finds, in an x86-64 ELF shared object, the instructions of one function
// that call (or tail-jump to) another function, directly or through its
// PLT entry.
//
// The scan reads the function's bytes without a full disassembler: a call
// site is an E8 (call rel32) or E9 (jmp rel32) opcode byte whose 32-bit
// displacement lands exactly on the callee or its PLT entry. A stray byte
// inside another instruction matches only if its next four bytes happen to
// equal that displacement (about one chance in 2^32 per byte), and matches
// that overlap are rejected.
package elfx
