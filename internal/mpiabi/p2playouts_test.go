package mpiabi_test

import (
	"debug/elf"
	"os"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// TestOB1LayoutFromDWARF reads the ob1 request layout from the DWARF of a
// library built against the installed Open MPI headers
// (testdata/ob1_layout.c, the types Open MPI's own libmpi.so describes for
// its debugger support) and the class symbols of Debian's ob1, and checks
// it equals the table's entry for that build, field by field; then the
// failures: a file without DWARF, an ob1 without the class symbols.
func TestOB1LayoutFromDWARF(t *testing.T) {
	withDWARF := ob1LayoutFixture(t)
	if _, err := os.Stat(mpitest.DebianOb1); err != nil {
		mpitest.Require(t, "Debian's libopenmpi3 ("+mpitest.DebianOb1+")")
	}
	ob1 := openELFFile(t, mpitest.DebianOb1)
	got, err := mpiabi.OB1LayoutFromDWARF(withDWARF, ob1)
	if err != nil {
		t.Fatal(err)
	}
	const debianOb1Build = "cc5a7ec5e99993dcc0c52e06d8a1f2b4699cac25"
	want, ok := mpiabi.OB1LayoutOf(debianOb1Build)
	if !ok {
		t.Fatalf("the table lost Debian's ob1 build %s", debianOb1Build)
	}
	if got != want {
		t.Errorf("from DWARF:\n%+v\nthe table:\n%+v", got, want)
	}

	stripped := openELFFile(t, mpitest.DebianPal)
	if _, err := mpiabi.OB1LayoutFromDWARF(stripped, ob1); err == nil || !strings.Contains(err.Error(), "no DWARF") {
		t.Errorf("a libmpi without DWARF: err %v, want it to say no DWARF", err)
	}
	if _, err := mpiabi.OB1LayoutFromDWARF(withDWARF, withDWARF); err == nil || !strings.Contains(err.Error(), "request_t_class") {
		t.Errorf("an ob1 without the class symbols: err %v, want it to name them", err)
	}
}

// TestOMPICommLayoutFromDWARF reads the communicator layout from the same
// DWARF (testdata/ob1_layout.c, built against the installed headers, with
// its own ompi_communicator_t_class) and checks it against the table's
// entry for Debian's libmpi, whose headers they are; then a file without
// DWARF.
func TestOMPICommLayoutFromDWARF(t *testing.T) {
	got, err := mpiabi.OMPICommLayoutFromDWARF(ob1LayoutFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	const debianLibmpi = "2a2f4d8c4f8dc5dcc63f6789a50f3ab49f61e168"
	want, ok := mpiabi.CommLayoutOf(debianLibmpi)
	if !ok {
		t.Fatalf("the table lost Debian's libmpi %s", debianLibmpi)
	}
	// The fixture's class object is its own, and the DWARF leaves the
	// name out.
	want.ClassAddr, want.NameOff, want.NameLen = got.Layout.ClassAddr, 0, 0
	if got.Layout.ClassAddr == 0 || got.Layout != want {
		t.Errorf("from DWARF:\n%+v\nthe table:\n%+v", got.Layout, want)
	}
	if len(got.Fields) != 6 {
		t.Errorf("fields %+v, want the six it reads", got.Fields)
	}
	if _, err := mpiabi.OMPICommLayoutFromDWARF(openELFFile(t, mpitest.DebianPal)); err == nil || !strings.Contains(err.Error(), "no DWARF") {
		t.Errorf("a file without DWARF: err %v", err)
	}
}

// ob1LayoutFixture builds testdata/ob1_layout.c against the installed Open
// MPI headers and opens it.
func ob1LayoutFixture(t *testing.T) *elf.File {
	t.Helper()
	if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/openmpi/include/openmpi/ompi/mca/pml/base/pml_base_request.h"); err != nil {
		mpitest.Require(t, "Open MPI's headers (libopenmpi-dev)")
	}
	return openELFFile(t, mpitest.BuildLib(t, mpitest.OpenMPI(), "ob1_layout"))
}

// openELFFile opens an ELF file for the test's duration.
func openELFFile(t *testing.T, p string) *elf.File {
	t.Helper()
	f, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestOMPIName(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want uint64
	}{
		{map[string]string{"OMPI_MCA_ess_base_jobid": "1049690113", "OMPI_MCA_ess_base_vpid": "3"}, 3<<32 | 1049690113},
		{map[string]string{"OMPI_MCA_ess_base_jobid": "1049690113"}, 0},                                // no vpid
		{map[string]string{"OMPI_MCA_ess_base_jobid": "0", "OMPI_MCA_ess_base_vpid": "1"}, 0},          // no job
		{map[string]string{"OMPI_MCA_ess_base_jobid": "4294967296", "OMPI_MCA_ess_base_vpid": "1"}, 0}, // over 32 bits
		{map[string]string{"PMIX_NAMESPACE": "prterun-vm-21119@1", "PMIX_RANK": "1"}, 0},               // Open MPI 5
		{nil, 0},
	}
	for _, tt := range tests {
		if got := mpiabi.OMPIName(tt.env); got != tt.want {
			t.Errorf("OMPIName(%v) = %#x, want %#x", tt.env, got, tt.want)
		}
	}
}
