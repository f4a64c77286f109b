package elfx

import (
	"bytes"
	"debug/elf"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// TestStructFields reads opal_free_list_t from the DWARF of a library
// compiled against the installed Open MPI headers, and the failures: a
// missing field, a missing struct, a file without DWARF.
func TestStructFields(t *testing.T) {
	if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/openmpi/include/openmpi/opal/class/opal_free_list.h"); err != nil {
		mpitest.Require(t, "Open MPI's headers (libopenmpi-dev)")
	}
	lib := mpitest.BuildLib(t, mpitest.OpenMPI(), "freelist_layout")
	withDWARF, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer withDWARF.Close()
	if _, err := os.Stat(mpitest.DebianPal); err != nil {
		mpitest.Require(t, "Debian's libopenmpi3 ("+mpitest.DebianPal+")")
	}
	stripped, err := elf.Open(mpitest.DebianPal)
	if err != nil {
		t.Fatal(err)
	}
	defer stripped.Close()

	tests := []struct {
		name      string
		file      *elf.File
		strct     string
		fields    []string
		want      []int64
		wantError string
	}{
		// The offsets of Debian 12's Open MPI 4.1.4 headers on x86-64,
		// which probes' table of verified builds also holds.
		{"fields in the order asked", withDWARF, "opal_free_list_t", []string{"fl_frag_class", "fl_max_to_alloc", "fl_num_allocated"}, []int64{144, 80, 88}, ""},
		{"the object header", withDWARF, "opal_free_list_t", []string{"super"}, []int64{0}, ""},
		{"no field", withDWARF, "opal_free_list_t", []string{"fl_max_to_alloc", "fl_no_such_field"}, nil, "opal_free_list_t has no field fl_no_such_field"},
		{"no struct", withDWARF, "no_such_struct_t", []string{"x"}, nil, "no complete no_such_struct_t in its DWARF"},
		{"no DWARF", stripped, "opal_free_list_t", []string{"fl_max_to_alloc"}, nil, "no DWARF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := StructFields(tt.file, tt.strct, tt.fields...)
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("err %v, want it to contain %q", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("StructFields(%s, %q) = %v, want %v", tt.strct, tt.fields, got, tt.want)
			}
		})
	}
}

// FuzzStructFields reads arbitrary bytes as an ELF file with DWARF, as
// mpiprobe reads any library or debug file a process maps: it must return
// an offset for every field asked or an error, never panic.
func FuzzStructFields(f *testing.F) {
	if b, err := os.ReadFile(mpitest.DebianPal); err == nil && len(b) < 1<<22 {
		f.Add(b)
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	fields := []string{"fl_max_to_alloc", "fl_num_allocated", "fl_frag_class"}
	f.Fuzz(func(t *testing.T, b []byte) {
		ef, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			return
		}
		offs, err := StructFields(ef, "opal_free_list_t", fields...)
		if err == nil && len(offs) != len(fields) {
			t.Fatalf("%d offsets for %d fields", len(offs), len(fields))
		}
	})
}

// TestEnumValues reads enumerators of Open MPI's request enums from the
// DWARF of a library built against the installed headers, in the order
// asked, and names the one missing.
func TestEnumValues(t *testing.T) {
	if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/openmpi/include/openmpi/ompi/mca/pml/base/pml_base_request.h"); err != nil {
		mpitest.Require(t, "Open MPI's headers (libopenmpi-dev)")
	}
	f, err := elf.Open(mpitest.BuildLib(t, mpitest.OpenMPI(), "ob1_layout"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := EnumValues(f, "MCA_PML_REQUEST_PROBE", "OMPI_REQUEST_ACTIVE", "MCA_PML_REQUEST_NULL")
	if err != nil {
		t.Fatal(err)
	}
	// ompi/request/request.h and ompi/mca/pml/base/pml_base_request.h.
	if want := []int64{4, 2, 0}; !slices.Equal(got, want) {
		t.Errorf("EnumValues = %v, want %v", got, want)
	}
	if _, err := EnumValues(f, "OMPI_REQUEST_ACTIVE", "NO_SUCH_ENUMERATOR"); err == nil || !strings.Contains(err.Error(), "no enumerator NO_SUCH_ENUMERATOR") {
		t.Errorf("a missing enumerator: err %v", err)
	}
}
