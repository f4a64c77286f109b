package layout

import (
	"debug/elf"
	"os"
	"strings"
	"testing"
)

// elfCode reads a file's .text for InferFreeList, and the symbol's address
// and size.
func elfCode(t *testing.T, path, sym string) (Code, uint64, int) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	text := f.Section(".text")
	b, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == sym {
			return func(addr uint64, n int) []byte {
				if addr < text.Addr || addr-text.Addr+uint64(n) > uint64(len(b)) {
					return nil
				}
				return b[addr-text.Addr : addr-text.Addr+uint64(n)]
			}, s.Value, int(s.Size)
		}
	}
	t.Fatalf("%s defines no %s", path, sym)
	return nil, 0, 0
}

// bytesCode serves b as the code at address 0.
func bytesCode(b []byte) Code {
	return func(addr uint64, n int) []byte {
		if addr+uint64(n) > uint64(len(b)) {
			return nil
		}
		return b[addr : addr+uint64(n)]
	}
}

// TestInferFreeList reads Debian's libopen-pal, whose layout the table of
// verified builds holds (+80, +88, +144, checked against the headers'
// DWARF), and hand-assembled shapes, among them those it must refuse.
func TestInferFreeList(t *testing.T) {
	const pal = "/usr/lib/x86_64-linux-gnu/libopen-pal.so.40"
	t.Run("Debian's libopen-pal", func(t *testing.T) {
		if _, err := os.Stat(pal); err != nil {
			t.Skipf("no %s (Debian's libopenmpi3): %v", pal, err)
		}
		code, addr, size := elfCode(t, pal, "opal_free_list_grow_st")
		got, err := InferFreeList(code, addr, size)
		if err != nil {
			t.Fatal(err)
		}
		if want := (FreeList{MaxToAlloc: 80, NumAllocated: 88, FragClass: 144, ClassSeen: true}); got != want {
			t.Errorf("InferFreeList = %+v, want %+v", got, want)
		}
	})
	var (
		maxLoad   = []byte{0x48, 0x8b, 0x47, 0x50}       // mov 0x50(%rdi),%rax
		testRax   = []byte{0x48, 0x85, 0xc0}             // test %rax,%rax
		numLoad   = []byte{0x48, 0x8b, 0x57, 0x58}       // mov 0x58(%rdi),%rdx
		farLoad   = []byte{0x48, 0x8b, 0x57, 0x60}       // mov 0x60(%rdi),%rdx
		copyRdi   = []byte{0x48, 0x89, 0xfd}             // mov %rdi,%rbp
		maxViaRbp = []byte{0x48, 0x8b, 0x45, 0x50}       // mov 0x50(%rbp),%rax
		numViaRbp = []byte{0x48, 0x8b, 0x55, 0x58}       // mov 0x58(%rbp),%rdx
		clobber   = []byte{0x48, 0x31, 0xff}             // xor %rdi,%rdi
		call      = []byte{0xe8, 0x00, 0x00, 0x00, 0x00} // call .+5
		classLoad = []byte{0x48, 0x8b, 0x85, 0x90, 0x00, 0x00, 0x00}
		ret       = []byte{0xc3}
	)
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	for _, tt := range []struct {
		name    string
		code    []byte
		want    FreeList
		wantErr string
	}{
		{"the shape", cat(maxLoad, testRax, numLoad, call, ret), FreeList{80, 88, 144, false}, ""},
		{"through a copy, class loaded after a call", cat(copyRdi, maxViaRbp, testRax, numViaRbp, call, classLoad, ret), FreeList{80, 88, 144, true}, ""},
		{"no test", cat(maxLoad, numLoad, call, ret), FreeList{}, "tested against zero"},
		{"not adjacent", cat(maxLoad, testRax, farLoad, call, ret), FreeList{}, "not adjacent"},
		{"the list pointer overwritten", cat(clobber, maxLoad, testRax, numLoad, ret), FreeList{}, "tested against zero"},
		{"the second load after the call", cat(maxLoad, testRax, call, numLoad, ret), FreeList{}, "no second load"},
		{"cut in the middle of an instruction", cat(maxLoad, []byte{0x48, 0x8b}), FreeList{}, "decode"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := InferFreeList(bytesCode(tt.code), 0, len(tt.code))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("InferFreeList = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// FuzzInferFreeList: any bytes give a layout or an error, never a panic,
// and a layout always has the declared shape.
func FuzzInferFreeList(f *testing.F) {
	f.Add([]byte{0x48, 0x8b, 0x47, 0x50, 0x48, 0x85, 0xc0, 0x48, 0x8b, 0x57, 0x58, 0xc3})
	f.Add([]byte{0x0f, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := InferFreeList(bytesCode(b), 0, len(b))
		if err == nil && (l.NumAllocated != l.MaxToAlloc+8 || l.FragClass != l.MaxToAlloc+64) {
			t.Fatalf("layout %+v out of shape", l)
		}
	})
}
