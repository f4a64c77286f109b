package mpiabi

import (
	"debug/elf"
	"os"
	"slices"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// TestInferMPICHFrameArgsAgreesWithTable infers the frame slots of
// Debian's libmpich from its code and compares them with the table's,
// which were checked by hand and on live blocked calls. PMPI_Ssend's
// hold on every path. PMPI_Probe's source does not: GCC shares a tail
// between its two probe loops, and the loop for a communicator of one
// process keeps the communicator handle in the source's word. The word is
// given as shared with the handle (a reader tells a rank from a handle by
// value), and the source read there as inferred rather than read.
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
	for _, c := range []struct {
		call    string
		refused bool
		// maybe: the source's word holds, on the other paths, the comm
		// handle (PMPI_Probe's loop for a one-process communicator
		// shares the tail of the other): a reader tells them apart.
		maybe bool
		// tags are the places that hold the tag: PMPI_Probe keeps it in
		// r12 (mov %esi,%r12d) and its sign extension in r14 (movslq
		// %r12d,%r14), which the table names.
		tags []FrameSlot
	}{{"MPI_Ssend", false, false, nil}, {"MPI_Probe", false, true, []FrameSlot{{Reg: 12}, {Reg: 14}}}} {
		call := c.call
		want, ok := MPICHFrameArgsOf(debianMPICH, call)
		if !ok {
			t.Fatalf("the table has no %s", call)
		}
		for _, pc := range want.RetPCs {
			got, err := InferMPICHFrameArgs(f, call, "P"+call, pc)
			if (err != nil) != c.refused {
				t.Errorf("%s at %#x: error %v, want refused %v", call, pc, err, c.refused)
			}
			if err != nil {
				continue
			}
			inferred++
			if got.PeerMaybe != c.maybe {
				t.Errorf("%s at %#x: the peer is a maybe: %v, want %v", call, pc, got.PeerMaybe, c.maybe)
			}
			tagOK := got.Tag == want.Tag || slices.Contains(c.tags, got.Tag)
			if got.Peer != want.Peer || !tagOK || got.NoTag {
				t.Errorf("%s at %#x: inferred peer %+v tag %+v, the table has %+v and %+v", call, pc, got.Peer, got.Tag, want.Peer, want.Tag)
			}
			if want.HandleOff != 0 && got.Handle != (FrameSlot{Reg: -1, Off: want.HandleOff}) {
				t.Errorf("%s at %#x: inferred handle %+v, the table has the word at %#x", call, pc, got.Handle, want.HandleOff)
			}
		}
	}
	if inferred != 4 {
		t.Errorf("%d return addresses inferred, want PMPI_Ssend's 1 and PMPI_Probe's 3", inferred)
	}
}

// TestMPICHDevice reads the device Debian's MPICH names itself by, and
// finds none in Open MPI's libmpi.
func TestMPICHDevice(t *testing.T) {
	for _, tt := range []struct{ lib, want string }{
		{"/usr/lib/x86_64-linux-gnu/libmpich.so.12", "ch4:ucx"},
		{"/usr/lib/x86_64-linux-gnu/libmpi.so.40", ""},
	} {
		f, err := elf.Open(tt.lib)
		if err != nil {
			mpitest.Require(t, err.Error())
			continue
		}
		got, err := MPICHDevice(f)
		f.Close()
		if err != nil || got != tt.want {
			t.Errorf("MPICHDevice(%s) = %q, %v; want %q", tt.lib, got, err, tt.want)
		}
	}
}
