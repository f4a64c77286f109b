package layout

import (
	"golang.org/x/arch/x86/x86asm"

	"github.com/mpiprobe/mpiprobe/internal/x86"
)

// The SSE registers in the argument flow. A compiler that fills in two
// neighbouring fields of a new object at once packs the arguments into
// an XMM register and stores it whole: GCC 10 (Debian 11's Open MPI
// 4.1.0) writes mca_pml_ob1_irecv's source and tag with
//
//	movd (%rsp),%xmm0; movd 0xc(%rsp),%xmm1; punpckldq %xmm1,%xmm0
//	movq %xmm0,0x1d8(%r10)
//
// and its communicator with the datatype by movq, punpcklqdq and
// movups. An XMM register is followed as four 32-bit lanes, each with
// the argument it holds and that argument's width from the lane on (4,
// or 8 for a 64-bit value over two lanes); any other write to one makes
// it unknown.

// xmmLane is one 32-bit lane of an XMM register: the argument whose low
// bytes it holds, and how many bytes of it start here (4 or 8).
type xmmLane struct {
	v     flowVal
	bytes int
}

type xmmReg [4]xmmLane

// xmmIndex returns the number of an XMM register, -1 for any other.
func xmmIndex(a x86asm.Arg) int {
	if r, ok := a.(x86asm.Reg); ok && r >= x86asm.X0 && r <= x86asm.X15 {
		return int(r - x86asm.X0)
	}
	return -1
}

// stepXMM applies an instruction that reads or writes an XMM register,
// and reports whether it did (step then has nothing more to do).
func (st *flowState) stepXMM(in x86asm.Inst) bool {
	dst, src := -1, -1
	if in.Args[0] != nil {
		dst = xmmIndex(in.Args[0])
	}
	if in.Args[1] != nil {
		src = xmmIndex(in.Args[1])
	}
	if dst < 0 && src < 0 {
		return false
	}
	switch in.Op {
	case x86asm.MOVD, x86asm.MOVQ:
		n := 4
		if in.Op == x86asm.MOVQ {
			n = 8
		}
		if dst >= 0 {
			if src >= 0 { // between XMM registers: the low lanes
				low := st.xmm[src]
				st.xmm[dst] = xmmReg{low[0], low[1]}
				if n == 4 {
					st.xmm[dst] = xmmReg{lane32(low[0])}
				}
				return true
			}
			st.xmm[dst] = xmmReg{}
			if v := st.scalar(in.Args[1], in.MemBytes); v.k == fArg {
				st.xmm[dst][0] = xmmLane{v: v, bytes: n}
			}
			return true
		}
		// To a register or memory: the low lane.
		v := flowVal{}
		if l := st.xmm[src][0]; l.bytes >= n {
			v = l.v
		}
		st.write(in.Args[0], in.MemBytes, v)
		return true
	case x86asm.MOVUPS, x86asm.MOVAPS, x86asm.MOVDQU, x86asm.MOVDQA:
		if dst >= 0 {
			st.xmm[dst] = xmmReg{}
			if src >= 0 {
				st.xmm[dst] = st.xmm[src]
			}
			return true
		}
		st.write(in.Args[0], in.MemBytes, flowVal{})
		return true
	case x86asm.PUNPCKLDQ, x86asm.UNPCKLPS:
		if dst >= 0 {
			a, b := st.xmm[dst], xmmReg{}
			if src >= 0 {
				b = st.xmm[src]
			}
			st.xmm[dst] = xmmReg{lane32(a[0]), lane32(b[0]), lane32(a[1]), lane32(b[1])}
			return true
		}
	case x86asm.PUNPCKLQDQ, x86asm.MOVLHPS:
		if dst >= 0 {
			b := xmmReg{}
			if src >= 0 {
				b = st.xmm[src]
			}
			st.xmm[dst][2], st.xmm[dst][3] = b[0], b[1]
			return true
		}
	}
	if dst >= 0 {
		st.xmm[dst] = xmmReg{}
		return true
	}
	if _, ok := in.Args[0].(x86asm.Reg); ok || in.MemBytes > 0 {
		st.write(in.Args[0], in.MemBytes, flowVal{})
	}
	return true
}

// lane32 is a lane moved on its own: a 64-bit value split keeps only
// its low half, which is no argument of known width.
func lane32(l xmmLane) xmmLane {
	if l.bytes != 4 {
		return xmmLane{}
	}
	return l
}

// scalar is what a general register or a frame word moved into an XMM
// register holds.
func (st *flowState) scalar(a x86asm.Arg, memBytes int) flowVal {
	if r, ok := a.(x86asm.Reg); ok && x86.Family(r) >= 0 {
		return st.regs[x86.Family(r)]
	}
	return st.operand(a, memBytes)
}

// xmmStores returns the argument stores of an instruction that writes an
// XMM register, or part of one, to memory m: one per lane that starts
// an argument.
func (st *flowState) xmmStores(in x86asm.Inst, m x86asm.Mem) []Store {
	src := -1
	if in.Args[1] != nil {
		src = xmmIndex(in.Args[1])
	}
	if src < 0 {
		return nil
	}
	lanes := st.xmm[src][:]
	switch in.Op {
	case x86asm.MOVD:
		lanes = lanes[:1]
	case x86asm.MOVQ, x86asm.MOVLPS, x86asm.MOVLPD:
		lanes = lanes[:2]
	case x86asm.MOVHPS, x86asm.MOVHPD:
		lanes = lanes[2:]
	case x86asm.MOVUPS, x86asm.MOVAPS, x86asm.MOVDQU, x86asm.MOVDQA, x86asm.MOVUPD, x86asm.MOVAPD:
	default:
		return nil
	}
	var out []Store
	for i, l := range lanes {
		if l.v.k == fArg && 4*i+l.bytes <= 4*len(lanes) {
			out = append(out, Store{Arg: int(l.v.n), Off: m.Disp + int64(4*i), Bytes: l.bytes})
		}
	}
	return out
}
