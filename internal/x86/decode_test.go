package x86

import (
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

// TestDecode decodes each instruction with Decode, at address pc, and
// takes its branch target.
func TestDecode(t *testing.T) {
	tests := []struct {
		name   string
		code   []byte
		op     x86asm.Op // 0: Decode fails
		len    int
		pc     uint64
		target uint64
		branch bool
	}{
		{"endbr64", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x55}, x86asm.NOP, 4, 0, 0, false},
		{"endbr32", []byte{0xf3, 0x0f, 0x1e, 0xfb}, x86asm.NOP, 4, 0, 0, false},
		{"endbr64 cut short", []byte{0xf3, 0x0f, 0x1e}, 0, 0, 0, 0, false},
		{"lone prefix", []byte{0xf2}, 0, 0, 0, 0, false},
		{"call cut short", []byte{0xe8, 0, 0}, 0, 0, 0, 0, false},
		{"nothing", nil, 0, 0, 0, 0, false},
		{"push", []byte{0x55}, x86asm.PUSH, 1, 0, 0, false},
		{"mov", []byte{0x48, 0x89, 0xe6}, x86asm.MOV, 3, 0x1000, 0, false},
		{"ret", []byte{0xc3}, x86asm.RET, 1, 0x1000, 0, false},
		{"call rel32", []byte{0xe8, 0x10, 0x00, 0x00, 0x00}, x86asm.CALL, 5, 0x1000, 0x1015, true},
		{"call rel32 back", []byte{0xe8, 0xf0, 0xff, 0xff, 0xff}, x86asm.CALL, 5, 0x1000, 0xff5, true},
		{"jmp rel8 to itself", []byte{0xeb, 0xfe}, x86asm.JMP, 2, 0x40, 0x40, true},
		{"jmp rel8 below 0", []byte{0xeb, 0xfc}, x86asm.JMP, 2, 0, 1<<64 - 2, true},
		{"je rel8", []byte{0x74, 0x23}, x86asm.JE, 2, 0x17, 0x3c, true},
		{"jne rel32", []byte{0x0f, 0x85, 0x00, 0x01, 0x00, 0x00}, x86asm.JNE, 6, 0, 0x106, true},
		{"call through a register", []byte{0xff, 0xd0}, x86asm.CALL, 2, 0x1000, 0, false},
		{"jmp through memory", []byte{0xff, 0x25, 0x00, 0x10, 0x00, 0x00}, x86asm.JMP, 6, 0x1000, 0, false},
	}
	for _, tt := range tests {
		in, err := Decode(tt.code)
		if (err != nil) != (tt.op == 0) || err == nil && (in.Op != tt.op || in.Len != tt.len) {
			t.Errorf("%s: Decode = %v (%d bytes), %v; want %v (%d bytes)", tt.name, in.Op, in.Len, err, tt.op, tt.len)
			continue
		}
		if err != nil {
			continue
		}
		target, ok := BranchTarget(in, tt.pc)
		if target != tt.target || ok != tt.branch {
			t.Errorf("%s: BranchTarget = %#x, %v; want %#x, %v", tt.name, target, ok, tt.target, tt.branch)
		}
	}
}

func TestJcc(t *testing.T) {
	for _, op := range []x86asm.Op{x86asm.JA, x86asm.JE, x86asm.JNE, x86asm.JS, x86asm.JO, x86asm.JLE} {
		if !Jcc(op) {
			t.Errorf("Jcc(%v) = false", op)
		}
	}
	for _, op := range []x86asm.Op{x86asm.JMP, x86asm.CALL, x86asm.JCXZ, x86asm.JRCXZ, x86asm.LOOP, x86asm.LOOPNE, x86asm.RET, 0} {
		if Jcc(op) {
			t.Errorf("Jcc(%v) = true", op)
		}
	}
}
