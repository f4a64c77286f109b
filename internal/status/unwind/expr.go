package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// Limits of the DWARF expression evaluator.
const (
	maxExprSteps = 256
	maxExprStack = 64
)

// DWARF expression operations the evaluator knows.
const (
	opAddr       = 0x03
	opDeref      = 0x06
	opConst1u    = 0x08
	opConst1s    = 0x09
	opConst2u    = 0x0a
	opConst2s    = 0x0b
	opConst4u    = 0x0c
	opConst4s    = 0x0d
	opConst8u    = 0x0e
	opConst8s    = 0x0f
	opConstu     = 0x10
	opConsts     = 0x11
	opDup        = 0x12
	opDrop       = 0x13
	opOver       = 0x14
	opPick       = 0x15
	opSwap       = 0x16
	opRot        = 0x17
	opAbs        = 0x19
	opAnd        = 0x1a
	opDiv        = 0x1b
	opMinus      = 0x1c
	opMod        = 0x1d
	opMul        = 0x1e
	opNeg        = 0x1f
	opNot        = 0x20
	opOr         = 0x21
	opPlus       = 0x22
	opPlusUconst = 0x23
	opShl        = 0x24
	opShr        = 0x25
	opShra       = 0x26
	opXor        = 0x27
	opBra        = 0x28
	opEq         = 0x29
	opGe         = 0x2a
	opGt         = 0x2b
	opLe         = 0x2c
	opLt         = 0x2d
	opNe         = 0x2e
	opSkip       = 0x2f
	opLit0       = 0x30
	opLit31      = 0x4f
	opBreg0      = 0x70
	opBreg31     = 0x8f
	opBregx      = 0x92
	opDerefSize  = 0x94
	opNop        = 0x96
)

// exprEnv is what an expression can see of the frame being unwound.
type exprEnv struct {
	regs *frame // the callee's registers
	mem  procfs.Memory
	bias uint64 // added to DW_OP_addr operands, which are virtual addresses
}

var errExprUnsupported = errors.New("unsupported dwarf expression operation")

// eval runs the DWARF expression code with the values of push on the stack
// and returns the value on top of the stack when it ends.
func eval(code []byte, env *exprEnv, push ...uint64) (uint64, error) {
	stack := make([]uint64, 0, 8)
	stack = append(stack, push...)
	need := func(n int) error {
		if len(stack) < n {
			return fmt.Errorf("stack underflow")
		}
		return nil
	}
	pop := func() uint64 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		return v
	}
	in := reader{b: code}
	for steps := 0; !in.done(); steps++ {
		if steps >= maxExprSteps {
			return 0, errors.New("dwarf expression runs too long")
		}
		if len(stack) >= maxExprStack {
			return 0, errors.New("dwarf expression stack too deep")
		}
		at := in.off
		op := in.u8()
		switch {
		case op >= opLit0 && op <= opLit31:
			stack = append(stack, uint64(op-opLit0))
			continue
		case op >= opBreg0 && op <= opBreg31:
			off := in.sleb()
			v, err := env.regs.value(uint64(op - opBreg0))
			if err != nil {
				return 0, err
			}
			stack = append(stack, v+uint64(off))
			continue
		}
		switch op {
		case opAddr:
			stack = append(stack, in.u64()+env.bias)
		case opConst1u:
			stack = append(stack, uint64(in.u8()))
		case opConst1s:
			stack = append(stack, uint64(int64(int8(in.u8()))))
		case opConst2u:
			stack = append(stack, uint64(in.u16()))
		case opConst2s:
			stack = append(stack, uint64(int64(int16(in.u16()))))
		case opConst4u:
			stack = append(stack, uint64(in.u32()))
		case opConst4s:
			stack = append(stack, uint64(int64(int32(in.u32()))))
		case opConst8u, opConst8s:
			stack = append(stack, in.u64())
		case opConstu:
			stack = append(stack, in.uleb())
		case opConsts:
			stack = append(stack, uint64(in.sleb()))
		case opBregx:
			reg := in.uleb()
			off := in.sleb()
			v, err := env.regs.value(reg)
			if err != nil {
				return 0, err
			}
			stack = append(stack, v+uint64(off))
		case opDup, opDrop:
			if err := need(1); err != nil {
				return 0, err
			}
			if op == opDup {
				stack = append(stack, stack[len(stack)-1])
			} else {
				pop()
			}
		case opOver:
			if err := need(2); err != nil {
				return 0, err
			}
			stack = append(stack, stack[len(stack)-2])
		case opPick:
			i := int(in.u8())
			if err := need(i + 1); err != nil {
				return 0, err
			}
			stack = append(stack, stack[len(stack)-1-i])
		case opSwap:
			if err := need(2); err != nil {
				return 0, err
			}
			n := len(stack)
			stack[n-1], stack[n-2] = stack[n-2], stack[n-1]
		case opRot:
			if err := need(3); err != nil {
				return 0, err
			}
			n := len(stack)
			stack[n-1], stack[n-2], stack[n-3] = stack[n-2], stack[n-3], stack[n-1]
		case opDeref, opDerefSize:
			size := uint64(8)
			if op == opDerefSize {
				size = uint64(in.u8())
				if size == 0 || size > 8 {
					return 0, fmt.Errorf("DW_OP_deref_size %d", size)
				}
			}
			if err := need(1); err != nil {
				return 0, err
			}
			addr := pop()
			var buf [8]byte
			if err := env.mem(addr, buf[:size]); err != nil {
				return 0, fmt.Errorf("read stack at %#x: %w", addr, err)
			}
			stack = append(stack, binary.LittleEndian.Uint64(buf[:]))
		case opAbs, opNeg, opNot:
			if err := need(1); err != nil {
				return 0, err
			}
			v := pop()
			switch op {
			case opAbs:
				if int64(v) < 0 {
					v = -v
				}
			case opNeg:
				v = -v
			case opNot:
				v = ^v
			}
			stack = append(stack, v)
		case opPlusUconst:
			if err := need(1); err != nil {
				return 0, err
			}
			stack[len(stack)-1] += in.uleb()
		case opAnd, opDiv, opMinus, opMod, opMul, opOr, opPlus, opShl, opShr, opShra, opXor,
			opEq, opGe, opGt, opLe, opLt, opNe:
			if err := need(2); err != nil {
				return 0, err
			}
			b := pop()
			a := pop()
			v, err := binop(op, a, b)
			if err != nil {
				return 0, err
			}
			stack = append(stack, v)
		case opSkip, opBra:
			off := int(int16(in.u16()))
			if op == opBra {
				if err := need(1); err != nil {
					return 0, err
				}
				if pop() == 0 {
					continue
				}
			}
			if in.err != nil {
				break
			}
			to := in.off + off
			if to < 0 || to > len(code) {
				return 0, fmt.Errorf("branch at %d out of the expression", at)
			}
			in.off = to
		case opNop:
		default:
			return 0, fmt.Errorf("%w %#x", errExprUnsupported, op)
		}
	}
	if in.err != nil {
		return 0, fmt.Errorf("dwarf expression: %w", in.err)
	}
	if len(stack) == 0 {
		return 0, errors.New("dwarf expression leaves an empty stack")
	}
	return stack[len(stack)-1], nil
}

func binop(op byte, a, b uint64) (uint64, error) {
	bool2 := func(c bool) uint64 {
		if c {
			return 1
		}
		return 0
	}
	sa, sb := int64(a), int64(b)
	switch op {
	case opAnd:
		return a & b, nil
	case opOr:
		return a | b, nil
	case opXor:
		return a ^ b, nil
	case opPlus:
		return a + b, nil
	case opMinus:
		return a - b, nil
	case opMul:
		return a * b, nil
	case opDiv:
		if b == 0 || (sa == -1<<63 && sb == -1) {
			return 0, errors.New("DW_OP_div: division by zero or overflow")
		}
		return uint64(sa / sb), nil
	case opMod:
		if b == 0 {
			return 0, errors.New("DW_OP_mod: division by zero")
		}
		return a % b, nil
	case opShl:
		if b >= 64 {
			return 0, nil
		}
		return a << b, nil
	case opShr:
		if b >= 64 {
			return 0, nil
		}
		return a >> b, nil
	case opShra:
		if b >= 64 {
			b = 63
		}
		return uint64(sa >> b), nil
	// Comparisons are signed (DWARF 4, section 2.5.1.4).
	case opEq:
		return bool2(sa == sb), nil
	case opGe:
		return bool2(sa >= sb), nil
	case opGt:
		return bool2(sa > sb), nil
	case opLe:
		return bool2(sa <= sb), nil
	case opLt:
		return bool2(sa < sb), nil
	case opNe:
		return bool2(sa != sb), nil
	}
	return 0, fmt.Errorf("%w %#x", errExprUnsupported, op)
}

// disasm renders an expression for CFA's output, e.g.
// "breg7+8; breg16+0; lit15; and; lit11; ge; lit3; shl; plus".
func disasm(code []byte) string {
	names := map[byte]string{
		opDeref: "deref", opDup: "dup", opDrop: "drop", opOver: "over", opSwap: "swap",
		opRot: "rot", opAbs: "abs", opAnd: "and", opDiv: "div", opMinus: "minus",
		opMod: "mod", opMul: "mul", opNeg: "neg", opNot: "not", opOr: "or",
		opPlus: "plus", opShl: "shl", opShr: "shr", opShra: "shra", opXor: "xor",
		opEq: "eq", opGe: "ge", opGt: "gt", opLe: "le", opLt: "lt", opNe: "ne", opNop: "nop",
	}
	var parts []string
	in := reader{b: code}
	for !in.done() {
		op := in.u8()
		var s string
		switch {
		case op >= opLit0 && op <= opLit31:
			s = fmt.Sprintf("lit%d", op-opLit0)
		case op >= opBreg0 && op <= opBreg31:
			s = fmt.Sprintf("breg%d%+d", op-opBreg0, in.sleb())
		case names[op] != "":
			s = names[op]
		case op == opAddr:
			s = fmt.Sprintf("addr %#x", in.u64())
		case op == opConst1u:
			s = fmt.Sprintf("const1u %d", in.u8())
		case op == opConst1s:
			s = fmt.Sprintf("const1s %d", int8(in.u8()))
		case op == opConst2u:
			s = fmt.Sprintf("const2u %d", in.u16())
		case op == opConst2s:
			s = fmt.Sprintf("const2s %d", int16(in.u16()))
		case op == opConst4u:
			s = fmt.Sprintf("const4u %d", in.u32())
		case op == opConst4s:
			s = fmt.Sprintf("const4s %d", int32(in.u32()))
		case op == opConst8u:
			s = fmt.Sprintf("const8u %d", in.u64())
		case op == opConst8s:
			s = fmt.Sprintf("const8s %d", int64(in.u64()))
		case op == opConstu:
			s = fmt.Sprintf("constu %d", in.uleb())
		case op == opConsts:
			s = fmt.Sprintf("consts %d", in.sleb())
		case op == opPlusUconst:
			s = fmt.Sprintf("plus_uconst %d", in.uleb())
		case op == opBregx:
			reg := in.uleb()
			s = fmt.Sprintf("bregx %d%+d", reg, in.sleb())
		case op == opPick:
			s = fmt.Sprintf("pick %d", in.u8())
		case op == opDerefSize:
			s = fmt.Sprintf("deref_size %d", in.u8())
		case op == opSkip || op == opBra:
			name := "skip"
			if op == opBra {
				name = "bra"
			}
			s = fmt.Sprintf("%s %d", name, int16(in.u16()))
		default:
			s = fmt.Sprintf("op%#x", op)
			in.off = len(code) // operands unknown: stop
		}
		parts = append(parts, s)
	}
	if in.err != nil {
		parts = append(parts, "<truncated>")
	}
	return strings.Join(parts, "; ")
}
