package symbolize

import (
	"debug/elf"
	"maps"
	"slices"

	"golang.org/x/arch/x86/x86asm"

	"github.com/mpiprobe/mpiprobe/internal/x86"
)

// argRegs are the x86-64 System V integer argument registers, by family.
var argRegs = func() map[int]bool {
	m := map[int]bool{}
	for _, r := range []x86asm.Reg{x86asm.RDI, x86asm.RSI, x86asm.RDX, x86asm.RCX, x86asm.R8, x86asm.R9} {
		m[x86.Family(r)] = true
	}
	return m
}()

// inst is one decoded instruction of a function.
type inst struct {
	addr uint64
	in   x86asm.Inst
}

// flow reports whether in ends a straight run of code: a jump, a call or
// a return.
func flow(in x86asm.Inst) bool {
	return in.Op == x86asm.JMP || in.Op == x86asm.CALL || in.Op == x86asm.RET || x86.Jcc(in.Op)
}

// argsWritten returns the argument registers (by family) the instructions
// write: a move, load of an address, xor-zeroing or pop into them.
func argsWritten(is []inst) map[int]bool {
	out := map[int]bool{}
	for _, i := range is {
		switch i.in.Op {
		case x86asm.MOV, x86asm.MOVZX, x86asm.MOVSX, x86asm.MOVSXD, x86asm.LEA, x86asm.XOR, x86asm.POP:
		default:
			continue
		}
		if r, ok := i.in.Args[0].(x86asm.Reg); ok && argRegs[x86.Family(r)] {
			out[x86.Family(r)] = true
		}
	}
	return out
}

// mergedLines returns the other source lines whose call the compiler
// merged into the call instruction at pc. At -O2 `if (rank == 0)
// MPI_Recv(..., 1, ...); else MPI_Recv(..., 0, ...);` becomes, by
// cross-jumping, the arguments that differ set on each path, one path
// jumping into the other's straight run of code that ends with the one
// call; the line table gives the shared tail, and so the call, to one
// branch only. A jump into that run (after its start) makes two paths to
// the call: the run's code before the jump's target, and the block the
// jump ends. It counts as a merge when both paths set the same argument
// registers, which the tail after the target does not set again (each
// branch supplies its own values of the same arguments), the jump is an
// unconditional one, and the line of
// each path's last argument setting has no code outside that path in the
// function. A loop's back edge into its head, whose code sets every
// argument again or whose lines have code elsewhere, does not count. The
// lines returned are those of both paths other than line.
func (o *object) mergedLines(sym symbol, pc uint64, file uint32, line int32) []int {
	if sym.size == 0 || sym.size > 1<<20 || line <= 0 {
		return nil
	}
	code := make([]byte, sym.size)
	if !o.readCode(sym.value, code) {
		return nil
	}
	var is []inst
	for off := 0; off < len(code); {
		in, err := x86.Decode(code[off:])
		if err != nil {
			return nil // not all code: no claim
		}
		is = append(is, inst{sym.value + uint64(off), in})
		off += in.Len
	}
	call := slices.IndexFunc(is, func(i inst) bool { return pc >= i.addr && pc < i.addr+uint64(i.in.Len) })
	if call < 0 || is[call].in.Op != x86asm.CALL {
		return nil
	}
	run := call
	for run > 0 && !flow(is[run-1].in) {
		run--
	}
	fnEnd := sym.value + sym.size
	var out []int
	for j, i := range is {
		// The other branch ends with a plain jump into the tail; a
		// conditional one is an if's test, whose compared value the
		// code after it may reuse as an argument.
		if i.in.Op != x86asm.JMP {
			continue
		}
		to, ok := x86.BranchTarget(i.in, i.addr)
		if !ok || to <= is[run].addr || to > is[call].addr {
			continue
		}
		tail := slices.IndexFunc(is[run:call+1], func(x inst) bool { return x.addr == to })
		if tail < 0 {
			continue
		}
		tail += run
		from := j
		for from > 0 && !flow(is[from-1].in) {
			from--
		}
		given := argsWritten(is[tail:call])
		a, b := argsWritten(is[run:tail]), argsWritten(is[from:j])
		for r := range given {
			delete(a, r)
			delete(b, r)
		}
		if len(a) == 0 || !maps.Equal(a, b) {
			continue
		}
		shared := span{is[tail].addr, is[call].addr + uint64(is[call].in.Len)}
		la, oka := o.pathLine(is[run:tail], shared, file, sym.value, fnEnd)
		lb, okb := o.pathLine(is[from:j+1], shared, file, sym.value, fnEnd)
		if !oka || !okb || la == lb {
			continue
		}
		for _, l := range []int32{la, lb} {
			if l != line {
				out = append(out, int(l))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// span is an address range [from, to).
type span struct{ from, to uint64 }

// pathLine returns the line of the last instruction of path that sets an
// argument register, when that line is in file and has no code within
// the function [start, end) outside path and the shared tail (which the
// line table gives to one of the paths' lines).
func (o *object) pathLine(path []inst, shared span, file uint32, start, end uint64) (int32, bool) {
	for k := len(path) - 1; k >= 0; k-- {
		if len(argsWritten(path[k:k+1])) == 0 {
			continue
		}
		f, l, ok := o.lines.row(path[k].addr)
		if !ok || f != file || l <= 0 {
			return 0, false
		}
		last := path[len(path)-1]
		return l, o.lines.only(f, l, start, end, span{path[0].addr, last.addr + uint64(last.in.Len)}, shared)
	}
	return 0, false
}

// readCode reads the bytes at virtual address addr from the section that
// holds them.
func (o *object) readCode(addr uint64, b []byte) bool {
	for _, sec := range o.ef.Sections {
		if sec.Type == elf.SHT_PROGBITS && addr >= sec.Addr && addr+uint64(len(b)) <= sec.Addr+sec.Size {
			_, err := sec.ReadAt(b, int64(addr-sec.Addr))
			return err == nil
		}
	}
	return false
}
