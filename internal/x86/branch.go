package x86

import "golang.org/x/arch/x86/x86asm"

// BranchTarget returns where the relative call, jump or conditional jump
// in, decoded at address pc, lands: the address after it plus its
// displacement. It returns false for an instruction without a relative
// target (an indirect branch, or no branch).
func BranchTarget(in x86asm.Inst, pc uint64) (uint64, bool) {
	rel, ok := in.Args[0].(x86asm.Rel)
	if !ok {
		return 0, false
	}
	return pc + uint64(in.Len) + uint64(int64(rel)), true
}

// Jcc reports whether op is one of the 16 jumps on a condition of the
// flags (JA ... JS), the conditional jumps x86 kernels emulate at a
// uprobe; JCXZ and the LOOPs, which test the count register, are not.
func Jcc(op x86asm.Op) bool {
	switch op {
	case x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JE, x86asm.JG, x86asm.JGE, x86asm.JL,
		x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP, x86asm.JNS, x86asm.JO, x86asm.JP, x86asm.JS:
		return true
	}
	return false
}
