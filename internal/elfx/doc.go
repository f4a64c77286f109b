// Package elfx reads what mpiprobe needs from ELF files beyond debug/elf:
// GNU build ids (BuildID), the file offset of a dynamic function in its
// default symbol version (Symbols), the conversion between virtual
// addresses, file offsets and a mapping's load bias (Segments), struct
// field offsets from DWARF (StructFields) with the lookup of separate debug
// files by build id (DebugFile, OpenDebugFile) and, when what a build
// lacks would be read from them, the one line naming that file and the
// Debian package that installs it (MissingDebugError, DebugPackage), and
// the call sites of one function inside another (Sites).
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
// Sites are found by decoding the function, from its symbol's value to
// its end, as consecutive x86-64 instructions with golang.org/x/arch's
// x86asm (the Go team's maintained decoder; objdump would be an external
// tool to run and parse, and debug/elf reads no code). A site is a call
// (rel32) or jump (rel32, or rel8, which reaches only a local function
// within 128 bytes, never a PLT entry in another section) whose
// destination is the callee or its PLT or .plt.got entry. Only decoding
// tells instruction boundaries: the byte scan it replaced, which looked
// for E8/E9 bytes whose displacement landed on the callee, could match
// inside an immediate or displacement, and a uprobe there corrupts the
// instruction. Two cases x86asm leaves open are closed by package x86's
// Decode: it does not know endbr64/endbr32, read there as 4-byte no-ops,
// and it returns a lone prefix or an instruction cut short as a one-byte
// instruction without error, taken there as undecodable.
//
// Decoding has no way to resynchronise after bytes it cannot read, so a
// function that does not decode to its end, or that reaches the callee by
// a conditional jump (a probe there fires whether or not it jumps), yields
// no sites and an error naming the function and offset (ErrUnreliable):
// a probe on only some of the calls would undercount without saying so.
// Fill bytes (int3, nop, zero) after the last instruction are accepted.
package elfx
