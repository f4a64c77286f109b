package elfx

import (
	"debug/elf"
	"os"
	"testing"
)

// sharedLib is a shared library as ld lays it out: the data segment's file
// offset and address differ by a page, the last segment has no file bytes.
var sharedLib = []*elf.Prog{
	{ProgHeader: elf.ProgHeader{Type: elf.PT_PHDR, Off: 0x40, Vaddr: 0x40, Filesz: 0x230}},
	{ProgHeader: elf.ProgHeader{Type: elf.PT_LOAD, Flags: elf.PF_R, Off: 0, Vaddr: 0, Filesz: 0x1000}},
	{ProgHeader: elf.ProgHeader{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_X, Off: 0x1000, Vaddr: 0x1000, Filesz: 0x5000}},
	{ProgHeader: elf.ProgHeader{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_W, Off: 0x6000, Vaddr: 0x7000, Filesz: 0x800, Memsz: 0x2000}},
	{ProgHeader: elf.ProgHeader{Type: elf.PT_DYNAMIC, Off: 0x9000, Vaddr: 0xa000, Filesz: 0x200}},
	{ProgHeader: elf.ProgHeader{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_W, Off: 0xb000, Vaddr: 0xd000, Filesz: 0}},
}

func TestLoads(t *testing.T) {
	s := Loads(sharedLib)
	if len(s) != 4 {
		t.Fatalf("Loads kept %d segments, want the 4 PT_LOAD", len(s))
	}
	if x := s.Exec(); len(x) != 1 || x[0].Off != 0x1000 {
		t.Errorf("Exec() = %+v, want the text segment", x)
	}
	if s := Loads(nil); len(s) != 0 {
		t.Errorf("Loads(nil) = %+v", s)
	}
}

func TestVaddr(t *testing.T) {
	page := uint64(os.Getpagesize())
	s := Segments{
		{Type: elf.PT_LOAD, Flags: elf.PF_R, Off: 0, Vaddr: 0, Filesz: 0x5a0},
		{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_X, Off: page, Vaddr: page, Filesz: 0x234},
		{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_W, Off: 3*page + 0xdd0, Vaddr: 4*page + 0xdd0, Filesz: 0x240, Memsz: 0x300},
		// An old-style layout where a read-only and an executable segment
		// share file bytes: the executable one wins.
		{Type: elf.PT_LOAD, Flags: elf.PF_R, Off: 8 * page, Vaddr: 0x100000, Filesz: 0x800},
		{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_X, Off: 8*page + 0x400, Vaddr: 0x200400, Filesz: 0x800},
	}
	tests := []struct {
		off, va uint64
		ok      bool
	}{
		{0x10, 0x10, true},
		{page + 0x20, page + 0x20, true},
		{page + 0x300, page + 0x300, true}, // page slack after the executable segment
		{3*page + 0xde0, 4*page + 0xde0, true},
		{2*page + 0x10, 0, false}, // beyond the executable segment's page
		{8*page + 0x500, 0x200500, true},
		{8*page + 0x100, 0x100100, true},
		{100 * page, 0, false},
	}
	for _, tc := range tests {
		va, ok := s.Vaddr(tc.off)
		if va != tc.va || ok != tc.ok {
			t.Errorf("Vaddr(%#x) = %#x, %v; want %#x, %v", tc.off, va, ok, tc.va, tc.ok)
		}
	}
}

func TestBias(t *testing.T) {
	exe := []*elf.Prog{
		{ProgHeader: elf.ProgHeader{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_X, Off: 0, Vaddr: 0x400000, Filesz: 0x2000}},
	}
	const base = 0x7f0000000000
	tests := []struct {
		name       string
		progs      []*elf.Prog
		start, off uint64
		want       uint64
		wantOK     bool
	}{
		{"first segment", sharedLib, base, 0, base, true},
		{"text segment", sharedLib, base + 0x1000, 0x1000, base, true},
		{"inside the text segment (split mapping)", sharedLib, base + 0x3000, 0x3000, base, true},
		{"data segment: address and offset differ", sharedLib, base + 0x7000, 0x6000, base, true},
		{"a segment with no file bytes", sharedLib, base + 0xd000, 0xb000, base, true},
		{"offset in no PT_LOAD (only in PT_DYNAMIC)", sharedLib, base + 0xa000, 0x9000, 0, false},
		{"offset past the file", sharedLib, base, 0x100000, 0, false},
		{"non-PIE executable", exe, 0x400000, 0, 0, true},
		{"no program headers", nil, base, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Loads(tt.progs).Bias(tt.start, tt.off)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Bias(start %#x, off %#x) = %#x, %v, want %#x, %v", tt.start, tt.off, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestOffset(t *testing.T) {
	s := Loads(sharedLib)
	tests := []struct {
		name   string
		segs   Segments
		addr   uint64
		off, n uint64
		ok     bool
	}{
		{"first byte", s, 0, 0, 0x1000, true},
		{"in the text", s, 0x1234, 0x1234, 0x5000 - 0x234, true},
		{"last text byte", s, 0x5fff, 0x5fff, 1, true},
		{"data: address and offset differ", s, 0x7010, 0x6010, 0x7f0, true},
		{"zero-filled tail of the data segment", s, 0x7800, 0, 0, false},
		{"between segments", s, 0x6800, 0, 0, false},
		{"segment without file bytes", s, 0xd000, 0, 0, false},
		{"executable only: data is not", s.Exec(), 0x7010, 0, 0, false},
		{"executable only: text is", s.Exec(), 0x2000, 0x2000, 0x4000, true},
		{"no segments", nil, 0x1000, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			off, n, ok := tt.segs.Offset(tt.addr)
			if off != tt.off || n != tt.n || ok != tt.ok {
				t.Errorf("Offset(%#x) = %#x, %#x, %v, want %#x, %#x, %v", tt.addr, off, n, ok, tt.off, tt.n, tt.ok)
			}
			if !ok {
				return
			}
			// The way back: the file offset converts to the same address.
			if va, ok := tt.segs.Vaddr(off); !ok || va != tt.addr {
				t.Errorf("Vaddr(Offset(%#x)) = %#x, %v", tt.addr, va, ok)
			}
		})
	}
}
