package unwind

import (
	"errors"
	"fmt"
	"strings"
)

// DWARF register numbers of x86-64 that unwinding uses.
const (
	regRBP = 6
	regRSP = 7
	regRA  = 16 // the return address column (rip)

	numRegs = 17 // rules are kept for registers 0..16
)

var regNames = [numRegs]string{
	"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "ra",
}

func regName(n uint64) string {
	if n < numRegs {
		return regNames[n]
	}
	return fmt.Sprintf("r%d", n)
}

// ruleKind says how a register of the caller is recovered.
type ruleKind uint8

const (
	ruleUnset     ruleKind = iota // no instruction mentioned the register
	ruleUndefined                 // not recoverable (for the return address: outermost frame)
	ruleSame                      // unchanged from the callee
	ruleOffset                    // saved at CFA+off
	ruleValOffset                 // is CFA+off
	ruleRegister                  // is in register reg of the callee
	ruleExpr                      // saved at the address expr computes
	ruleValExpr                   // is the value expr computes
)

type rule struct {
	kind ruleKind
	off  int64
	reg  uint64
	expr []byte
}

// cfaRule defines the Canonical Frame Address: reg+off, or expr when
// expr is not nil.
type cfaRule struct {
	set  bool
	reg  uint64
	off  int64
	expr []byte
}

// row is one row of the call frame table: the rules in force at an
// address.
type row struct {
	cfa  cfaRule
	regs [numRegs]rule
}

// String renders a row like readelf -wF does: the CFA, then the rules of
// the registers that have one.
func (r *row) String() string {
	var b strings.Builder
	b.WriteString("cfa=")
	b.WriteString(r.cfa.String())
	for i, rl := range r.regs {
		if rl.kind != ruleUnset {
			fmt.Fprintf(&b, " %s=%s", regNames[i], rl.String())
		}
	}
	return b.String()
}

func (c cfaRule) String() string {
	switch {
	case !c.set:
		return "undef"
	case c.expr != nil:
		return "exp"
	}
	return fmt.Sprintf("%s%+d", regName(c.reg), c.off)
}

func (rl rule) String() string {
	switch rl.kind {
	case ruleUndefined, ruleUnset:
		return "u"
	case ruleSame:
		return "s"
	case ruleOffset:
		return fmt.Sprintf("c%+d", rl.off)
	case ruleValOffset:
		return fmt.Sprintf("v%+d", rl.off)
	case ruleRegister:
		return regName(rl.reg)
	case ruleExpr:
		return "exp"
	case ruleValExpr:
		return "vexp"
	}
	return "?"
}

// CFA describes the rule that computes the Canonical Frame Address (the
// value of rsp before the call instruction that entered the function) at
// the virtual address pc, for debugging and tests. It returns the rule as
// readelf -wF prints it, "rsp+8" or "rbp+16", "exp" for a DWARF expression
// (followed by the expression's operations in parentheses), or an error if
// no FDE covers pc or its instructions are malformed.
func (t *Table) CFA(pc uint64) (string, error) {
	r, _, err := t.rowAt(pc)
	if err != nil {
		return "", fmt.Errorf("unwind: cfa at %#x: %w", pc, err)
	}
	if r.cfa.expr != nil {
		return "exp(" + disasm(r.cfa.expr) + ")", nil
	}
	return r.cfa.String(), nil
}

// rowAt finds the FDE covering the virtual address pc and runs its CIE's
// and its own instructions up to pc.
func (t *Table) rowAt(pc uint64) (*row, *fde, error) {
	f, err := t.find(pc)
	if err != nil {
		return nil, nil, err
	}
	r, err := t.run(f, pc)
	if err != nil {
		return nil, nil, err
	}
	return r, f, nil
}

// run executes the call frame instructions of f's CIE and then of f, and
// returns the row in force at pc.
func (t *Table) run(f *fde, pc uint64) (*row, error) {
	m := machine{t: t, f: f, pc: pc, loc: f.start}
	var init row
	if err := m.exec(&init, f.cie.insns, f.cie.insnOff, nil); err != nil {
		return nil, fmt.Errorf("cie at %#x: %w", f.cie.off, err)
	}
	m.loc = f.start
	r := init
	if err := m.exec(&r, f.insns, f.insnOff, &init); err != nil {
		return nil, fmt.Errorf("fde at %#x: %w", f.off, err)
	}
	return &r, nil
}

// machine is the state of the call frame instruction interpreter.
type machine struct {
	t     *Table
	f     *fde
	pc    uint64 // the address whose row is wanted
	loc   uint64 // the address the current row starts at
	steps int
	stack []row // DW_CFA_remember_state
}

// errStop ends the instructions once the current row starts past pc.
var errStop = errors.New("stop")

// advance moves loc by delta, or returns errStop if that passes pc.
func (m *machine) advance(delta uint64) error {
	n := m.loc + delta
	if n < m.loc || n > m.pc {
		return errStop
	}
	m.loc = n
	return nil
}

// exec runs the instructions insns (found at offset insnOff of .eh_frame)
// on r. init is the row after the CIE's instructions, which
// DW_CFA_restore returns to; it is nil while running the CIE's.
func (m *machine) exec(r *row, insns []byte, insnOff uint64, init *row) error {
	c := m.f.cie
	in := reader{b: m.t.eh[:insnOff+uint64(len(insns))], off: int(insnOff)}
	set := func(reg uint64, rl rule) {
		if reg < numRegs {
			r.regs[reg] = rl
		}
	}
	for !in.done() {
		if m.steps++; m.steps > maxInsns {
			return errors.New("too many call frame instructions")
		}
		at := in.off
		op := in.u8()
		switch op & 0xc0 {
		case 0x40: // DW_CFA_advance_loc
			if m.advance(uint64(op&0x3f)*c.caf) != nil {
				return nil
			}
			continue
		case 0x80: // DW_CFA_offset
			set(uint64(op&0x3f), rule{kind: ruleOffset, off: int64(in.uleb()) * c.daf})
			continue
		case 0xc0: // DW_CFA_restore
			m.restore(r, init, uint64(op&0x3f))
			continue
		}
		switch op {
		case 0x00: // DW_CFA_nop
		case 0x01: // DW_CFA_set_loc
			b := m.t.bases
			loc, ind, err := in.readPtr(c.fdeEnc, &b)
			if err != nil || ind {
				return fmt.Errorf("DW_CFA_set_loc at %#x: bad address", at)
			}
			if loc > m.pc {
				return nil
			}
			m.loc = loc
		case 0x02: // DW_CFA_advance_loc1
			if m.advance(uint64(in.u8())*c.caf) != nil {
				return nil
			}
		case 0x03: // DW_CFA_advance_loc2
			if m.advance(uint64(in.u16())*c.caf) != nil {
				return nil
			}
		case 0x04: // DW_CFA_advance_loc4
			if m.advance(uint64(in.u32())*c.caf) != nil {
				return nil
			}
		case 0x05: // DW_CFA_offset_extended
			reg := in.uleb()
			set(reg, rule{kind: ruleOffset, off: int64(in.uleb()) * c.daf})
		case 0x06: // DW_CFA_restore_extended
			m.restore(r, init, in.uleb())
		case 0x07: // DW_CFA_undefined
			set(in.uleb(), rule{kind: ruleUndefined})
		case 0x08: // DW_CFA_same_value
			set(in.uleb(), rule{kind: ruleSame})
		case 0x09: // DW_CFA_register
			reg := in.uleb()
			set(reg, rule{kind: ruleRegister, reg: in.uleb()})
		case 0x0a: // DW_CFA_remember_state
			if len(m.stack) >= maxStateStack {
				return fmt.Errorf("DW_CFA_remember_state at %#x: nested too deep", at)
			}
			m.stack = append(m.stack, *r)
		case 0x0b: // DW_CFA_restore_state
			if len(m.stack) == 0 {
				return fmt.Errorf("DW_CFA_restore_state at %#x: no remembered state", at)
			}
			*r = m.stack[len(m.stack)-1]
			m.stack = m.stack[:len(m.stack)-1]
		case 0x0c: // DW_CFA_def_cfa
			reg := in.uleb()
			r.cfa = cfaRule{set: true, reg: reg, off: int64(in.uleb())}
		case 0x0d: // DW_CFA_def_cfa_register
			if r.cfa.expr != nil {
				return fmt.Errorf("DW_CFA_def_cfa_register at %#x: cfa is an expression", at)
			}
			r.cfa.set, r.cfa.reg = true, in.uleb()
		case 0x0e: // DW_CFA_def_cfa_offset
			if r.cfa.expr != nil {
				return fmt.Errorf("DW_CFA_def_cfa_offset at %#x: cfa is an expression", at)
			}
			r.cfa.set, r.cfa.off = true, int64(in.uleb())
		case 0x0f: // DW_CFA_def_cfa_expression
			e := in.bytes(in.uleb())
			if e == nil {
				e = []byte{}
			}
			r.cfa = cfaRule{set: true, expr: e}
		case 0x10: // DW_CFA_expression
			reg := in.uleb()
			set(reg, rule{kind: ruleExpr, expr: in.bytes(in.uleb())})
		case 0x11: // DW_CFA_offset_extended_sf
			reg := in.uleb()
			set(reg, rule{kind: ruleOffset, off: in.sleb() * c.daf})
		case 0x12: // DW_CFA_def_cfa_sf
			reg := in.uleb()
			r.cfa = cfaRule{set: true, reg: reg, off: in.sleb() * c.daf}
		case 0x13: // DW_CFA_def_cfa_offset_sf
			if r.cfa.expr != nil {
				return fmt.Errorf("DW_CFA_def_cfa_offset_sf at %#x: cfa is an expression", at)
			}
			r.cfa.set, r.cfa.off = true, in.sleb()*c.daf
		case 0x14: // DW_CFA_val_offset
			reg := in.uleb()
			set(reg, rule{kind: ruleValOffset, off: int64(in.uleb()) * c.daf})
		case 0x15: // DW_CFA_val_offset_sf
			reg := in.uleb()
			set(reg, rule{kind: ruleValOffset, off: in.sleb() * c.daf})
		case 0x16: // DW_CFA_val_expression
			reg := in.uleb()
			set(reg, rule{kind: ruleValExpr, expr: in.bytes(in.uleb())})
		case 0x2e: // DW_CFA_GNU_args_size
			in.uleb()
		case 0x2f: // DW_CFA_GNU_negative_offset_extended
			reg := in.uleb()
			set(reg, rule{kind: ruleOffset, off: -int64(in.uleb()) * c.daf})
		default:
			return fmt.Errorf("unknown call frame instruction %#x at %#x", op, at)
		}
	}
	if in.err != nil {
		return fmt.Errorf("call frame instructions: %w", in.err)
	}
	return nil
}

// restore resets the rule of reg to the one the CIE's instructions set.
func (m *machine) restore(r, init *row, reg uint64) {
	if reg >= numRegs {
		return
	}
	if init == nil {
		r.regs[reg] = rule{}
		return
	}
	r.regs[reg] = init.regs[reg]
}
