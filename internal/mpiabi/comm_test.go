package mpiabi

import (
	"debug/elf"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// TestCommLayoutOfInstalledLibraries looks the installed MPI libraries up
// by build id in the layout table and checks the addresses there against
// the files.
func TestCommLayoutOfInstalledLibraries(t *testing.T) {
	libs := []struct {
		path string
		kind CommLayoutKind
	}{
		{"/usr/lib/x86_64-linux-gnu/libmpi.so.40", LayoutOMPI},
		{"/usr/lib/x86_64-linux-gnu/libmpich.so.12", LayoutMPICH},
	}
	for _, l := range libs {
		t.Run(filepath.Base(l.path), func(t *testing.T) {
			if _, err := os.Stat(l.path); err != nil {
				mpitest.Require(t, err.Error())
				return
			}
			f, err := elf.Open(l.path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			id, err := elfx.BuildID(f)
			if err != nil {
				t.Fatalf("BuildID: %v", err)
			}
			layout, ok := CommLayoutOf(id)
			if !ok {
				t.Fatalf("build %s of %s is not in the layout table (a new Debian package?)", id, l.path)
			}
			if layout.Kind != l.kind {
				t.Errorf("layout of %s has kind %d, want %d", l.path, layout.Kind, l.kind)
			}
			checkLayoutAddresses(t, f, layout)
		})
	}
}

// checkLayoutAddresses checks a layout's addresses against the library:
// Open MPI's class is the exported ompi_communicator_t_class; MPICH's
// object tables lie in its writable data, the builtin table right after
// the direct one.
func checkLayoutAddresses(t *testing.T, f *elf.File, l CommLayout) {
	t.Helper()
	switch l.Kind {
	case LayoutOMPI:
		syms, err := f.DynamicSymbols()
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(syms, func(s elf.Symbol) bool { return s.Name == "ompi_communicator_t_class" })
		if i < 0 {
			t.Fatalf("no dynamic symbol ompi_communicator_t_class")
		}
		if syms[i].Value != l.ClassAddr {
			t.Errorf("ClassAddr = %#x, ompi_communicator_t_class is at %#x", l.ClassAddr, syms[i].Value)
		}
	case LayoutMPICH:
		var lo, hi uint64
		for _, name := range []string{".data", ".bss"} {
			s := f.Section(name)
			if s == nil {
				t.Fatalf("no %s section", name)
			}
			if lo == 0 || s.Addr < lo {
				lo = s.Addr
			}
			hi = max(hi, s.Addr+s.Size)
		}
		obj := uint64(l.ObjSize)
		for _, r := range []struct {
			name       string
			start, end uint64
		}{
			{"MPIR_Comm_direct", l.Direct, l.Direct + uint64(l.DirectCount)*obj},
			{"MPIR_Comm_builtin", l.Builtin, l.Builtin + 3*obj},
			{"MPIR_Comm_mem block array pointer", l.Mem + uint64(l.IndBlocksOff), l.Mem + uint64(l.IndBlocksOff) + 8},
		} {
			if r.start < lo || r.end > hi {
				t.Errorf("%s [%#x, %#x) is outside .data and .bss [%#x, %#x)", r.name, r.start, r.end, lo, hi)
			}
		}
		if l.Direct+uint64(l.DirectCount)*obj != l.Builtin {
			t.Errorf("MPIR_Comm_direct[%d] ends at %#x, MPIR_Comm_builtin starts at %#x", l.DirectCount,
				l.Direct+uint64(l.DirectCount)*obj, l.Builtin)
		}
	}
}

func TestCommLayoutOf(t *testing.T) {
	tests := []struct {
		build string
		kind  CommLayoutKind
	}{
		{"2a2f4d8c4f8dc5dcc63f6789a50f3ab49f61e168", LayoutOMPI},
		{"15ff29242f0f6336eb8096d953e03de259b65bb4", LayoutMPICH},
	}
	for _, tt := range tests {
		l, ok := CommLayoutOf(tt.build)
		if !ok {
			t.Errorf("CommLayoutOf(%s): not found", tt.build)
			continue
		}
		if l.Kind != tt.kind {
			t.Errorf("CommLayoutOf(%s).Kind = %d, want %d", tt.build, l.Kind, tt.kind)
		}
		if l.CIDMask == 0 || l.CIDOff == l.RankOff {
			t.Errorf("CommLayoutOf(%s) = %+v: context id and rank not set", tt.build, l)
		}
		switch l.Kind {
		case LayoutOMPI:
			if l.ClassAddr == 0 || l.GroupOff == 0 {
				t.Errorf("Open MPI layout %+v lacks its class or group", l)
			}
		case LayoutMPICH:
			// An MPICH handle's index is its low 26 bits: indirect ones
			// split them into block and index.
			if l.IndIndexMask != 1<<l.IndShift-1 {
				t.Errorf("IndIndexMask %#x, want the %d bits below IndShift", l.IndIndexMask, l.IndShift)
			}
			if got := l.IndBlockMask<<l.IndShift | l.IndIndexMask; got != 0x03ffffff {
				t.Errorf("block and index masks cover %#x, want 0x03ffffff", got)
			}
			if l.ObjSize == 0 || l.DirectCount == 0 || l.ObjSize%8 != 0 {
				t.Errorf("MPICH layout %+v: object size %#x or direct count %d", l, l.ObjSize, l.DirectCount)
			}
		}
	}
	for _, id := range []string{"", "deadbeef", "2A2F4D8C4F8DC5DCC63F6789A50F3AB49F61E168", "2a2f4d8c4f8dc5dcc63f6789a50f3ab49f61e16"} {
		if l, ok := CommLayoutOf(id); ok {
			t.Errorf("CommLayoutOf(%q) = %+v, true, want false", id, l)
		}
	}
}
