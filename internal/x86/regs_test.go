package x86

import (
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

func TestFamily(t *testing.T) {
	tests := []struct {
		r      x86asm.Reg
		family int
		reg64  x86asm.Reg
		is64   bool
		wide   bool
	}{
		{x86asm.AL, 0, x86asm.RAX, false, false},
		{x86asm.BL, 3, x86asm.RBX, false, false},
		{x86asm.AH, 0, x86asm.RAX, false, false},
		{x86asm.BH, 3, x86asm.RBX, false, false},
		{x86asm.SPB, 4, x86asm.RSP, false, false},
		{x86asm.DIB, 7, x86asm.RDI, false, false},
		{x86asm.R8B, 8, x86asm.R8, false, false},
		{x86asm.R15B, 15, x86asm.R15, false, false},
		{x86asm.AX, 0, x86asm.RAX, false, false},
		{x86asm.SI, 6, x86asm.RSI, false, false},
		{x86asm.R9W, 9, x86asm.R9, false, false},
		{x86asm.EAX, 0, x86asm.RAX, false, true},
		{x86asm.EDX, 2, x86asm.RDX, false, true},
		{x86asm.R15L, 15, x86asm.R15, false, true},
		{x86asm.RAX, 0, x86asm.RAX, true, true},
		{x86asm.RSP, 4, x86asm.RSP, true, true},
		{x86asm.R15, 15, x86asm.R15, true, true},
		{x86asm.RIP, -1, 0, false, false},
		{x86asm.X0, -1, 0, false, false},
		{x86asm.FS, -1, 0, false, false},
		{0, -1, 0, false, false},
	}
	for _, tt := range tests {
		if f := Family(tt.r); f != tt.family {
			t.Errorf("Family(%v) = %d, want %d", tt.r, f, tt.family)
		}
		if r := Reg64(tt.r); r != tt.reg64 {
			t.Errorf("Reg64(%v) = %v, want %v", tt.r, r, tt.reg64)
		}
		if b := Is64(tt.r); b != tt.is64 {
			t.Errorf("Is64(%v) = %v", tt.r, b)
		}
		if b := Wide(tt.r); b != tt.wide {
			t.Errorf("Wide(%v) = %v", tt.r, b)
		}
	}
}
