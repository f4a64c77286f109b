package probes

import (
	"os"
	"testing"
)

// trixieLibs is Debian 13's MPI libraries, built with CET, in the root
// the end-to-end tests of other builds use (absent elsewhere: the test
// skips).
const trixieLibs = "/var/tmp/mpiprobe-roots/trixie/usr/lib/x86_64-linux-gnu/"

// TestEntryPointsCET checks where the attachers put the probes of real
// functions of Debian 13's Open MPI 5.0.7 and MPICH 4.2.1 (every one
// begins with endbr64), reading their whole code from the files, and that
// MPIPROBE_NO_ENTRY_MOVE=1 keeps them at the entry.
func TestEntryPointsCET(t *testing.T) {
	type want struct{ pair, only uint64 }
	for _, lib := range []struct {
		file string
		want map[string]want
	}{
		{"libmpi.so.40", map[string]want{
			"PMPI_Send": {4, 4}, "PMPI_Allreduce": {4, 4}, "PMPI_Init": {4, 4},
			"PMPI_Test": {11, 11}, "PMPI_Waitall": {11, 11}, "PMPI_Finalize": {14, 14},
			"PMPI_Wtime": {0, 0x1e}, "PMPI_Comm_rank": {4, 4}, "ompi_errhandler_invoke": {4, 4},
		}},
		{"libmpich.so.12", map[string]want{
			"PMPI_Send": {4, 4}, "PMPI_Allreduce": {4, 4}, "PMPI_Init": {11, 11}, "PMPI_Finalize": {11, 11},
			"PMPI_Test": {4, 4}, "PMPI_Wtime": {4, 4}, "PMPI_Comm_rank": {4, 4},
			"PMPI_Comm_get_attr": {0, 7}, "PMPI_Waitall": {4, 4},
		}},
	} {
		path := trixieLibs + lib.file
		if _, err := os.Stat(path); err != nil {
			t.Skipf("no Debian 13 root: %v", err)
		}
		var syms []string
		for s := range lib.want {
			syms = append(syms, s)
		}
		for _, only := range []bool{false, true} {
			got, err := EntryPoints(path, syms, only)
			if err != nil {
				t.Fatal(err)
			}
			for s, w := range lib.want {
				if exp := map[bool]uint64{false: w.pair, true: w.only}[only]; got[s] != exp {
					t.Errorf("%s %s (entry-only %v): probe at +%#x, want +%#x", lib.file, s, only, got[s], exp)
				}
			}
		}
		t.Setenv(noEntryMoveEnv, "1")
		for _, only := range []bool{false, true} {
			got, err := EntryPoints(path, syms, only)
			if err != nil {
				t.Fatal(err)
			}
			for s, off := range got {
				if off != 0 {
					t.Errorf("%s %s (entry-only %v) with %s=1: probe at +%#x, want the entry", lib.file, s, only, noEntryMoveEnv, off)
				}
			}
		}
		t.Setenv(noEntryMoveEnv, "")
	}
}
