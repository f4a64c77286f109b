package x86

import (
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		code []byte
		op   x86asm.Op
		len  int
		err  bool
	}{
		{"endbr64", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x55}, x86asm.NOP, 4, false},
		{"endbr32", []byte{0xf3, 0x0f, 0x1e, 0xfb}, x86asm.NOP, 4, false},
		{"endbr64 cut short", []byte{0xf3, 0x0f, 0x1e}, 0, 0, true},
		{"push", []byte{0x55}, x86asm.PUSH, 1, false},
		{"call", []byte{0xe8, 0, 0, 0, 0}, x86asm.CALL, 5, false},
		{"lone prefix", []byte{0xf2}, 0, 0, true},
		{"call cut short", []byte{0xe8, 0, 0}, 0, 0, true},
		{"nothing", nil, 0, 0, true},
	}
	for _, tt := range tests {
		in, err := Decode(tt.code)
		if (err != nil) != tt.err {
			t.Errorf("%s: Decode error %v, want an error: %v", tt.name, err, tt.err)
			continue
		}
		if err == nil && (in.Op != tt.op || in.Len != tt.len) {
			t.Errorf("%s: Decode = %v (%d bytes), want %v (%d bytes)", tt.name, in.Op, in.Len, tt.op, tt.len)
		}
	}
}
