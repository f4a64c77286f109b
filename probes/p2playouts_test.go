package probes_test

import (
	"debug/elf"
	"os"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/probes"
)

// TestOB1LayoutFromDWARF reads the ob1 request layout from the DWARF of a
// library built against the installed Open MPI headers
// (testdata/ob1_layout.c, the types Open MPI's own libmpi.so describes for
// its debugger support) and the class symbols of Debian's ob1, and checks
// it equals the table's entry for that build, field by field; then the
// failures: a file without DWARF, an ob1 without the class symbols.
func TestOB1LayoutFromDWARF(t *testing.T) {
	if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/openmpi/include/openmpi/ompi/mca/pml/base/pml_base_request.h"); err != nil {
		mpitest.Require(t, "Open MPI's headers (libopenmpi-dev)")
	}
	if _, err := os.Stat(debianOb1File); err != nil {
		mpitest.Require(t, "Debian's libopenmpi3 ("+debianOb1File+")")
	}
	open := func(p string) *elf.File {
		f, err := elf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	withDWARF := open(mpitest.BuildLib(t, mpitest.OpenMPI(), "ob1_layout"))
	ob1 := open(debianOb1File)
	got, err := probes.OB1LayoutFromDWARF(withDWARF, ob1)
	if err != nil {
		t.Fatal(err)
	}
	const debianOb1Build = "cc5a7ec5e99993dcc0c52e06d8a1f2b4699cac25"
	want, ok := probes.OB1LayoutOf(debianOb1Build)
	if !ok {
		t.Fatalf("the table lost Debian's ob1 build %s", debianOb1Build)
	}
	if got != want {
		t.Errorf("from DWARF:\n%+v\nthe table:\n%+v", got, want)
	}

	stripped := open(mpitest.DebianPal)
	if _, err := probes.OB1LayoutFromDWARF(stripped, ob1); err == nil || !strings.Contains(err.Error(), "no DWARF") {
		t.Errorf("a libmpi without DWARF: err %v, want it to say no DWARF", err)
	}
	if _, err := probes.OB1LayoutFromDWARF(withDWARF, withDWARF); err == nil || !strings.Contains(err.Error(), "request_t_class") {
		t.Errorf("an ob1 without the class symbols: err %v, want it to name them", err)
	}
}
