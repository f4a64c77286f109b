package mpiabi

import (
	"debug/elf"
	"os"
	"slices"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

func TestCallNames(t *testing.T) {
	c := map[string]string{
		"MPI_Send": "MPI_Send", "PMPI_Send": "MPI_Send", "MPI_Comm_rank": "MPI_Comm_rank",
		"MPI_SEND": "", "MPI_Bcast_f": "", "MPI_Bcast_f08": "", "ompi_bcast_f": "", "MPI_": "", "mpi_send_": "",
	}
	for sym, want := range c {
		got, ok := mpiCName(sym)
		if got != want || ok != (want != "") {
			t.Errorf("mpiCName(%q) = %q, %v; want %q", sym, got, ok, want)
		}
	}
	f := map[string]string{
		"mpi_bcast_": "MPI_Bcast", "pmpi_comm_rank_": "MPI_Comm_rank", "mpi_bcast__": "", "mpi_bcast": "",
		"mpi_bcast_f08ts_": "", "MPI_BCAST": "", "mpi__": "",
	}
	for sym, want := range f {
		got, ok := fortranCName(sym)
		if got != want || ok != (want != "") {
			t.Errorf("fortranCName(%q) = %q, %v; want %q", sym, got, ok, want)
		}
	}
}

// TestFunctionsOfRealLibraries reads Debian's Open MPI and MPICH libraries:
// every C function is found once per address, under its MPI_ name, and the
// Fortran bindings name the C call they implement.
func TestFunctionsOfRealLibraries(t *testing.T) {
	libs := []struct {
		path    string
		fortran bool
		min     int
		want    []string
	}{
		{"/usr/lib/x86_64-linux-gnu/libmpi.so.40", false, 350, []string{"MPI_Send", "MPI_Allreduce", "MPI_Init", "MPI_Ibcast"}},
		{"/usr/lib/x86_64-linux-gnu/libmpich.so.12", false, 350, []string{"MPI_Send", "MPI_Allreduce", "MPI_Init"}},
		{"/usr/lib/x86_64-linux-gnu/libmpi_mpifh.so.40", true, 300, []string{"MPI_Bcast", "MPI_Allreduce", "MPI_Init"}},
		{"/usr/lib/x86_64-linux-gnu/libmpichfort.so.12", true, 300, []string{"MPI_Bcast", "MPI_Allreduce", "MPI_Init"}},
	}
	for _, l := range libs {
		t.Run(l.path, func(t *testing.T) {
			f := openLibrary(t, l.path)
			var fns []Function
			var err error
			if l.fortran {
				fns, err = FortranBindings(f)
			} else {
				fns, err = MPIFunctions(f)
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(fns) < l.min {
				t.Errorf("%d functions, want at least %d", len(fns), l.min)
			}
			addrs := map[uint64]bool{}
			var calls []string
			for _, fn := range fns {
				if addrs[fn.Value] {
					t.Errorf("address %#x listed twice", fn.Value)
				}
				addrs[fn.Value] = true
				calls = append(calls, fn.Call)
				if !l.fortran && fn.Name != fn.Call && fn.Name != "P"+fn.Call {
					t.Errorf("%s listed as call %s", fn.Name, fn.Call)
				}
			}
			for _, w := range l.want {
				if !slices.Contains(calls, w) {
					t.Errorf("%s not found", w)
				}
			}
		})
	}
}

// TestJumpAliases checks the MPI calls Debian 12's MPICH makes a jump
// into an unnamed body (and that nothing in its Open MPI, where every
// jump goes to a named function, is taken for a blocking call).
func TestJumpAliases(t *testing.T) {
	libs := []struct {
		path string
		want []string
	}{
		{"/usr/lib/x86_64-linux-gnu/libmpich.so.12", []string{"MPI_Waitany", "MPI_Waitsome", "MPI_Testany", "MPI_Testsome", "MPI_Startall"}},
		{"/usr/lib/x86_64-linux-gnu/libmpi.so.40", nil},
	}
	for _, l := range libs {
		t.Run(l.path, func(t *testing.T) {
			f := openLibrary(t, l.path)
			al, err := JumpAliases(f)
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]uint64{}
			for to, n := range al {
				names[n] = to
			}
			for _, w := range l.want {
				if _, ok := names[w]; !ok {
					t.Errorf("%s is not a jump alias: %v", w, names)
				}
			}
			for _, blocking := range []string{"MPI_Recv", "MPI_Wait", "MPI_Barrier", "MPI_Allreduce"} {
				if _, ok := names[blocking]; ok {
					t.Errorf("%s taken for a jump alias", blocking)
				}
			}
		})
	}
}

// openLibrary opens an installed library; a missing one is a skip (a
// failure under MPIPROBE_E2E=require).
func openLibrary(t *testing.T, path string) *elf.File {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		mpitest.Require(t, err.Error())
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
