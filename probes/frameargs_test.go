package probes

import (
	"debug/elf"
	"os"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// TestInferMPICHFrameArgsAgreesWithTable infers the frame slots of
// Debian's libmpich from its code and compares them with the table's,
// which were checked by hand and on live blocked calls. Where the
// inference finds nothing (PMPI_Probe: a tail that GCC shares between
// its two probe loops stores another value in the source's word on a
// path the data flow cannot rule out) it must say so, never disagree.
func TestInferMPICHFrameArgsAgreesWithTable(t *testing.T) {
	const lib = "/usr/lib/x86_64-linux-gnu/libmpich.so.12"
	if _, err := os.Stat(lib); err != nil {
		mpitest.Require(t, err.Error())
		return
	}
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if id, _ := elfx.BuildID(f); id != debianMPICH {
		t.Fatalf("%s has build id %s, not Debian's %s (a new package?)", lib, id, debianMPICH)
	}
	inferred := 0
	for _, call := range []string{"MPI_Ssend", "MPI_Probe"} {
		want, ok := MPICHFrameArgsOf(debianMPICH, call)
		if !ok {
			t.Fatalf("the table has no %s", call)
		}
		for _, pc := range want.RetPCs {
			got, err := InferMPICHFrameArgs(f, call, "P"+call, pc)
			if err != nil {
				t.Logf("%s at %#x: %v", call, pc, err)
				continue
			}
			inferred++
			if got.Peer != want.Peer || got.Tag != want.Tag || got.NoTag {
				t.Errorf("%s at %#x: inferred peer %+v tag %+v, the table has %+v and %+v", call, pc, got.Peer, got.Tag, want.Peer, want.Tag)
			}
			if want.HandleOff != 0 && got.Handle != (FrameSlot{Reg: -1, Off: want.HandleOff}) {
				t.Errorf("%s at %#x: inferred handle %+v, the table has the word at %#x", call, pc, got.Handle, want.HandleOff)
			}
		}
	}
	if inferred == 0 {
		t.Error("nothing inferred: PMPI_Ssend's slots at least are found on every path")
	}
}
