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
