// Package x86 holds the x86-64 decoding helpers that mpiprobe's code
// readers share: package elfx (call sites), package layout (accessor,
// argument and object-store analyses) and package probes (where the
// attachers put entry probes).
//
// It builds on golang.org/x/arch/x86/x86asm, the Go team's maintained
// decoder, and does by hand only what x86asm does not:
//
//   - register families (Family, Reg64, Is64, Wide): which 64-bit
//     general register an 8-, 16- or 32-bit register is part of;
//   - branch targets (BranchTarget): the address a relative call, jump or
//     conditional jump lands on, from the x86asm.Rel it decodes, and the
//     16 jumps on the flags (Jcc);
//   - decoding with CET's markers (Decode): endbr64 and endbr32 read as
//     4-byte no-ops, a lone prefix or an instruction cut short as an error
//     (x86asm returns both as a one-byte instruction without an opcode);
//   - entry points (EntryPoint): where past a function's prologue a uprobe
//     sees the same call as at its entry, on an instruction the kernel
//     emulates instead of single-stepping.
//
// Everything here reads code of files a traced process maps, which
// mpiprobe does not control: nothing panics on any input (FuzzEntryPoint).
// It imports nothing of mpiprobe: the lowest layer.
package x86
