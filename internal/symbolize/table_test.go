package symbolize

import (
	"debug/elf"
	"slices"
	"testing"
)

func TestSymtabLookup(t *testing.T) {
	g, w, l := elf.STB_GLOBAL, elf.STB_WEAK, elf.STB_LOCAL
	funcs := []symbol{
		// Aliases: the plain name wins over underscored ones.
		{value: 0x100, size: 0x20, name: "__libc_read", section: 1, bind: g},
		{value: 0x100, size: 0x20, name: "read", section: 1, bind: w},
		{value: 0x100, size: 0x20, name: "__read", section: 1, bind: g},
		// An enclosing function with a nested one.
		{value: 0x200, size: 0x100, name: "outer", section: 1, bind: g},
		{value: 0x240, size: 0x10, name: "inner", section: 1, bind: l},
		// Same name rank: global beats local; sized beats unsized.
		{value: 0x400, size: 0x10, name: "loc", section: 1, bind: l},
		{value: 0x400, size: 0x10, name: "glo", section: 1, bind: g},
		{value: 0x400, size: 0, name: "a", section: 1, bind: g},
		// A symbol without size, at the end of section 1.
		{value: 0x500, size: 0, name: "nosize", section: 1, bind: g},
		// A sized symbol in section 2 followed by a gap.
		{value: 0x1000, size: 0x10, name: "sized", section: 2, bind: g},
		// A symbol without size, in section 2, but asked about section 3.
		{value: 0x1800, size: 0, name: "edge", section: 2, bind: g},
	}
	secs := []secRange{
		{addr: 0x100, end: 0x600, index: 1},
		{addr: 0x1000, end: 0x1900, index: 2},
		{addr: 0x1900, end: 0x2000, index: 3},
	}
	tab := makeSymtab(slices.Clone(funcs), secs)
	tests := []struct {
		pc   uint64
		want string // "" for none
	}{
		{0xff, ""},
		{0x100, "read"},
		{0x11f, "read"},
		{0x120, ""}, // past read, before outer: nearest lower is sized
		{0x200, "outer"},
		{0x23f, "outer"},
		{0x240, "inner"},
		{0x24f, "inner"},
		{0x250, "outer"},
		{0x2ff, "outer"},
		{0x300, ""},
		{0x405, "glo"},
		{0x500, "nosize"},
		{0x5ff, "nosize"},
		{0x600, ""}, // outside any section
		{0x1008, "sized"},
		{0x1010, ""},
		{0x18ff, "edge"},
		{0x1900, ""}, // other section than edge
	}
	for _, tc := range tests {
		s, ok := tab.lookup(tc.pc)
		got := ""
		if ok {
			got = s.name
		}
		if got != tc.want {
			t.Errorf("lookup(%#x) = %q, want %q", tc.pc, got, tc.want)
		}
	}
	if got := len(tab.syms); got != 7 {
		t.Errorf("%d symbols after merging aliases, want 7", got)
	}
}

func TestSymtabEmpty(t *testing.T) {
	var tab symtab
	if _, ok := tab.lookup(0x1234); ok {
		t.Error("empty table found a symbol")
	}
	var lines linetab
	if _, _, ok := lines.row(0x1234); ok {
		t.Error("empty line table found a line")
	}
}

func TestMergeRows(t *testing.T) {
	// Two sequences, given out of order: [0x200, 0x240) and [0x100, 0x200);
	// the second ends where the first starts. Rows of one address: the
	// last one that does not end a sequence wins.
	rows := []lineRow{
		{addr: 0x200, line: 20, file: 1},
		{addr: 0x200, line: 21, file: 1},
		{addr: 0x220, line: 22, file: 1},
		{addr: 0x240, end: true, file: 1},
		{addr: 0x100, line: 10, file: 0},
		{addr: 0x180, line: 11, file: 0},
		{addr: 0x180, line: 12, file: 0},
		{addr: 0x200, end: true, file: 0},
	}
	tab := linetab{rows: mergeRows(rows), files: []string{"a.c", "b.c"}}
	tests := []struct {
		pc   uint64
		file string
		line int
	}{
		{0xff, "", 0},
		{0x100, "a.c", 10},
		{0x17f, "a.c", 10},
		{0x180, "a.c", 12},
		{0x1ff, "a.c", 12},
		{0x200, "b.c", 21},
		{0x221, "b.c", 22},
		{0x240, "", 0},
		{0x1000, "", 0},
	}
	for _, tc := range tests {
		f, l, ok := tab.row(tc.pc)
		file, line := "", 0
		if ok {
			file, line = tab.files[f], int(l)
		}
		if file != tc.file || line != tc.line {
			t.Errorf("lookup(%#x) = %s:%d, want %s:%d", tc.pc, file, line, tc.file, tc.line)
		}
	}
}
