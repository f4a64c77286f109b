package x86

import (
	"slices"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

// Prologues of Debian's Open MPI 4.1 libmpi.so.40 (objdump -d).
var (
	// PMPI_Wtime: sub $0x28,%rsp; mov $1,%edi; mov %fs:0x28,%rax;
	// mov %rax,0x18(%rsp); xor %eax,%eax; mov %rsp,%rsi; call clock_gettime.
	wtimeCode = []byte{0x48, 0x83, 0xec, 0x28, 0xbf, 0x01, 0x00, 0x00, 0x00, 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00,
		0x00, 0x00, 0x48, 0x89, 0x44, 0x24, 0x18, 0x31, 0xc0, 0x48, 0x89, 0xe6, 0xe8, 0x1f, 0x28, 0xf9, 0xff}
	// PMPI_Test: mov 0x8a001(%rip),%rax; push %r12; mov %rdi,%r12; push
	// %rbp; mov %rdx,%rbp; push %rbx; cmpb $0,(%rax); mov %rsi,%rbx; je +0x23.
	testCode = []byte{0x48, 0x8b, 0x05, 0x01, 0xa0, 0x08, 0x00, 0x41, 0x54, 0x49, 0x89, 0xfc, 0x55, 0x48, 0x89, 0xd5,
		0x53, 0x80, 0x38, 0x00, 0x48, 0x89, 0xf3, 0x74, 0x23}
)

func TestEntryPoint(t *testing.T) {
	// A loop back to the push after the rip-relative mov: probing the
	// push would count the loop's iterations as calls.
	loopBack := append(slices.Clone(testCode[:9]), 0xeb, 0xfc) // jmp -4: to offset 7
	// sub $0x28,%rsp; mov %rax,0x30(%rsp) (above the frame: the caller's); push %rbx
	storeAbove := []byte{0x48, 0x83, 0xec, 0x28, 0x48, 0x89, 0x44, 0x24, 0x30, 0x53}
	// mov $1,%edi; push %rbx: overwrites an argument.
	argWrite := []byte{0xbf, 0x01, 0x00, 0x00, 0x00, 0x53}
	tests := []struct {
		name       string
		code       []byte
		entryOnly  bool
		off, frame uint64
	}{
		{"Wtime entry-only: at the call, frame 0x28", wtimeCode, true, 0x1c, 0x28},
		{"Wtime with a return probe: the stack moves first", wtimeCode, false, 0, 0},
		{"Test: after the rip-relative mov", testCode, false, 7, 0},
		{"Test entry-only", testCode, true, 7, 0},
		{"push first: the entry", testCode[7:], false, 0, 0},
		{"loop back into the prologue", loopBack, false, 0, 0},
		{"store above the frame", storeAbove, true, 0, 0},
		{"argument overwritten", argWrite, false, 0, 0},
		{"argument overwritten, entry-only", argWrite, true, 5, 0},
		{"no code", nil, false, 0, 0},
		{"truncated", wtimeCode[:10], true, 0, 0},
	}
	for _, tt := range tests {
		off, frame := EntryPoint(tt.code, tt.entryOnly)
		if off != tt.off || frame != tt.frame {
			t.Errorf("%s: EntryPoint = (%#x, %#x), want (%#x, %#x)", tt.name, off, frame, tt.off, tt.frame)
		}
	}
}

// FuzzEntryPoint checks that EntryPoint never panics and that the point
// it picks starts an instruction inside the code, with a frame only for
// entry-only probes.
func FuzzEntryPoint(f *testing.F) {
	f.Add(wtimeCode, true)
	f.Add(testCode, false)
	f.Add([]byte{0xf3, 0x0f, 0x1e, 0xfa, 0x55}, false)
	for _, p := range cetPrologues {
		f.Add(p.code, false)
		f.Add(p.code, true)
	}
	f.Fuzz(func(t *testing.T, code []byte, entryOnly bool) {
		off, frame := EntryPoint(code, entryOnly)
		if off == 0 {
			if frame != 0 {
				t.Fatalf("EntryPoint = (0, %#x): a frame at the entry", frame)
			}
			return
		}
		if off >= uint64(len(code)) || (frame != 0 && !entryOnly) || frame%8 != 0 {
			t.Fatalf("EntryPoint = (%#x, %#x) in %d bytes (entry-only %v)", off, frame, len(code), entryOnly)
		}
		if off < 4 && endbrAt(code) != 0 {
			t.Fatalf("EntryPoint = %#x: inside the endbr at the entry", off)
		}
		if !emulated(mustDecode(t, code[off:])) {
			t.Fatalf("EntryPoint = %#x: not an emulated instruction", off)
		}
	})
}

func mustDecode(t *testing.T, b []byte) x86asm.Inst {
	in, err := x86asm.Decode(b, 64)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// Prologues of Debian 13's Open MPI 5.0.7 libmpi.so.40 and MPICH 4.2.1
// libmpich.so.12, built with CET: every function begins with endbr64
// (gdb x/24xb on the packaged files), cut after a whole instruction:
// EntryPoint must decode all the code it is given.
var cetPrologues = []struct {
	name      string
	code      []byte
	off       uint64 // with a return probe
	onlyOff   uint64 // entry-only
	onlyFrame uint64
}{
	// endbr64; push %r15; mov %rdi,%r10; mov %rdx,%r15; push %r14
	{"ompi5 PMPI_Send", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x57, 0x49, 0x89, 0xfa, 0x49, 0x89, 0xd7, 0x41, 0x56, 0x45, 0x89,
		0xc6, 0x41, 0x55, 0x41, 0x54, 0x41, 0x89, 0xf4}, 4, 4, 0},
	{"ompi5 PMPI_Allreduce", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x57, 0x49, 0x89, 0xfa, 0x49, 0x89, 0xf3, 0x41, 0x56, 0x49, 0x89,
		0xce, 0x41, 0x55, 0x41, 0x54, 0x41, 0x89, 0xd4}, 4, 4, 0},
	{"ompi5 PMPI_Init", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x57, 0x41, 0x56, 0x41, 0x55, 0x41, 0x54, 0x55, 0x53, 0x48, 0x89,
		0xfb, 0x48, 0x8d, 0x3d, 0xf5, 0xaa, 0x20, 0x00}, 4, 4, 0},
	// endbr64; mov 0x26fbe5(%rip),%rax; push %r12
	{"ompi5 PMPI_Test", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8b, 0x05, 0xe5, 0xfb, 0x26, 0x00, 0x41, 0x54, 0x49, 0x89, 0xfc,
		0x55, 0x48, 0x89, 0xd5, 0x53, 0x80, 0x38, 0x00}, 11, 11, 0},
	// endbr64; mov 0x28e885(%rip),%rax; cmpb $0,(%rax); je +0xd
	{"ompi5 PMPI_Finalize", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8b, 0x05, 0x85, 0xe8, 0x28, 0x00, 0x80, 0x38, 0x00, 0x74, 0x0d,
		0x48, 0x8b, 0x05, 0x29, 0xf3, 0x28, 0x00}, 14, 14, 0},
	// endbr64; sub $0x28,%rsp; mov $1,%edi; mov %fs:0x28,%rsi;
	// mov %rsi,0x18(%rsp); mov %rsp,%rsi; call clock_gettime
	{"ompi5 PMPI_Wtime", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x28, 0xbf, 0x01, 0x00, 0x00, 0x00, 0x64, 0x48, 0x8b,
		0x34, 0x25, 0x28, 0x00, 0x00, 0x00, 0x48, 0x89, 0x74, 0x24, 0x18, 0x48, 0x89, 0xe6, 0xe8, 0xbd,
		0x8e, 0xf7, 0xff}, 0, 0x1e, 0x28},
	// endbr64; push %rbx; mov %ecx,%eax; sub $0x30,%rsp
	{"ompi5 ompi_errhandler_invoke", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x53, 0x89, 0xc8, 0x48, 0x83, 0xec, 0x30, 0x89, 0x4c, 0x24, 0x0c}, 4, 4, 0},
	{"mpich4 PMPI_Send", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x57, 0x41, 0x56, 0x41, 0x55, 0x45, 0x89, 0xc5, 0x41, 0x54}, 4, 4, 0},
	{"mpich4 PMPI_Allreduce", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x57, 0x41, 0x56, 0x45, 0x89, 0xce, 0x41, 0x55, 0x41, 0x89, 0xd5}, 4, 4, 0},
	// endbr64; lea 0x30fa135(%rip),%rax; push %r12
	{"mpich4 PMPI_Init", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8d, 0x05, 0x35, 0xa1, 0x0f, 0x03, 0x41, 0x54, 0x55}, 11, 11, 0},
	// endbr64; push %rbx; sub $0x30,%rsp
	{"mpich4 PMPI_Wtime", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x53, 0x48, 0x83, 0xec, 0x30}, 4, 4, 0},
	// endbr64; xor %r8d,%r8d (an argument register); jmp MPII_Comm_get_attr@plt
	{"mpich4 PMPI_Comm_get_attr", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x45, 0x31, 0xc0, 0xe9, 0xf4, 0x9e, 0xfb, 0xff}, 0, 7, 0},
	// endbr64; jmp (a tail jump to the implementation)
	{"mpich4 PMPI_Waitall", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0xe9, 0x07, 0x5f, 0xf2, 0xff}, 4, 4, 0},
}

func TestEntryPointCET(t *testing.T) {
	for _, p := range cetPrologues {
		if off, frame := EntryPoint(p.code, false); off != p.off || frame != 0 {
			t.Errorf("%s: EntryPoint = (%#x, %#x), want (%#x, 0)", p.name, off, frame, p.off)
		}
		if off, frame := EntryPoint(p.code, true); off != p.onlyOff || frame != p.onlyFrame {
			t.Errorf("%s entry-only: EntryPoint = (%#x, %#x), want (%#x, %#x)", p.name, off, frame, p.onlyOff, p.onlyFrame)
		}
	}
	endbr := []byte{0xf3, 0x0f, 0x1e, 0xfa}
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	tests := []struct {
		name       string
		code       []byte
		entryOnly  bool
		off, frame uint64
	}{
		{"endbr64; push %rbx", cat(endbr, []byte{0x53}), false, 4, 0},
		{"endbr64 alone", endbr, false, 0, 0},
		{"endbr64 cut short", endbr[:3], false, 0, 0},
		// endbr64; push %rbx; ...; jmp back to the push: a loop would be
		// counted as calls.
		{"endbr64 then a jump target", cat(endbr, []byte{0x53, 0x90, 0xeb, 0xfc}), false, 0, 0},
		// endbr64; mov 0x10(%rip),%rax; push %r12; jmp back to the mov
		{"endbr64; mov (a jump target); push", cat(endbr, []byte{0x48, 0x8b, 0x05, 0x10, 0, 0, 0, 0x41, 0x54, 0xeb, 0xf5}), false, 0, 0},
		{"endbr64; sub $0x18,%rsp; call", cat(endbr, []byte{0x48, 0x83, 0xec, 0x18, 0xe8, 0, 0, 0, 0}), false, 0, 0},
		{"endbr64; sub $0x18,%rsp; call, entry-only", cat(endbr, []byte{0x48, 0x83, 0xec, 0x18, 0xe8, 0, 0, 0, 0}), true, 8, 0x18},
		{"endbr64; endbr64; push: the second is an indirect jump's target", cat(endbr, endbr, []byte{0x53}), false, 0, 0},
		{"endbr32; push", []byte{0xf3, 0x0f, 0x1e, 0xfb, 0x53}, false, 0, 0},
		{"endbr64; mov $1,%edi; push: an argument overwritten", cat(endbr, []byte{0xbf, 0x01, 0, 0, 0, 0x53}), false, 0, 0},
		{"endbr64; ud2", cat(endbr, []byte{0x0f, 0x0b}), false, 0, 0},
		// endbr64; push %rbx; then bytes that decode as nothing: a jump
		// back into the prologue could hide there.
		{"endbr64; push; undecodable", cat(endbr, []byte{0x53, 0x0f, 0xff}), false, 0, 0},
	}
	for _, tt := range tests {
		off, frame := EntryPoint(tt.code, tt.entryOnly)
		if off != tt.off || frame != tt.frame {
			t.Errorf("%s: EntryPoint = (%#x, %#x), want (%#x, %#x)", tt.name, off, frame, tt.off, tt.frame)
		}
	}
}
