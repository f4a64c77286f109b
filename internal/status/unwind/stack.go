package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// Regs are the registers unwinding starts from (and the ones it tracks).
//
// A BP of 0 is taken as unknown, as when the registers come from
// /proc/PID/task/TID/syscall, which shows only the stack and instruction
// pointers: a frame whose CFA is computed from rbp before a caller's saved
// rbp has been restored then ends the unwinding with an error.
type Regs struct {
	IP, SP, BP uint64
	// Live holds, when HasLive, the other callee-saved registers by DWARF
	// number (3 rbx, 12-15 r12-r15) as the thread left them: the values
	// of the innermost frames that no callee has saved on the stack yet.
	Live    [numRegs]uint64
	HasLive bool
}

// liveValue returns the live value of callee-saved register reg.
func (r Regs) liveValue(reg int) (uint64, bool) {
	switch {
	case reg == 6 && r.BP != 0:
		return r.BP, true
	case reg >= 0 && reg < numRegs && reg != 6 && r.HasLive:
		return r.Live[reg], true
	}
	return 0, false
}

// Module maps a runtime address range of a process to the Table of the file
// mapped there: vaddr = addr - Bias.
type Module struct {
	// Table is the call-frame information of the mapped file.
	Table *Table
	// Bias is the difference between the runtime addresses of the
	// mapping and the file's virtual addresses (the load address of a
	// shared library or position-independent executable; 0 for a
	// fixed-address executable).
	Bias uint64
}

// Modules finds the module containing a runtime address; ok is false for
// addresses in no known file (anonymous memory, JIT code, unknown).
type Modules func(addr uint64) (m Module, ok bool)

// frame holds the registers of one frame while unwinding.
type frame struct {
	ip, sp, bp uint64
	bpOK       bool // bp is known (its rule was not undefined)
}

// value returns the value of DWARF register reg in the frame.
func (f *frame) value(reg uint64) (uint64, error) {
	switch reg {
	case regRSP:
		return f.sp, nil
	case regRA:
		return f.ip, nil
	case regRBP:
		if f.bpOK {
			return f.bp, nil
		}
		return 0, errors.New("rbp is not known in this frame")
	}
	return 0, fmt.Errorf("register %s is not tracked", regName(reg))
}

// Stack unwinds from regs and returns the program counters of the frames, innermost
// first: pcs[0] is regs.IP, the others are return addresses. It stops at the
// outermost frame (return address 0, or an FDE that marks the end such as _start),
// after max frames, or when it cannot go on; in the last case it returns the frames
// found so far and an error saying why (e.g. "unwind: no CFI for 0x7f12... (frame 3)",
// "unwind: frame 2 at 0x7f12...: return address: read stack at 0x7ffd...: ...").
// Callers use the partial result.
//
// The rules for frame 0 are those in force at regs.IP; for a caller they
// are those at its return address minus one, since a call may be the last
// instruction of a function, except above a signal frame (an FDE whose CIE
// has augmentation "S"), where the saved IP is the interrupted instruction
// itself. Unwinding tracks rip, rsp and rbp: rsp is the CFA unless a rule
// restores it, rbp keeps its value unless a rule restores it, and any
// other register used by a rule is an error for that frame. Each caller's
// CFA must lie above the callee's SP, so a corrupt stack cannot make
// Stack loop; max bounds the work in any case. Stack returns nil for
// max <= 0.
func Stack(regs Regs, mods Modules, mem procfs.Memory, max int) (pcs []uint64, err error) {
	fs, err := Walk(regs, mods, mem, max)
	if fs == nil {
		return nil, err
	}
	pcs = make([]uint64, len(fs))
	for i, f := range fs {
		pcs[i] = f.PC
	}
	return pcs, err
}

// Frame is one frame Walk found.
type Frame struct {
	// PC is the frame's program counter (a return address but for the
	// innermost frame).
	PC uint64
	// SP is the frame's stack pointer: its callee's CFA (regs.SP for the
	// innermost frame).
	SP uint64
	// Saved holds, by DWARF register number (0..16), the stack address
	// where this frame saved its caller's value of the register (its CFI
	// has an offset rule for it at PC), 0 where it saved none.
	Saved [numRegs]uint64
}

// Walk is Stack that also returns each frame's stack pointer and where it
// saved its caller's registers, for SavedAt.
func Walk(regs Regs, mods Modules, mem procfs.Memory, max int) (fs []Frame, err error) {
	if max <= 0 {
		return nil, nil
	}
	if mods == nil || mem == nil {
		return nil, errors.New("unwind: nil Modules or procfs.Memory")
	}
	fs = make([]Frame, 0, min(max, 64))
	cur := frame{ip: regs.IP, sp: regs.SP, bp: regs.BP, bpOK: regs.BP != 0}
	fs = append(fs, Frame{PC: cur.ip, SP: cur.sp})
	signal := false
	for n := 0; len(fs) < max; n++ {
		pc := cur.ip
		if n > 0 && !signal {
			pc--
		}
		m, ok := mods(pc)
		if !ok || m.Table == nil {
			return fs, fmt.Errorf("unwind: no CFI for %#x (frame %d): address in no known module", cur.ip, n)
		}
		r, f, err := m.Table.rowAt(pc - m.Bias)
		if err != nil {
			if errors.Is(err, errNoFDE) {
				if n == 0 {
					// A small leaf function built without CFI (a
					// timer reading the TSC): take the caller from
					// the stack pointer or the frame pointer.
					if caller, ok := leafCaller(cur, mods, mem); ok {
						fs = append(fs, Frame{PC: caller.ip, SP: caller.sp})
						cur = caller
						continue
					}
				}
				return fs, fmt.Errorf("unwind: no CFI for %#x (frame %d)", cur.ip, n)
			}
			return fs, fmt.Errorf("unwind: bad CFI for %#x (frame %d): %w", cur.ip, n, err)
		}
		caller, cfa, end, err := step(&cur, r, f.cie.ra, mem, m.Bias)
		if err != nil {
			return fs, fmt.Errorf("unwind: frame %d at %#x: %w", n, cur.ip, err)
		}
		for reg, rl := range r.regs {
			if rl.kind == ruleOffset && reg != regRA {
				fs[len(fs)-1].Saved[reg] = cfa + uint64(rl.off)
			}
		}
		if end || caller.ip == 0 {
			return fs, nil
		}
		fs = append(fs, Frame{PC: caller.ip, SP: caller.sp})
		signal = f.cie.signal
		cur = caller
	}
	return fs, nil
}

// SavedAt returns the stack address holding frame k's value of a
// callee-saved register: where the nearest of its callees that saved the
// register put it. ok is false when none of them saved it (the value is
// still in the register, which a sample from outside does not show).
func SavedAt(fs []Frame, k int, reg int) (addr uint64, ok bool) {
	if reg < 0 || reg >= numRegs || k > len(fs) {
		return 0, false
	}
	for j := k - 1; j >= 0; j-- {
		if a := fs[j].Saved[reg]; a != 0 {
			return a, true
		}
	}
	return 0, false
}

// ValueAt returns frame k's value of callee-saved register reg: where
// the nearest of its callees that saved the register put it or, when
// none did, the live register (no frame inside k has changed it).
func ValueAt(fs []Frame, k, reg int, regs Regs, mem procfs.Memory) (uint64, bool) {
	if k < 0 || k >= len(fs) || reg < 0 || reg >= numRegs {
		return 0, false
	}
	if addr, ok := SavedAt(fs, k, reg); ok {
		var b [8]byte
		if mem(addr, b[:]) != nil {
			return 0, false
		}
		return binary.LittleEndian.Uint64(b[:]), true
	}
	return regs.liveValue(reg)
}

// LiveIn returns the live value of callee-saved register reg when one
// of frames 0..k set it: the nearest frame that saved its caller's value
// of reg is k or inside it. Otherwise the live value is an outer frame's
// (the application's, when k is the MPI call's outermost frame).
func LiveIn(fs []Frame, k, reg int, regs Regs) (uint64, bool) {
	for j := 0; j <= k && j < len(fs); j++ {
		if reg >= 0 && reg < numRegs && fs[j].Saved[reg] != 0 {
			return regs.liveValue(reg)
		}
	}
	return 0, false
}

// leafCaller finds the caller of a frame-0 function without CFI. A leaf
// that pushed nothing has its return address at sp; one that set up a
// frame pointer has it at bp+8, the caller's bp at bp and its sp at
// bp+16. A candidate is taken only if the return address lies in code
// whose CFI covers it, so a stale word is not mistaken for a caller.
func leafCaller(cur frame, mods Modules, mem procfs.Memory) (frame, bool) {
	covered := func(ra uint64) bool {
		if ra == 0 {
			return false
		}
		m, ok := mods(ra - 1)
		if !ok || m.Table == nil {
			return false
		}
		_, _, err := m.Table.rowAt(ra - 1 - m.Bias)
		return err == nil
	}
	if ra, err := read64(mem, cur.sp); err == nil && covered(ra) {
		return frame{ip: ra, sp: cur.sp + 8, bp: cur.bp, bpOK: cur.bpOK}, true
	}
	if cur.bpOK && cur.bp > cur.sp {
		ra, err1 := read64(mem, cur.bp+8)
		bp, err2 := read64(mem, cur.bp)
		if err1 == nil && err2 == nil && covered(ra) {
			return frame{ip: ra, sp: cur.bp + 16, bp: bp, bpOK: true}, true
		}
	}
	return frame{}, false
}

// step computes the caller's registers and the frame's CFA from the
// callee's cur and the row in force. end reports that the row marks the outermost frame.
func step(cur *frame, r *row, raCol uint64, mem procfs.Memory, bias uint64) (caller frame, cfa uint64, end bool, err error) {
	env := exprEnv{regs: cur, mem: mem, bias: bias}
	switch {
	case !r.cfa.set:
		return frame{}, 0, false, errors.New("no cfa rule")
	case r.cfa.expr != nil:
		if cfa, err = eval(r.cfa.expr, &env); err != nil {
			return frame{}, 0, false, fmt.Errorf("cfa expression: %w", err)
		}
	default:
		base, err := cur.value(r.cfa.reg)
		if err != nil {
			return frame{}, 0, false, fmt.Errorf("cfa: %w", err)
		}
		cfa = base + uint64(r.cfa.off)
	}
	if cfa <= cur.sp {
		return frame{}, 0, false, fmt.Errorf("cfa %#x is not above sp %#x", cfa, cur.sp)
	}

	if raCol >= numRegs {
		return frame{}, 0, false, fmt.Errorf("return address column %d not supported", raCol)
	}
	ra, ok, err := recover1(cur, r.regs[raCol], raCol, cfa, &env)
	if err != nil {
		return frame{}, 0, false, fmt.Errorf("return address: %w", err)
	}
	if !ok {
		return frame{}, cfa, true, nil // DW_CFA_undefined: the outermost frame
	}

	caller = frame{ip: ra, sp: cfa, bp: cur.bp, bpOK: cur.bpOK}
	if rl := r.regs[regRSP]; rl.kind != ruleUnset && rl.kind != ruleSame {
		sp, ok, err := recover1(cur, rl, regRSP, cfa, &env)
		if err != nil {
			return frame{}, 0, false, fmt.Errorf("rsp: %w", err)
		}
		if !ok {
			return frame{}, 0, false, errors.New("rsp is undefined in the caller")
		}
		caller.sp = sp
	}
	switch rl := r.regs[regRBP]; rl.kind {
	case ruleUnset, ruleSame:
	default:
		bp, ok, err := recover1(cur, rl, regRBP, cfa, &env)
		if err != nil {
			// A caller whose CFA does not depend on rbp can still be
			// unwound: forget rbp rather than fail.
			ok = false
		}
		caller.bp, caller.bpOK = bp, ok
	}
	return caller, cfa, false, nil
}

// recover1 recovers the caller's value of register reg by rule rl. ok is
// false when the rule is DW_CFA_undefined.
func recover1(cur *frame, rl rule, reg, cfa uint64, env *exprEnv) (v uint64, ok bool, err error) {
	switch rl.kind {
	case ruleUnset:
		if reg == regRA {
			return 0, false, errors.New("no rule")
		}
		fallthrough
	case ruleSame:
		v, err = cur.value(reg)
		return v, err == nil, err
	case ruleUndefined:
		return 0, false, nil
	case ruleOffset:
		v, err = read64(env.mem, cfa+uint64(rl.off))
		return v, err == nil, err
	case ruleValOffset:
		return cfa + uint64(rl.off), true, nil
	case ruleRegister:
		v, err = cur.value(rl.reg)
		return v, err == nil, err
	case ruleExpr:
		addr, err := eval(rl.expr, env, cfa)
		if err != nil {
			return 0, false, err
		}
		v, err = read64(env.mem, addr)
		return v, err == nil, err
	case ruleValExpr:
		v, err = eval(rl.expr, env, cfa)
		return v, err == nil, err
	}
	return 0, false, fmt.Errorf("unknown rule %d", rl.kind)
}

func read64(mem procfs.Memory, addr uint64) (uint64, error) {
	var b [8]byte
	if err := mem(addr, b[:]); err != nil {
		return 0, fmt.Errorf("read stack at %#x: %w", addr, err)
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}
