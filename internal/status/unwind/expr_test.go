package unwind

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

func TestEval(t *testing.T) {
	regs := &frame{ip: 0x401234, sp: 0x7ffc1000, bp: 0x7ffc1100, bpOK: true}
	mem := func(addr uint64, p []byte) error {
		if addr < 0x7ffc1000 || addr+uint64(len(p)) > 0x7ffc1200 {
			return errors.New("unmapped")
		}
		for i := range p {
			p[i] = byte(addr + uint64(i)) // each byte holds its address' low byte
		}
		return nil
	}
	env := &exprEnv{regs: regs, mem: mem, bias: 0x100000}
	u16 := func(v int16) []byte { return binary.LittleEndian.AppendUint16(nil, uint16(v)) }
	tests := []struct {
		name string
		code []byte
		push []uint64
		want uint64
		err  string
	}{
		{"PLT before push", pltExpr, nil, 0x7ffc1008, ""},
		{"breg7", cat([]byte{0x77}, sleb(-16)), nil, 0x7ffc0ff0, ""},
		{"breg6", cat([]byte{0x76}, sleb(16)), nil, 0x7ffc1110, ""},
		{"breg16", []byte{0x80, 0x00}, nil, 0x401234, ""},
		{"bregx", cat([]byte{0x92}, uleb(7), sleb(8)), nil, 0x7ffc1008, ""},
		{"untracked register", []byte{0x73, 0x00}, nil, 0, "rbx is not tracked"},
		{"pushed cfa plus_uconst", cat([]byte{0x23}, uleb(300)), []uint64{1000}, 1300, ""},
		{"consts", cat([]byte{0x08, 0xff, 0x09, 0xff, 0x22}), nil, 0xfe, ""},
		{"const2/4/8", cat([]byte{0x0a}, u16(-2), []byte{0x0b}, u16(-2), []byte{0x22, 0x0c}, u32(1), []byte{0x22, 0x0e}, u64(1), []byte{0x22}), nil, 0xfffe, ""},
		{"const4s", cat([]byte{0x0d}, u32(0xffffffff)), nil, ^uint64(0), ""},
		{"constu consts", cat([]byte{0x10}, uleb(1000), []byte{0x11}, sleb(-1), []byte{0x22}), nil, 999, ""},
		{"minus", []byte{0x35, 0x32, 0x1c}, nil, 3, ""},
		{"and or xor", []byte{0x3c, 0x3a, 0x1a, 0x31, 0x21, 0x3f, 0x27}, nil, 0xf ^ (0xc&0xa | 1), ""},
		{"shl shr shra", []byte{0x31, 0x3f, 0x24, 0x34, 0x25, 0x1f, 0x31, 0x26}, nil, ^uint64(0x400 - 1), ""},
		{"mul div mod", []byte{0x37, 0x36, 0x1e, 0x35, 0x1b, 0x34, 0x1d}, nil, 0, ""},
		{"signed div", []byte{0x37, 0x1f, 0x32, 0x1b}, nil, ^uint64(2), ""},
		{"comparisons", []byte{0x31, 0x32, 0x2d, 0x31, 0x32, 0x2b, 0x22, 0x31, 0x1f, 0x30, 0x2c, 0x22, 0x33, 0x33, 0x29, 0x22, 0x33, 0x34, 0x2e, 0x22}, nil, 4, ""},
		{"ge is signed", []byte{0x31, 0x1f, 0x30, 0x2a}, nil, 0, ""},
		{"stack ops", []byte{0x31, 0x32, 0x33, 0x17, 0x16, 0x14, 0x15, 0x02, 0x12, 0x13, 0x22, 0x22, 0x22, 0x22}, nil, 1 + 2 + 3 + 3 + 1, ""},
		{"abs neg not", []byte{0x35, 0x1f, 0x19, 0x20, 0x20}, nil, 5, ""},
		{"deref", []byte{0x77, 0x08, 0x06}, nil, 0x0f0e0d0c0b0a0908, ""},
		{"deref_size", []byte{0x77, 0x08, 0x94, 0x02}, nil, 0x0908, ""},
		{"deref_size 9", []byte{0x77, 0x08, 0x94, 0x09}, nil, 0, "DW_OP_deref_size 9"},
		{"deref unmapped", []byte{0x30, 0x06}, nil, 0, "read stack at 0x0: unmapped"},
		{"addr adds the bias", cat([]byte{0x03}, u64(0x1000)), nil, 0x101000, ""},
		{"skip", cat([]byte{0x31, 0x2f}, u16(1), []byte{0x32}), nil, 1, ""},
		{"bra taken", cat([]byte{0x35, 0x31, 0x28}, u16(1), []byte{0x32}), nil, 5, ""},
		{"bra not taken", cat([]byte{0x35, 0x30, 0x28}, u16(1), []byte{0x32}), nil, 2, ""},
		{"infinite loop", cat([]byte{0x2f}, u16(-3)), nil, 0, "runs too long"},
		{"growing stack", cat([]byte{0x30, 0x2f}, u16(-4)), nil, 0, "too deep"},
		{"branch out", cat([]byte{0x2f}, u16(100)), nil, 0, "out of the expression"},
		{"underflow", []byte{0x22}, nil, 0, "stack underflow"},
		{"pick underflow", []byte{0x30, 0x15, 0x05}, nil, 0, "stack underflow"},
		{"div by zero", []byte{0x31, 0x30, 0x1b}, nil, 0, "division by zero"},
		{"mod by zero", []byte{0x31, 0x30, 0x1d}, nil, 0, "division by zero"},
		{"empty", nil, nil, 0, "empty stack"},
		{"truncated", []byte{0x0e, 1, 2}, nil, 0, "truncated"},
		{"DW_OP_reg0 unsupported", []byte{0x50}, nil, 0, "unsupported dwarf expression operation 0x50"},
		{"DW_OP_call_frame_cfa unsupported", []byte{0x9c}, nil, 0, "unsupported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := eval(tt.code, env, tt.push...)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("eval = %#x, %v; want an error containing %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("eval = %#x, %v; want %#x", got, err, tt.want)
			}
		})
	}

	// The PLT expression switches at byte 11 of each 16-byte entry.
	for off := range uint64(16) {
		r := *regs
		r.ip = 0x1030 + off
		e := *env
		e.regs = &r
		want := r.sp + 8
		if off >= 11 {
			want += 8
		}
		if got, err := eval(pltExpr, &e); err != nil || got != want {
			t.Errorf("PLT at entry byte %d: %#x, %v; want %#x", off, got, err, want)
		}
	}

	// rbp unknown in this frame.
	e := *env
	e.regs = &frame{sp: 1}
	if _, err := eval([]byte{0x76, 0}, &e); err == nil || !strings.Contains(err.Error(), "rbp is not known") {
		t.Errorf("breg6 with unknown rbp: %v", err)
	}
}

func TestDisasm(t *testing.T) {
	tests := []struct {
		code []byte
		want string
	}{
		{pltExpr, "breg7+8; breg16+0; lit15; and; lit11; ge; lit3; shl; plus"},
		{[]byte{0x77, 0xa0, 0x01, 0x06}, "breg7+160; deref"},
		{cat([]byte{0x92}, uleb(17), sleb(-8), []byte{0x23}, uleb(5)), "bregx 17-8; plus_uconst 5"},
		{[]byte{0x0c, 1}, "<truncated>"},
		{[]byte{0x31, 0xee, 0x31}, "lit1; op0xee"},
	}
	for _, tt := range tests {
		if got := disasm(tt.code); !strings.HasSuffix(got, tt.want) {
			t.Errorf("disasm(% x) = %q; want %q", tt.code, got, tt.want)
		}
	}
}
