package elfx

import (
	"debug/elf"
	"os"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// TestSymbolOffsetDefaultVersion resolves libibverbs' versioned symbols to
// their default (@@) versions, as the real Debian library defines them.
func TestSymbolOffsetDefaultVersion(t *testing.T) {
	const lib = "/usr/lib/x86_64-linux-gnu/libibverbs.so.1"
	if _, err := os.Stat(lib); err != nil {
		mpitest.Require(t, "libibverbs1 ("+lib+")")
	}
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	table, err := ReadSymbols(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ibv_modify_srq", "ibv_get_async_event"} {
		var def, old uint64
		for _, s := range syms {
			if s.Name != name || s.Section == elf.SHN_UNDEF {
				continue
			}
			switch {
			case s.Version == "IBVERBS_1.1" && !s.VersionIndex.IsHidden():
				def = s.Value
			case s.Version == "IBVERBS_1.0":
				old = s.Value
			}
		}
		if def == 0 || old == 0 || def == old {
			t.Fatalf("%s: want distinct IBVERBS_1.1 and IBVERBS_1.0 definitions, got %#x and %#x", name, def, old)
		}
		off, found, versioned, err := table.Offset(name)
		if err != nil || !found || !versioned {
			t.Fatalf("%s: offset = %#x, %v, %v, %v", name, off, found, versioned, err)
		}
		// The offset by way of the section holding the code, not the
		// program headers Offset reads.
		text := f.Section(".text")
		if text == nil || def < text.Addr || def >= text.Addr+text.Size {
			t.Fatalf("%s at %#x: not in .text", name, def)
		}
		want := def - text.Addr + text.Offset
		if off != want {
			t.Errorf("%s: offset %#x, want the default version's %#x (1.0 is at %#x)", name, off, want, old)
		}
	}
	if _, found, _, err := table.Offset("ibv_no_such_function"); found || err != nil {
		t.Errorf("missing symbol: found=%v err=%v", found, err)
	}
	off, found, versioned, err := table.Offset("ibv_cmd_modify_srq")
	if err != nil || !found || versioned || off == 0 {
		t.Errorf("single-version symbol: %#x %v %v %v", off, found, versioned, err)
	}
}
