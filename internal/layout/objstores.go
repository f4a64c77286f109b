package layout

import (
	"slices"

	"golang.org/x/arch/x86/x86asm"

	"github.com/mpiprobe/mpiprobe/internal/x86"
)

// Store is a write a function makes into an object that is neither its
// stack frame nor one of its pointer arguments: a request it allocated
// and fills in, as mca_pml_ob1_irecv fills in the receive request with
// its source, tag and communicator.
type Store struct {
	// Arg is the argument (0-based; 6 and on are passed on the stack)
	// whose value is written, or -1 for the constant Imm.
	Arg int
	Imm int64
	// Off is the displacement from the base register, Bytes the width.
	Off   int64
	Bytes int
}

// ObjectStores returns the stores the function at entry (size bytes of
// code, stackArgs integer arguments passed on the stack after the six in
// registers) makes of an argument, or of a constant, into memory through
// a base register that holds neither an argument nor a frame address.
// An argument store counts only where the source holds the argument on
// every path there (the must-analysis of ArgHomes). The stores come in
// address order, each (argument or constant, offset, width) once.
func ObjectStores(code Code, entry uint64, size, stackArgs int) ([]Store, error) {
	a := argFlow{code: code, lo: entry, hi: entry + uint64(size), states: map[uint64]*flowState{}}
	st := entryState()
	for k := range stackArgs {
		st.slots[int64(8*(k+1))] = flowVal{k: fArg, n: int64(len(argRegs) + k)}
	}
	if err := a.run(entry, st); err != nil {
		return nil, err
	}
	pcs := slices.Sorted(func(yield func(uint64) bool) {
		for pc := range a.states {
			if !yield(pc) {
				return
			}
		}
	})
	var out []Store
	for _, pc := range pcs {
		b := code(pc, maxInstLn)
		in, err := x86asm.Decode(b, 64)
		if err != nil {
			continue
		}
		m, ok := in.Args[0].(x86asm.Mem)
		if !ok || !a.states[pc].objectBase(m) {
			continue
		}
		var found []Store
		if in.Op == x86asm.MOV {
			if s, ok := a.states[pc].objectStore(m, in.Args[1], in.MemBytes); ok {
				found = append(found, s)
			}
		} else {
			found = a.states[pc].xmmStores(in, m)
		}
		for _, s := range found {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		if len(out) >= maxStores {
			break
		}
	}
	return out, nil
}

// objectBase says whether m addresses an object other than the frame
// and the arguments': its base register holds neither.
func (st *flowState) objectBase(m x86asm.Mem) bool {
	f := x86.Family(m.Base)
	if f < 0 || m.Index != 0 || m.Segment != 0 || !x86.Is64(m.Base) {
		return false
	}
	k := st.regs[f].k
	return k != fArg && k != fStack
}

// maxStores bounds the stores kept per function: it reads untrusted code.
const maxStores = 256

// objectStore describes a store of src to m, an object's (objectBase),
// when src is an argument or a constant.
func (st *flowState) objectStore(m x86asm.Mem, src x86asm.Arg, n int) (Store, bool) {
	s := Store{Arg: -1, Off: m.Disp, Bytes: n}
	switch x := src.(type) {
	case x86asm.Imm:
		s.Imm = int64(x)
	case x86asm.Reg:
		v := st.operand(x, n)
		if v.k != fArg || n < 4 {
			return Store{}, false
		}
		s.Arg = int(v.n)
	default:
		return Store{}, false
	}
	return s, true
}
