package layout

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// TestAnalyzeMPICHCET: Debian 13's MPICH 4.2.1 is built with CET, and
// every function starts with endbr64, which x86asm decodes as a lone rep
// prefix; the walk ended there and found no object table in
// PMPI_Comm_rank ("no object table found in PMPI_Comm_rank's handle
// decoding"). Read from the real library in the root .ci/roots makes.
func TestAnalyzeMPICHCET(t *testing.T) {
	path := filepath.Join(mpitest.RootsDir(), "trixie", "usr/lib/x86_64-linux-gnu/libmpich.so.12")
	if _, err := os.Stat(path); err != nil {
		mpitest.Require(t, "Debian 13's libmpich.so.12 at "+path+" (make the root with .ci/roots)")
	}
	var code Code
	at := map[string]uint64{}
	for _, fn := range []string{"PMPI_Comm_rank", "PMPI_Comm_size", "PMPI_Comm_get_name"} {
		code, at[fn], _ = elfCode(t, path, fn)
	}
	if b := code(at["PMPI_Comm_rank"], 4); !reflect.DeepEqual(b, []byte{0xf3, 0x0f, 0x1e, 0xfa}) {
		t.Fatalf("PMPI_Comm_rank starts % x, want endbr64 (not a CET build?)", b)
	}
	tables := map[uint64]bool{}
	var facts [3]Facts
	for i, fn := range []string{"PMPI_Comm_rank", "PMPI_Comm_size", "PMPI_Comm_get_name"} {
		facts[i] = Analyze(code, at[fn], 0)
		if len(facts[i].Paths) == 0 {
			t.Errorf("%s: no handle decoding", fn)
		}
		for _, p := range facts[i].Paths {
			for _, op := range p {
				if op.Kind == OpAddSlot || op.Kind == OpAddGlobal {
					tables[op.Addr] = true
				}
			}
		}
	}
	// The builtin and direct tables of MPIR_Comm (0x548 bytes each).
	if len(tables) < 2 {
		t.Errorf("object tables %v, want the builtin and the direct one", tables)
	}
	// MPICH 4.2's PMPI_Comm_rank stores the rank in MPIR_Comm_rank_impl,
	// called on the branch after MPIR_Threadcomm_rank_impl's: a callee's
	// steps are bounded (maxCallSteps), or the first used up the walk.
	if want := []Access{{Arg: 1, Chain: []int64{0x48}}}; !reflect.DeepEqual(facts[0].Stores, want) {
		t.Errorf("PMPI_Comm_rank stores %+v, want %+v (rank)", facts[0].Stores, want)
	}
	if n := len(facts[0].Paths); n < 3 {
		t.Errorf("PMPI_Comm_rank: %d handle decodings, want the builtin, direct and indirect ones", n)
	}
	if want := []Access{{Arg: 1, Chain: []int64{0x58}}}; !reflect.DeepEqual(facts[1].Stores, want) {
		t.Errorf("PMPI_Comm_size stores %+v, want %+v (local_size)", facts[1].Stores, want)
	}
	if len(facts[2].Copies) == 0 || !reflect.DeepEqual(facts[2].Copies[0], Copy{Arg: 1, Chain: []int64{0x74}, Len: mpichNameLen}) {
		t.Errorf("PMPI_Comm_get_name copies %+v, want the name at +0x74, %d bytes", facts[2].Copies, mpichNameLen)
	}
}

// trixieFile returns the path of a library in Debian 13's root, or skips
// with Require.
func trixieFile(t *testing.T, rel string) string {
	t.Helper()
	path := filepath.Join(mpitest.RootsDir(), "trixie", rel)
	if _, err := os.Stat(path); err != nil {
		mpitest.Require(t, "Debian 13's "+filepath.Base(rel)+" at "+path+" (make the root with .ci/roots)")
	}
	return path
}

// TestInferFreeListCET: Debian 13's libopen-pal.so.80 (Open MPI 5.0.7,
// CET) starts opal_free_list_grow_st with endbr64, which the linear
// decoding refused as a prefix without an instruction; the layout is
// Debian 12's.
func TestInferFreeListCET(t *testing.T) {
	path := trixieFile(t, "usr/lib/x86_64-linux-gnu/libopen-pal.so.80")
	code, addr, size := elfCode(t, path, "opal_free_list_grow_st")
	got, err := InferFreeList(code, addr, size)
	if err != nil {
		t.Fatal(err)
	}
	if want := (FreeList{MaxToAlloc: 80, NumAllocated: 88, FragClass: 144, ClassSeen: true}); got != want {
		t.Errorf("InferFreeList = %+v, want %+v", got, want)
	}
}

// TestObjectStoresCET: in Debian 13's libmpi.so.40 (ob1 built in, CET)
// the flow of mca_pml_ob1_irecv ended at its endbr64 and found no store;
// the request's buffer (argument 0) and peer (argument 3) are stored.
func TestObjectStoresCET(t *testing.T) {
	path := trixieFile(t, "usr/lib/x86_64-linux-gnu/libmpi.so.40")
	code, addr, size := elfCode(t, path, "mca_pml_ob1_irecv")
	stores, err := ObjectStores(code, addr, size, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []Store{{Arg: 0, Off: 472, Bytes: 8}, {Arg: 3, Off: 488, Bytes: 4}} {
		if !slices.Contains(stores, want) {
			t.Errorf("stores %+v lack %+v", stores, want)
		}
	}
}

// TestAnalyzeOMPI5Name: Open MPI 5.0.7 (Debian 13) keeps a communicator's
// name in a buffer of its own: PMPI_Comm_get_name copies from the pointer
// at +0xa0 (opal_string_copy(name, comm->c_name, 64)), where 4.x copied
// the array in the object. The copy is found as one through a pointer.
func TestAnalyzeOMPI5Name(t *testing.T) {
	path := trixieFile(t, "usr/lib/x86_64-linux-gnu/libmpi.so.40")
	code, addr, _ := elfCode(t, path, "PMPI_Comm_get_name")
	got := Analyze(code, addr, 0).Copies
	want := Copy{Arg: 1, Chain: []int64{0xa0}, Len: 64, Ptr: true}
	if len(got) == 0 {
		t.Fatalf("PMPI_Comm_get_name: no copy, want %+v", want)
	}
	for _, c := range got { // one per path that reaches the copy
		if !reflect.DeepEqual(c, want) {
			t.Errorf("PMPI_Comm_get_name copies %+v, want %+v", got, want)
		}
	}
}
