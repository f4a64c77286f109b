package x86

import (
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

func TestBranchTarget(t *testing.T) {
	tests := []struct {
		name   string
		code   []byte
		pc     uint64
		target uint64
		ok     bool
	}{
		{"call rel32", []byte{0xe8, 0x10, 0x00, 0x00, 0x00}, 0x1000, 0x1015, true},
		{"call rel32 back", []byte{0xe8, 0xf0, 0xff, 0xff, 0xff}, 0x1000, 0xff5, true},
		{"jmp rel8 to itself", []byte{0xeb, 0xfe}, 0x40, 0x40, true},
		{"je rel8", []byte{0x74, 0x23}, 0x17, 0x3c, true},
		{"jne rel32", []byte{0x0f, 0x85, 0x00, 0x01, 0x00, 0x00}, 0, 0x106, true},
		{"jmp rel8 below 0", []byte{0xeb, 0xfc}, 0, 1<<64 - 2, true},
		{"call through a register", []byte{0xff, 0xd0}, 0x1000, 0, false},
		{"jmp through memory", []byte{0xff, 0x25, 0x00, 0x10, 0x00, 0x00}, 0x1000, 0, false},
		{"ret", []byte{0xc3}, 0x1000, 0, false},
		{"mov", []byte{0x48, 0x89, 0xe6}, 0x1000, 0, false},
	}
	for _, tt := range tests {
		in, err := x86asm.Decode(tt.code, 64)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		target, ok := BranchTarget(in, tt.pc)
		if target != tt.target || ok != tt.ok {
			t.Errorf("%s: BranchTarget = %#x, %v; want %#x, %v", tt.name, target, ok, tt.target, tt.ok)
		}
	}
}
