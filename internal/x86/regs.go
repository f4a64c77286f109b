package x86

import "golang.org/x/arch/x86/x86asm"

// Family maps a general register of any width to its 64-bit register's
// index (RAX 0, RCX 1, RDX 2, RBX 3, RSP 4, ... R15 15): AL, AH, AX and EAX
// are all RAX's. It returns -1 for any other register.
func Family(r x86asm.Reg) int {
	switch {
	case r >= x86asm.AL && r <= x86asm.BL:
		return int(r - x86asm.AL)
	case r >= x86asm.AH && r <= x86asm.BH:
		return int(r - x86asm.AH)
	case r >= x86asm.SPB && r <= x86asm.R15B:
		return int(r-x86asm.SPB) + 4
	case r >= x86asm.AX && r <= x86asm.R15W:
		return int(r - x86asm.AX)
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return int(r - x86asm.EAX)
	case r >= x86asm.RAX && r <= x86asm.R15:
		return int(r - x86asm.RAX)
	}
	return -1
}

// Reg64 is the 64-bit register holding r (AL, AX, EAX give RAX); 0 if r
// is no general register.
func Reg64(r x86asm.Reg) x86asm.Reg {
	if f := Family(r); f >= 0 {
		return x86asm.RAX + x86asm.Reg(f)
	}
	return 0
}

// Is64 reports whether r is a 64-bit general register.
func Is64(r x86asm.Reg) bool { return r >= x86asm.RAX && r <= x86asm.R15 }

// Wide reports whether r is a 32- or 64-bit general register, which holds
// an int whole.
func Wide(r x86asm.Reg) bool { return (r >= x86asm.EAX && r <= x86asm.R15L) || Is64(r) }
