package x86

import "golang.org/x/arch/x86/x86asm"

// maxPrologue is how many instructions EntryPoint looks past a function's
// entry for one the kernel emulates.
const maxPrologue = 12

// EntryPoint returns where in a function's code (x86-64, code starting at
// the function's entry) an entry probe can go, and how far the stack
// pointer has moved there, in bytes. Every attacher places the probes it
// puts at a function's entry there, a return probe of the same function
// too (probes: the catalog's, the collectives', trace mode's and the
// startup marks).
//
// A uprobe hit runs the instruction it replaced: x86 kernels emulate a
// few (push of a register, relative call, jmp and jcc) and execute every
// other one out of line with a single-step trap, which costs several µs
// more per hit (10 µs on a Firecracker VM; docs/cet.md). Many MPI functions begin with such an instruction: Open
// MPI's MPI_Test and MPI_Waitall load a global with a rip-relative mov,
// MPI_Wtime moves the stack pointer, and on a build with CET (Ubuntu's,
// Fedora's, Debian 13's packages) every function begins with endbr64.
// EntryPoint skips such instructions, up to the first emulated one, while
// the probe sees the same call there:
//
//   - no branch before it, and no jump within the function lands between
//     the entry and it (so it runs exactly once per call);
//   - the stack pointer and the argument registers are unchanged, so that
//     a return probe there catches this call's return (the kernel replaces
//     the return address at the stack pointer) and the arguments are read
//     as at the entry; for an entry-only probe (entryOnly in probes: no
//     return probe, no arguments), the stack pointer may move down by a
//     constant (frame) and argument registers may be overwritten;
//   - no store but into the new stack frame.
//
// An endbr64 is skipped at the entry only, where it marks the function as
// a target of indirect calls and changes no register; one further in marks
// a place an indirect jump may land on, and the probe stays before it.
// endbr32 is not skipped (no 64-bit code is built with it).
//
// It returns (0, 0) when the entry is best, or code does not allow
// another point (nil code, or code it cannot decode to its end: it must
// see every jump of the function).
func EntryPoint(code []byte, entryOnly bool) (offset, frame uint64) {
	targets, whole := branchTargets(code)
	if !whole {
		return 0, 0 // a jump into the prologue could hide in what was not decoded
	}
	off := 0
	for range maxPrologue {
		if off >= len(code) {
			break
		}
		inst, err := Decode(code[off:])
		if err != nil {
			break
		}
		if off > 0 && targets[off] {
			break
		}
		if m := endbrAt(code[off:]); m != 0 {
			if off > 0 || m != endbr64 {
				break
			}
			off += inst.Len
			continue
		}
		if emulated(inst) {
			return uint64(off), frame
		}
		d, ok := skippable(inst, entryOnly, frame)
		if !ok {
			break
		}
		frame += d
		off += inst.Len
	}
	return 0, 0
}

// branchTargets returns the offsets that relative jumps and calls of code
// land on, decoding it from the start (a function's code is its
// instructions back to back), and whether it decoded to the end.
func branchTargets(code []byte) (map[int]bool, bool) {
	out := map[int]bool{}
	off := 0
	for off < len(code) {
		inst, err := Decode(code[off:])
		if err != nil {
			return out, false
		}
		if t, ok := BranchTarget(inst, uint64(off)); ok {
			out[int(t)] = true
		}
		off += inst.Len
	}
	return out, true
}

// emulated says whether x86 kernels emulate inst at a uprobe instead of
// single-stepping it (arch/x86/kernel/uprobes.c: push of a register,
// relative call, jmp and jcc).
func emulated(inst x86asm.Inst) bool {
	switch {
	case inst.Op == x86asm.PUSH:
		r, ok := inst.Args[0].(x86asm.Reg)
		return ok && Is64(r) && inst.Len <= 2
	case inst.Op == x86asm.CALL || inst.Op == x86asm.JMP || Jcc(inst.Op):
		_, ok := inst.Args[0].(x86asm.Rel)
		return ok
	}
	return false
}

// skippable says whether an entry probe may be placed after inst (see
// EntryPoint), and by how many bytes it moves the stack pointer down.
func skippable(inst x86asm.Inst, entryOnly bool, frame uint64) (uint64, bool) {
	switch inst.Op {
	case x86asm.CMP, x86asm.TEST, x86asm.NOP:
		return 0, true
	case x86asm.SUB:
		if inst.Args[0] == x86asm.RSP {
			imm, ok := inst.Args[1].(x86asm.Imm)
			if !ok || !entryOnly || imm <= 0 || imm%8 != 0 || imm > 1024 {
				return 0, false
			}
			return uint64(imm), true
		}
	case x86asm.MOV, x86asm.MOVZX, x86asm.MOVSX, x86asm.MOVSXD, x86asm.LEA, x86asm.XOR, x86asm.ADD,
		x86asm.AND, x86asm.OR:
	default:
		return 0, false
	}
	switch dst := inst.Args[0].(type) {
	case x86asm.Reg:
		switch Reg64(dst) {
		case 0, x86asm.RSP:
			return 0, false
		case x86asm.RDI, x86asm.RSI, x86asm.RDX, x86asm.RCX, x86asm.R8, x86asm.R9:
			return 0, entryOnly
		}
		return 0, true
	case x86asm.Mem:
		// Only into the frame the prologue made, below the return address.
		ok := dst.Base == x86asm.RSP && dst.Index == 0 && dst.Segment == 0 && dst.Disp >= 0 &&
			uint64(dst.Disp)+uint64(max(inst.MemBytes, 1)) <= frame
		return 0, ok
	}
	return 0, false
}
