package x86

import (
	"encoding/binary"
	"errors"

	"golang.org/x/arch/x86/x86asm"
)

// endbr64 and endbr32 (f3 0f 1e fa/fb, read little-endian) mark CET
// branch targets; x86asm does not know them.
const (
	endbr64 = 0xfa1e0ff3
	endbr32 = 0xfb1e0ff3
)

// endbrAt returns the CET marker b begins with, endbr64 or endbr32, or 0.
func endbrAt(b []byte) uint32 {
	if len(b) < 4 {
		return 0
	}
	if m := binary.LittleEndian.Uint32(b); m == endbr64 || m == endbr32 {
		return m
	}
	return 0
}

// Decode decodes the 64-bit instruction at the start of b, endbr64 and
// endbr32 as 4-byte no-ops. x86asm returns a one-byte instruction without
// an opcode, and no error, for a lone prefix and for an instruction cut
// short: both are errors here, or a walk over consecutive instructions
// would go on in the middle of one.
func Decode(b []byte) (x86asm.Inst, error) {
	if endbrAt(b) != 0 {
		return x86asm.Inst{Op: x86asm.NOP, Len: 4, Mode: 64}, nil
	}
	in, err := x86asm.Decode(b, 64)
	if err != nil {
		return in, err
	}
	if in.Op == 0 {
		return in, errors.New("truncated instruction or lone prefix")
	}
	return in, nil
}
