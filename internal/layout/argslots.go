package layout

import (
	"errors"
	"fmt"
	"maps"
	"math/bits"

	"golang.org/x/arch/x86/x86asm"

	"github.com/mpiprobe/mpiprobe/internal/x86"
)

// Home is where a function keeps one of its integer arguments at a return
// address: a callee-saved register (Reg, its DWARF number) or, with
// Reg < 0, the 32-bit word Off bytes above the stack pointer it has there.
type Home struct {
	Reg int
	Off uint32
	// Maybe says the place holds the argument on some paths to the return
	// address only: on the others it holds a value that is no argument
	// (a tail the compiler shares between two loops, an error path).
	Maybe bool
	// Shared says that on the other paths the place holds argument Other
	// (Maybe is set too): a reader must tell the two apart by value.
	Shared bool
	Other  int
}

// ArgHomes finds where the function at entry (size bytes of code) holds
// its arguments args (0-based, integer arguments in registers) when a
// call it makes returns to at: an MPI function blocked in a wait keeps
// the destination or source rank that its request does not hold. It
// follows every path from the entry (a must-analysis: a location holds
// an argument at at only if it does on every path there), moving the
// arguments through register copies, pushes and pops, and stores to and
// loads from the stack frame (rsp- or frame-pointer-based); a call
// clobbers the caller-saved registers. A stack word is preferred to a
// register. The second result reports, per argument, whether a home was
// found; the error says why the code could not be followed to at.
//
// An argument no place holds on every path gets, second, a place that
// holds it on some paths and no other argument on any (Home.Maybe): a
// union of the paths' values in place of their intersection. Failing
// that, a place that holds it on some paths and one other argument on the
// others (Home.Shared).
//
// It is written here because no Go library does data flow over x86
// machine code; x86asm decodes the instructions.
func ArgHomes(code Code, entry uint64, size int, at uint64, args ...int) ([]Home, []bool, error) {
	if at <= entry || at >= entry+uint64(size) {
		return nil, nil, fmt.Errorf("return address %#x is outside the function at %#x (%d bytes)", at, entry, size)
	}
	homes, found := make([]Home, len(args)), make([]bool, len(args))
	for _, may := range []bool{false, true} {
		a := argFlow{code: code, lo: entry, hi: entry + uint64(size), states: map[uint64]*flowState{}, may: may}
		if err := a.run(entry, entryState()); err != nil {
			return nil, nil, err
		}
		end, ok := a.states[at]
		if !ok {
			return nil, nil, fmt.Errorf("no path from the entry %#x reaches %#x", entry, at)
		}
		missing := false
		for i, n := range args {
			if !found[i] {
				homes[i], found[i] = end.home(n)
				homes[i].Maybe = found[i] && may
				missing = missing || !found[i]
			}
		}
		if !missing {
			break
		}
	}
	return homes, found, nil
}

// entryState is what a function holds at its entry: its register
// arguments, and the stack pointer at offset 0 of its frame.
func entryState() *flowState {
	st := &flowState{slots: map[int64]flowVal{}}
	for i, r := range argRegs {
		st.regs[r] = flowVal{k: fArg, n: int64(i)}
	}
	st.regs[regRSP] = flowVal{k: fStack}
	return st
}

// maxFlowSteps bounds the instructions the analysis interprets: it reads
// untrusted code.
const maxFlowSteps = 200000

// fKind is what an analysed location holds.
type fKind uint8

const (
	fUnknown  fKind = iota
	fArg            // argument n (its low 32 bits at least)
	fStack          // the address entry rsp + n
	fMaybe          // argument n on some paths, no argument on the others (the may-analysis)
	fConflict       // different arguments on different paths, n their bit mask (the may-analysis)
)

type flowVal struct {
	k fKind
	n int64
}

// flowState holds what the 16 registers and the frame's 32-bit stack
// words (by offset from the entry's rsp) hold before an instruction. A
// word absent from slots has not been written on any path here (unless
// wiped): a path on which the function never wrote a word does not
// count against what the others wrote there, since code after the wait
// that reads the word would read garbage on it. Such a path is one the
// decoding cannot rule out but the program never takes, as the
// fall-through after a call to a function that does not return
// (MPIR_Assert_fail).
type flowState struct {
	regs  [16]flowVal
	xmm   [16]xmmReg // see xmmflow.go
	slots map[int64]flowVal
	wiped bool // a string instruction may have written anywhere in the frame
}

func (s *flowState) clone() *flowState {
	c := *s
	c.slots = maps.Clone(s.slots)
	return &c
}

// meet merges o into s, and reports whether s changed: what both agree
// on stays; anything else is unknown, or, in the may-analysis, an
// argument that one side holds becomes a maybe of it.
func (s *flowState) meet(o *flowState, may bool) bool {
	changed := false
	merge := func(v, w flowVal, reg int) flowVal {
		if v == w {
			return v
		}
		if !may || reg == regRSP {
			return flowVal{}
		}
		arg := func(x flowVal) (int64, bool) { return x.n, x.k == fArg || x.k == fMaybe }
		bits := func(x flowVal) int64 {
			switch x.k {
			case fArg, fMaybe:
				return 1 << x.n
			case fConflict:
				return x.n
			}
			return 0
		}
		vn, va := arg(v)
		wn, wa := arg(w)
		switch {
		case v.k == fConflict || w.k == fConflict || va && wa && vn != wn:
			return flowVal{k: fConflict, n: bits(v) | bits(w)}
		case va:
			return flowVal{k: fMaybe, n: vn}
		case wa:
			return flowVal{k: fMaybe, n: wn}
		}
		return flowVal{}
	}
	for i := range s.regs {
		if m := merge(s.regs[i], o.regs[i], i); m != s.regs[i] {
			s.regs[i], changed = m, true
		}
	}
	for i := range s.xmm {
		for j, l := range s.xmm[i] {
			if l != o.xmm[i][j] && l != (xmmLane{}) {
				s.xmm[i][j], changed = xmmLane{}, true
			}
		}
	}
	for off, v := range s.slots {
		w, ok := o.slots[off]
		switch {
		case ok:
		case o.wiped:
			w = flowVal{}
		default:
			continue // not written on o's paths
		}
		if m := merge(v, w, -1); m != v {
			s.slots[off], changed = m, true
		}
	}
	for off, w := range o.slots {
		if _, ok := s.slots[off]; !ok {
			if s.wiped {
				w = merge(flowVal{}, w, -1)
			}
			s.slots[off], changed = w, true
		}
	}
	if o.wiped && !s.wiped {
		s.wiped, changed = true, true
	}
	return changed
}

// dwarfReg numbers the callee-saved registers as DWARF does.
var dwarfReg = map[int]int{3: 3, 5: 6, 12: 12, 13: 13, 14: 14, 15: 15} // rbx rbp r12-r15

// home finds argument n in s: a stack word above rsp, else a callee-saved
// register.
func (s *flowState) home(n int) (Home, bool) {
	// In the may-analysis a maybe is the best there is, then a place
	// shared with one other argument.
	want, maybe := flowVal{k: fArg, n: int64(n)}, flowVal{k: fMaybe, n: int64(n)}
	if h, _, ok := s.find(func(v flowVal) bool { return v == want || v == maybe }); ok {
		return h, true
	}
	h, v, ok := s.find(func(v flowVal) bool {
		return v.k == fConflict && v.n&(1<<n) != 0 && bits.OnesCount64(uint64(v.n)) == 2
	})
	if !ok {
		return Home{}, false
	}
	h.Shared, h.Other = true, bits.TrailingZeros64(uint64(v.n&^(1<<n)))
	return h, true
}

// find returns the place whose value satisfies holds, and the value: the
// lowest stack word above the stack pointer, else a callee-saved
// register.
func (s *flowState) find(holds func(flowVal) bool) (Home, flowVal, bool) {
	if sp := s.regs[regRSP]; sp.k == fStack {
		best, ok := int64(0), false
		for off, v := range s.slots {
			if holds(v) && off >= sp.n && (!ok || off < best) {
				best, ok = off, true
			}
		}
		if ok {
			return Home{Reg: -1, Off: uint32(best - sp.n)}, s.slots[best], true
		}
	}
	for _, r := range []int{3, 5, 12, 13, 14, 15} {
		if holds(s.regs[r]) {
			return Home{Reg: dwarfReg[r]}, s.regs[r], true
		}
	}
	return Home{}, flowVal{}, false
}

type argFlow struct {
	code   Code
	lo, hi uint64
	states map[uint64]*flowState
	may    bool // the may-analysis: meet is a union
}

// run propagates the entry state over the function's paths to a fixed
// point.
func (a *argFlow) run(entry uint64, st *flowState) error {
	a.states[entry] = st
	work := []uint64{entry}
	for steps := 0; len(work) > 0; steps++ {
		if steps >= maxFlowSteps {
			return errors.New("the function's paths did not settle within the step limit")
		}
		pc := work[len(work)-1]
		work = work[:len(work)-1]
		b := a.code(pc, maxInstLn)
		if len(b) == 0 {
			continue
		}
		in, err := x86.Decode(b)
		if err != nil {
			continue // undecodable: the path ends
		}
		out := a.states[pc].clone()
		for _, succ := range transfer(out, in, pc) {
			if succ < a.lo || succ >= a.hi {
				continue // a tail call or a jump to a .cold part
			}
			if old, ok := a.states[succ]; !ok {
				a.states[succ] = out.clone()
				work = append(work, succ)
			} else if old.meet(out, a.may) {
				work = append(work, succ)
			}
		}
	}
	return nil
}

// transfer applies in, decoded at pc, to st and returns its successors.
func transfer(st *flowState, in x86asm.Inst, pc uint64) []uint64 {
	next := pc + uint64(in.Len)
	if x86.Jcc(in.Op) {
		return condJump(in, pc)
	}
	switch in.Op {
	case x86asm.RET, x86asm.UD2, x86asm.HLT, x86asm.INT:
		return nil
	case x86asm.JMP:
		if t, ok := x86.BranchTarget(in, pc); ok {
			return []uint64{t}
		}
		return nil // indirect: a switch or a tail call, not followed
	case x86asm.JCXZ, x86asm.JECXZ, x86asm.JRCXZ, x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE:
		return condJump(in, pc)
	case x86asm.CALL:
		for _, r := range callerSaved {
			st.regs[r] = flowVal{}
		}
		st.xmm = [16]xmmReg{} // all caller-saved
		return []uint64{next}
	}
	step(st, in)
	return []uint64{next}
}

// condJump returns the successors of a conditional jump: the next
// instruction and, for a relative one, its target.
func condJump(in x86asm.Inst, pc uint64) []uint64 {
	next := pc + uint64(in.Len)
	if t, ok := x86.BranchTarget(in, pc); ok {
		return []uint64{next, t}
	}
	return []uint64{next}
}

// step applies a non-branching instruction.
func step(st *flowState, in x86asm.Inst) {
	if st.stepXMM(in) {
		return
	}
	switch in.Op {
	case x86asm.PUSH:
		v := flowVal{}
		if r, ok := in.Args[0].(x86asm.Reg); ok && x86.Family(r) >= 0 {
			v = st.regs[x86.Family(r)]
		}
		sp := st.regs[regRSP]
		if sp.k != fStack {
			return
		}
		sp.n -= 8
		st.regs[regRSP] = sp
		st.store(sp.n, 8, v)
		return
	case x86asm.POP:
		sp := st.regs[regRSP]
		v := flowVal{}
		if sp.k == fStack {
			v = st.slots[sp.n]
			st.regs[regRSP] = flowVal{k: fStack, n: sp.n + 8}
		}
		if r, ok := in.Args[0].(x86asm.Reg); ok {
			st.setReg(r, v)
		} else if m, ok := in.Args[0].(x86asm.Mem); ok {
			st.storeMem(m, in.MemBytes, flowVal{})
		}
		return
	case x86asm.LEAVE:
		// mov rbp, rsp; pop rbp
		bp := st.regs[regRBP]
		st.regs[regRSP], st.regs[regRBP] = flowVal{}, flowVal{}
		if bp.k == fStack {
			st.regs[regRBP] = st.slots[bp.n]
			st.regs[regRSP] = flowVal{k: fStack, n: bp.n + 8}
		}
		return
	case x86asm.MOV, x86asm.MOVSXD:
		v := st.operand(in.Args[1], in.MemBytes)
		st.write(in.Args[0], in.MemBytes, v)
		return
	case x86asm.LEA:
		v := flowVal{}
		if m, ok := in.Args[1].(x86asm.Mem); ok {
			if base, ok := st.frameAddr(m); ok {
				v = flowVal{k: fStack, n: base}
			}
		}
		st.write(in.Args[0], 0, v)
		return
	case x86asm.ADD, x86asm.SUB:
		if r, ok := in.Args[0].(x86asm.Reg); ok && st.regs[x86.Family(r)].k == fStack && x86.Is64(r) {
			if imm, ok := in.Args[1].(x86asm.Imm); ok {
				v := st.regs[x86.Family(r)]
				if in.Op == x86asm.ADD {
					v.n += int64(imm)
				} else {
					v.n -= int64(imm)
				}
				st.regs[x86.Family(r)] = v
				return
			}
		}
	case x86asm.CMP, x86asm.TEST, x86asm.NOP, x86asm.BT, x86asm.UCOMISD, x86asm.UCOMISS,
		x86asm.COMISD, x86asm.COMISS, x86asm.PREFETCHT0, x86asm.PREFETCHT1, x86asm.PREFETCHT2,
		x86asm.PREFETCHNTA, x86asm.LFENCE, x86asm.MFENCE, x86asm.SFENCE, x86asm.PAUSE:
		return // they write no register or memory operand
	case x86asm.CDQ, x86asm.CQO, x86asm.CWD:
		st.regs[2] = flowVal{} // rdx
		return
	case x86asm.CPUID, x86asm.RDTSC, x86asm.RDTSCP, x86asm.SYSCALL:
		for _, r := range []int{0, 1, 2, 3, 11} {
			st.regs[r] = flowVal{}
		}
		return
	}
	// Anything else: its implicit registers and its destination are
	// unknown afterwards.
	switch in.Op {
	case x86asm.MUL, x86asm.DIV, x86asm.IDIV, x86asm.IMUL:
		st.regs[0], st.regs[2] = flowVal{}, flowVal{}
	case x86asm.STOSB, x86asm.STOSW, x86asm.STOSD, x86asm.STOSQ, x86asm.MOVSB, x86asm.MOVSW, x86asm.MOVSD, x86asm.MOVSQ,
		x86asm.LODSB, x86asm.LODSW, x86asm.LODSD, x86asm.LODSQ, x86asm.SCASB, x86asm.SCASW, x86asm.SCASD, x86asm.SCASQ,
		x86asm.CMPSB, x86asm.CMPSW, x86asm.CMPSD, x86asm.CMPSQ:
		// String operations move rdi, rsi and rcx and may write anywhere
		// in the frame.
		for _, r := range []int{0, 1, 6, 7} {
			st.regs[r] = flowVal{}
		}
		for o := range st.slots {
			st.slots[o] = flowVal{}
		}
		st.wiped = true
		return
	case x86asm.XCHG, x86asm.XADD, x86asm.CMPXCHG:
		st.regs[0] = flowVal{}
		st.write(in.Args[1], in.MemBytes, flowVal{})
	}
	st.write(in.Args[0], in.MemBytes, flowVal{})
}

// operand is what an instruction's source holds: a register of 32 or 64
// bits, or a 32- or 64-bit word of the frame.
func (st *flowState) operand(arg x86asm.Arg, memBytes int) flowVal {
	switch x := arg.(type) {
	case x86asm.Reg:
		if x86.Wide(x) {
			return st.regs[x86.Family(x)]
		}
	case x86asm.Mem:
		if off, ok := st.frameAddr(x); ok && memBytes >= 4 {
			return st.slots[off]
		}
	}
	return flowVal{}
}

// write sets an instruction's destination: a register (an 8- or 16-bit
// write keeps the other bits, which makes the whole register unknown) or
// memory (only frame words are followed).
func (st *flowState) write(arg x86asm.Arg, memBytes int, v flowVal) {
	switch x := arg.(type) {
	case x86asm.Reg:
		if !x86.Wide(x) {
			v = flowVal{}
		}
		st.setReg(x, v)
	case x86asm.Mem:
		st.storeMem(x, memBytes, v)
	}
}

func (st *flowState) setReg(r x86asm.Reg, v flowVal) {
	if f := x86.Family(r); f >= 0 {
		if !x86.Is64(r) && v.k == fStack {
			v = flowVal{} // a truncated address
		}
		st.regs[f] = v
	}
}

func (st *flowState) storeMem(m x86asm.Mem, n int, v flowVal) {
	off, ok := st.frameAddr(m)
	if !ok {
		return // not the frame: not followed
	}
	if n < 4 {
		v = flowVal{}
	}
	st.store(off, max(n, 1), v)
}

// store writes n bytes at frame offset off: the words it overlaps hold
// something unknown, and the word at off holds v.
func (st *flowState) store(off int64, n int, v flowVal) {
	for o := range st.slots {
		if o < off+int64(n) && off < o+4 {
			st.slots[o] = flowVal{}
		}
	}
	st.slots[off] = v
}

// frameAddr returns the frame offset a memory operand addresses: its base
// register holds a frame address and it has no index.
func (st *flowState) frameAddr(m x86asm.Mem) (int64, bool) {
	if m.Index != 0 || m.Segment != 0 {
		return 0, false
	}
	f := x86.Family(m.Base)
	if f < 0 || !x86.Is64(m.Base) || st.regs[f].k != fStack {
		return 0, false
	}
	return st.regs[f].n + m.Disp, true
}
