package layout

import (
	"golang.org/x/arch/x86/x86asm"

	"github.com/mpiprobe/mpiprobe/internal/x86"
)

// Code gives the analysis the machine code of a library: the bytes at a
// file address, as many as are available up to n (fewer near the end of
// the code, none outside it). Addresses outside the library's own code
// (PLT stubs, other sections) return nothing, and calls to them are not
// followed.
type Code func(addr uint64, n int) []byte

// Access is a value an accessor hands back from the communicator: the
// chain of displacements followed from the object (one for a field of the
// object, two for a field of an object it points to).
type Access struct {
	// Arg is the argument (0-based) through which the value is stored;
	// -1 for the return value.
	Arg   int
	Chain []int64
}

// Copy is a call that copies bytes from the communicator into an argument
// buffer, as strncpy(name, comm->name, len) in MPI_Comm_get_name.
type Copy struct {
	Arg   int     // the destination argument of the accessor
	Chain []int64 // where the source is, as for Access
	Len   int64   // the constant length passed, 0 if not constant
	// Ptr says that the source is the pointer read at Chain, not the
	// bytes there: Open MPI 5.0 keeps the name in a buffer of its own
	// (opal_string_copy(name, comm->c_name, len)).
	Ptr bool
}

// Op is one step in turning the accessor's handle argument into an object
// address (MPICH): and/shift by an immediate, multiplication by the object
// size, the addition of a table's address read from a GOT slot or a global,
// or the addition of a block pointer from the indirect block array.
type Op struct {
	Kind OpKind
	// Imm is the immediate of and, shifts and multiplication.
	Imm int64
	// Addr is the file address of the GOT slot (AddSlot) or of the
	// global (AddGlobal, AddBlock: the allocator object).
	Addr uint64
	// Off is the offset of the block array pointer in the allocator
	// object (AddBlock) or of the object size it multiplies by (MulMem).
	Off int64
	// Index are the steps that made the block index (AddBlock).
	Index []Op
}

// OpKind says what an Op does.
type OpKind uint8

// The kinds of handle decoding steps.
const (
	OpAnd OpKind = iota + 1
	OpShr
	OpMul
	OpMulMem
	OpAddSlot
	OpAddGlobal
	OpAddBlock
	OpOther
)

// Facts is what the decoded accessors show about the communicator.
type Facts struct {
	// Stores and Returns are the values the code hands back.
	Stores, Returns []Access
	// Copies are copies into argument buffers.
	Copies []Copy
	// Paths are the handle decodings after which the code dereferences
	// an object (MPICH); empty when the argument is already a pointer.
	Paths [][]Op
}

// Limits of the analysis: it reads untrusted code.
const (
	maxSteps = 20000 // instructions interpreted per accessor, calls included
	// maxCallSteps bounds the instructions one followed call may take, so
	// that a large callee cannot use up maxSteps before the accessor's
	// other paths are walked: MPICH 4.2's PMPI_Comm_rank calls
	// MPIR_Threadcomm_rank_impl first, and MPIR_Comm_rank_impl, the one
	// that stores the rank, on the branch walked after it.
	maxCallSteps = 2000
	maxDepth     = 2  // calls followed below the accessor
	maxOps       = 12 // steps kept per handle decoding
	maxChain     = 3  // displacements kept per access
	maxFacts     = 64 // of each kind per accessor
	maxInstLn    = 15
	maxVisits    = 4 // walks through one instruction
)

type kind uint8

const (
	kUnknown    kind = iota
	kArg             // an argument of the accessor (not the communicator)
	kComm            // the communicator argument, or a value computed from it
	kLoad            // read from the communicator (through chain)
	kAddr            // the address of a field of the communicator
	kImm             // a constant
	kGlobal          // the address of a global (rip-relative lea)
	kGlobalLoad      // read from a global or GOT slot at g+off
)

type val struct {
	k     kind
	arg   int
	chain []int64
	imm   int64
	g     uint64
	off   int64
	ops   []Op
}

// state holds the value of the 16 general registers and of a few stack
// slots (unoptimized code keeps its arguments there).
type state struct {
	regs  [16]val
	slots [maxSlots]slot
}

// slot is a stack location [base + off] and what it holds.
type slot struct {
	used bool
	base int // register family: RSP or RBP
	off  int64
	v    val
}

// maxSlots is how many stack slots a state follows.
const maxSlots = 16

// The register families of the stack and frame pointers.
const (
	regRSP = 4
	regRBP = 5
)

// stackSlot reports whether a memory operand addresses the stack frame:
// rsp-based, or rbp-based while rbp holds nothing of the accessor's (a
// frame pointer rather than a saved argument).
func stackSlot(st *state, m x86asm.Mem) (int, bool) {
	if m.Index != 0 || m.Segment != 0 {
		return 0, false
	}
	switch f := x86.Family(m.Base); f {
	case regRSP:
		return f, true
	case regRBP:
		return f, st.regs[f].k == kUnknown
	}
	return 0, false
}

func (st *state) getSlot(base int, off int64) val {
	for _, s := range st.slots {
		if s.used && s.base == base && s.off == off {
			return s.v
		}
	}
	return val{}
}

func (st *state) setSlot(base int, off int64, v val) {
	free := -1
	for i, s := range st.slots {
		if s.used && s.base == base && s.off == off {
			st.slots[i].v = v
			return
		}
		if !s.used && free < 0 {
			free = i
		}
	}
	if free < 0 {
		free = int(uint64(off) % maxSlots) // full: forget one
	}
	st.slots[free] = slot{used: true, base: base, off: off, v: v}
}

// The System V argument registers, in order.
var argRegs = [6]int{7, 6, 2, 1, 8, 9} // rdi rsi rdx rcx r8 r9

// callerSaved are clobbered by a call.
var callerSaved = []int{0, 1, 2, 6, 7, 8, 9, 10, 11}

// Analyze interprets the accessor at addr whose argument commArg (0-based)
// is the communicator, following both sides of branches, and calls into the
// library's own code up to two levels deep, and returns what it hands back
// from the communicator. It never fails: code it cannot decode ends a path.
func Analyze(code Code, addr uint64, commArg int) Facts {
	a := &analyzer{code: code, limit: maxSteps}
	var st state
	for i, r := range argRegs {
		if i == commArg {
			st.regs[r] = val{k: kComm}
		} else {
			st.regs[r] = val{k: kArg, arg: i}
		}
	}
	a.walk(addr, st, 0)
	return a.facts
}

type analyzer struct {
	code  Code
	steps int
	limit int // the step count at which the walk in progress stops
	facts Facts
	// rets collects what the function being walked below the accessor
	// returns in rax
	rets []val
}

type branch struct {
	pc uint64
	st state
}

// walk interprets the function at pc with the registers st.
func (a *analyzer) walk(pc uint64, st state, depth int) {
	// A place is walked at most maxVisits times: enough for the paths
	// that join after decoding a handle in different ways, and a bound
	// on loops. MPICH 4.2.3's PMPI_Comm_rank joins four decodings (builtin
	// and direct, with and without error checks) at its first load
	// through the object: at three the direct table went unseen.
	visited := map[uint64]int{}
	work := []branch{{pc, st}}
	for len(work) > 0 && a.steps < a.limit {
		b := work[len(work)-1]
		work = work[:len(work)-1]
		pc, st := b.pc, b.st
		for a.steps < a.limit && visited[pc] < maxVisits {
			visited[pc]++
			a.steps++
			raw := a.code(pc, maxInstLn)
			if len(raw) == 0 {
				break
			}
			in, err := x86.Decode(raw)
			if err != nil || in.Len == 0 {
				break
			}
			next := pc + uint64(in.Len)
			stop, target, cond := a.step(&st, in, pc, next, depth)
			if cond {
				work = append(work, branch{target, st})
			}
			if stop {
				if target != 0 && !cond {
					pc = target // unconditional jump: go on there
					continue
				}
				break
			}
			pc = next
		}
	}
}

// step interprets one instruction. It returns whether the straight path
// stops, a branch target, and whether that target is conditional (to be
// walked later) rather than the only way on.
func (a *analyzer) step(st *state, in x86asm.Inst, pc, next uint64, depth int) (stop bool, target uint64, cond bool) {
	rel := func() (uint64, bool) { return x86.BranchTarget(in, pc) }
	if x86.Jcc(in.Op) || in.Op == x86asm.JCXZ || in.Op == x86asm.JECXZ || in.Op == x86asm.JRCXZ {
		if t, ok := rel(); ok {
			return false, t, true
		}
		return false, 0, false
	}
	switch in.Op {
	case x86asm.RET:
		v := st.regs[0]
		if depth > 0 {
			if len(a.rets) < maxFacts {
				a.rets = append(a.rets, v)
			}
		} else if v.k == kLoad {
			a.addAccess(&a.facts.Returns, Access{Arg: -1, Chain: v.chain})
		}
		return true, 0, false
	case x86asm.JMP:
		t, ok := rel()
		if !ok {
			return true, 0, false
		}
		return true, t, false
	case x86asm.CALL:
		t, ok := rel()
		ret := a.call(st, t, ok, depth)
		for _, r := range callerSaved {
			st.regs[r] = val{}
		}
		st.regs[0] = ret
		return false, 0, false
	case x86asm.CMP, x86asm.TEST, x86asm.PUSH, x86asm.POP, x86asm.NOP,
		x86asm.BT, x86asm.UCOMISD, x86asm.UCOMISS, x86asm.PREFETCHT0:
		// No register written that matters (a pop restores a
		// callee-saved register: its value is kept for later blocks).
		return false, 0, false
	case x86asm.CDQE, x86asm.CWDE, x86asm.CDQ, x86asm.CQO:
		return false, 0, false
	}
	dst, dstIsReg := in.Args[0].(x86asm.Reg)
	d := -1
	if dstIsReg {
		d = x86.Family(dst)
	}
	switch in.Op {
	case x86asm.MOV, x86asm.MOVSXD, x86asm.MOVSX, x86asm.MOVZX:
		switch src := in.Args[1].(type) {
		case x86asm.Reg:
			if d >= 0 {
				if s := x86.Family(src); s >= 0 {
					st.regs[d] = st.regs[s]
				} else {
					st.regs[d] = val{}
				}
			} else if m, ok := in.Args[0].(x86asm.Mem); ok {
				if base, ok := stackSlot(st, m); ok {
					if f := x86.Family(src); f >= 0 {
						st.setSlot(base, m.Disp, st.regs[f])
					}
				} else {
					a.store(st, m, src)
				}
			}
		case x86asm.Mem:
			if d >= 0 {
				st.regs[d] = a.load(st, src, next)
			}
		case x86asm.Imm:
			if d >= 0 {
				st.regs[d] = val{k: kImm, imm: int64(src)}
			} else if m, ok := in.Args[0].(x86asm.Mem); ok {
				if base, ok := stackSlot(st, m); ok {
					st.setSlot(base, m.Disp, val{k: kImm, imm: int64(src)})
				}
			}
		}
		return false, 0, false
	case x86asm.LEA:
		if d >= 0 {
			if m, ok := in.Args[1].(x86asm.Mem); ok {
				st.regs[d] = a.lea(st, m, next)
			}
		}
		return false, 0, false
	case x86asm.XOR:
		if s, ok := in.Args[1].(x86asm.Reg); ok && d >= 0 && x86.Family(s) == d {
			st.regs[d] = val{k: kImm}
			return false, 0, false
		}
	}
	if d < 0 {
		return false, 0, false // a write to memory or a flag-only op
	}
	// An arithmetic op on a register: a value computed from the
	// communicator stays one, with the step recorded.
	cur := st.regs[d]
	srcComm := false
	for _, arg := range in.Args[1:] {
		if r, ok := arg.(x86asm.Reg); ok {
			if f := x86.Family(r); f >= 0 && st.regs[f].k == kComm {
				if cur.k != kComm {
					cur = st.regs[f]
				}
				srcComm = true
			}
		}
	}
	if cur.k != kComm {
		// e.g. add %rcx,%r13 where %rcx holds a table: handled below
		// when the destination already is the communicator.
		st.regs[d] = val{}
		if srcComm {
			st.regs[d] = cur
		}
		return false, 0, false
	}
	st.regs[d] = val{k: kComm, ops: appendOp(cur.ops, a.op(st, in, next))}
	return false, 0, false
}

// appendOp adds a step to a handle decoding; consecutive multiplications
// (a compiler's shifts and leas for one object size) fold into one.
func appendOp(ops []Op, op Op) []Op {
	if n := len(ops); n > 0 && op.Kind == OpMul && ops[n-1].Kind == OpMul {
		out := append([]Op(nil), ops...)
		out[n-1].Imm *= op.Imm
		return out
	}
	out := append(append([]Op(nil), ops...), op)
	if len(out) > maxOps {
		out = out[len(out)-maxOps:]
	}
	return out
}

// scaled splits a handle decoding into what it did before its final
// multiplication and the factor (1 without one).
func scaled(ops []Op) ([]Op, int64) {
	if n := len(ops); n > 0 && ops[n-1].Kind == OpMul {
		return ops[:n-1], ops[n-1].Imm
	}
	return ops, 1
}

// op describes an arithmetic step on a value computed from the handle.
func (a *analyzer) op(st *state, in x86asm.Inst, next uint64) Op {
	imm := func(i int) (int64, bool) {
		if i < len(in.Args) {
			if v, ok := in.Args[i].(x86asm.Imm); ok {
				return int64(v), true
			}
		}
		return 0, false
	}
	switch in.Op {
	case x86asm.AND:
		if v, ok := imm(1); ok {
			return Op{Kind: OpAnd, Imm: v}
		}
	case x86asm.SHR, x86asm.SAR:
		if v, ok := imm(1); ok {
			return Op{Kind: OpShr, Imm: v}
		}
	case x86asm.SHL:
		if v, ok := imm(1); ok && v >= 0 && v < 32 {
			return Op{Kind: OpMul, Imm: 1 << v}
		}
	case x86asm.IMUL:
		if v, ok := imm(2); ok {
			return Op{Kind: OpMul, Imm: v}
		}
		if m, ok := in.Args[1].(x86asm.Mem); ok {
			if b := a.base(st, m); b.k == kGlobal {
				return Op{Kind: OpMulMem, Addr: b.g, Off: m.Disp}
			}
		}
	case x86asm.ADD:
		switch src := in.Args[1].(type) {
		case x86asm.Mem:
			if src.Base == x86asm.RIP {
				return Op{Kind: OpAddSlot, Addr: uint64(int64(next) + src.Disp)}
			}
			b := a.base(st, src)
			if f := x86.Family(src.Index); b.k == kGlobalLoad && f >= 0 && st.regs[f].k == kComm {
				return Op{Kind: OpAddBlock, Addr: b.g, Off: b.off, Index: st.regs[f].ops}
			}
		case x86asm.Reg:
			if f := x86.Family(src); f >= 0 {
				switch v := st.regs[f]; v.k {
				case kGlobalLoad:
					if v.off == 0 {
						return Op{Kind: OpAddSlot, Addr: v.g}
					}
				case kGlobal:
					return Op{Kind: OpAddGlobal, Addr: v.g}
				}
			}
		}
	}
	return Op{Kind: OpOther}
}

// base returns the value of a memory operand's base register.
func (a *analyzer) base(st *state, m x86asm.Mem) val {
	if f := x86.Family(m.Base); f >= 0 {
		return st.regs[f]
	}
	return val{}
}

// load returns the value a load from m gives.
func (a *analyzer) load(st *state, m x86asm.Mem, next uint64) val {
	if base, ok := stackSlot(st, m); ok {
		return st.getSlot(base, m.Disp)
	}
	if m.Base == x86asm.RIP {
		return val{k: kGlobalLoad, g: uint64(int64(next) + m.Disp)}
	}
	if f := x86.Family(m.Index); f >= 0 && st.regs[f].k == kComm {
		// A table read indexed by the handle: still derived from it.
		return val{k: kComm, ops: st.regs[f].ops}
	}
	if m.Index != 0 {
		return val{}
	}
	b := a.base(st, m)
	switch b.k {
	case kComm:
		a.derefPath(b)
		return val{k: kLoad, chain: []int64{m.Disp}}
	case kLoad:
		if len(b.chain) < maxChain {
			return val{k: kLoad, chain: append(append([]int64(nil), b.chain...), m.Disp)}
		}
	case kGlobal:
		return val{k: kGlobalLoad, g: b.g, off: m.Disp}
	}
	return val{}
}

// derefPath records how the object a communicator value points to was
// found, when the argument was a handle.
func (a *analyzer) derefPath(v val) {
	if len(v.ops) == 0 || len(a.facts.Paths) >= maxFacts {
		return
	}
	for _, p := range a.facts.Paths {
		if samePath(p, v.ops) {
			return
		}
	}
	a.facts.Paths = append(a.facts.Paths, v.ops)
}

func samePath(a, b []Op) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Kind != b[i].Kind || a[i].Imm != b[i].Imm || a[i].Addr != b[i].Addr || a[i].Off != b[i].Off || !samePath(a[i].Index, b[i].Index) {
			return false
		}
	}
	return true
}

// lea returns the value of an address computation.
func (a *analyzer) lea(st *state, m x86asm.Mem, next uint64) val {
	if m.Base == x86asm.RIP {
		return val{k: kGlobal, g: uint64(int64(next) + m.Disp)}
	}
	b := a.base(st, m)
	if m.Index != 0 {
		// lea (%rax,%rax,2): the same index times a constant, the way
		// compilers multiply by an object size.
		i := x86.Family(m.Index)
		if i < 0 || st.regs[i].k != kComm || (b.k != kComm && m.Base != 0) || m.Scale == 0 {
			return val{}
		}
		ip, ifac := scaled(st.regs[i].ops)
		fac := int64(m.Scale) * ifac
		if m.Base != 0 {
			bp, bfac := scaled(b.ops)
			if !samePath(bp, ip) {
				return val{k: kComm, ops: appendOp(ip, Op{Kind: OpOther})}
			}
			fac += bfac
		}
		return val{k: kComm, ops: appendOp(ip, Op{Kind: OpMul, Imm: fac})}
	}
	switch b.k {
	case kComm:
		a.derefPath(b)
		return val{k: kAddr, chain: []int64{m.Disp}}
	case kLoad:
		if len(b.chain) < maxChain {
			return val{k: kAddr, chain: append(append([]int64(nil), b.chain...), m.Disp)}
		}
	case kArg:
		if m.Disp == 0 {
			return b
		}
	}
	return val{}
}

// store records a value from the communicator written through an
// argument pointer.
func (a *analyzer) store(st *state, m x86asm.Mem, src x86asm.Reg) {
	if m.Disp != 0 || m.Index != 0 {
		return
	}
	b := a.base(st, m)
	s := x86.Family(src)
	if b.k != kArg || s < 0 || st.regs[s].k != kLoad {
		return
	}
	a.addAccess(&a.facts.Stores, Access{Arg: b.arg, Chain: st.regs[s].chain})
}

func (a *analyzer) addAccess(to *[]Access, x Access) {
	if len(*to) >= maxFacts {
		return
	}
	for _, y := range *to {
		if y.Arg == x.Arg && sameChain(y.Chain, x.Chain) {
			return
		}
	}
	*to = append(*to, x)
}

func sameChain(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// call records a copy out of the communicator into an argument buffer, or
// follows a call into the library's own code with the arguments it passes.
func (a *analyzer) call(st *state, target uint64, direct bool, depth int) val {
	dst, src, n := st.regs[argRegs[0]], st.regs[argRegs[1]], st.regs[argRegs[2]]
	if dst.k == kArg && (src.k == kAddr || src.k == kLoad) {
		c := Copy{Arg: dst.arg, Chain: src.chain, Ptr: src.k == kLoad}
		if n.k == kImm {
			c.Len = n.imm
		}
		if len(a.facts.Copies) < maxFacts {
			a.facts.Copies = append(a.facts.Copies, c)
		}
		return val{}
	}
	if !direct || depth >= maxDepth || len(a.code(target, 1)) == 0 {
		return val{}
	}
	// Follow only calls that pass something of the communicator.
	passes := false
	for _, r := range argRegs {
		switch st.regs[r].k {
		case kComm, kLoad, kAddr:
			passes = true
		}
	}
	if !passes {
		return val{}
	}
	// The callee sees the argument registers; nothing else is known.
	var in state
	for _, r := range argRegs {
		in.regs[r] = st.regs[r]
	}
	saved, limit := a.rets, a.limit
	a.rets = nil
	a.limit = min(limit, a.steps+maxCallSteps)
	a.walk(target, in, depth+1)
	rets := a.rets
	a.rets, a.limit = saved, limit
	// A callee that returns one field of the communicator on every path
	// that returns one (ompi_comm_rank out of line) hands it back.
	var ret val
	for _, r := range rets {
		if r.k != kLoad {
			continue
		}
		if ret.k == kLoad && !sameChain(ret.chain, r.chain) {
			return val{}
		}
		ret = r
	}
	return ret
}
