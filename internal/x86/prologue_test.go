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
