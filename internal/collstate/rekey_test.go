package collstate

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/mpiprobe/mpiprobe/bpf"
)

// TestRekey keys two communicators a process keyed by their local handle
// by what a resolver reads: one moves with its slot; one whose identity
// already has a slot (the BPF side got there first) stays; an
// unresolvable handle is left alone.
func TestRekey(t *testing.T) {
	m := load(t)
	const pid = 4242 // the maps hold 4 communicators
	put := func(slot uint32, k bpf.MpiprobeCollKey, c bpf.MpiprobeCollComm) {
		t.Helper()
		if err := m.Index.Update(&k, &slot, ebpf.UpdateNoExist); err != nil {
			t.Fatal(err)
		}
		if err := m.Comms.Update(&slot, &c, ebpf.UpdateAny); err != nil {
			t.Fatal(err)
		}
	}
	local := func(tgid uint32, h uint64) (bpf.MpiprobeCollKey, bpf.MpiprobeCollComm) {
		return bpf.MpiprobeCollKey{Tgid: tgid, Flags: commLocal, Id: h, Size: -1},
			bpf.MpiprobeCollComm{Tgid: tgid, Flags: commLocal, Id: h, Handle: h, Size: -1, Rank: -1}
	}
	k1, c1 := local(pid, 0x1000) // moves to (3, 4)
	k2, c2 := local(pid, 0x2000) // resolves to (0, 4), which slot 0 has
	k3, c3 := local(pid, 0x3000) // does not resolve
	put(1, k1, c1)
	put(2, k2, c2)
	put(3, k3, c3)
	put(0, bpf.MpiprobeCollKey{Tgid: pid, Id: 0, Size: 4}, bpf.MpiprobeCollComm{Tgid: pid, Id: 0, Handle: 0x2000, Size: 4, Rank: 1})
	n, err := Rekey(m, pid, func(h uint64) (uint64, int32, int32, bool) {
		switch h {
		case 0x1000:
			return 3, 4, 1, true
		case 0x2000:
			return 0, 4, 1, true
		}
		return 0, 0, 0, false
	})
	if err != nil || n != 1 {
		t.Fatalf("Rekey = %d, %v; want 1 moved", n, err)
	}
	var slot uint32
	if err := m.Index.Lookup(&bpf.MpiprobeCollKey{Tgid: pid, Id: 3, Size: 4}, &slot); err != nil || slot != 1 {
		t.Errorf("(3, 4) → slot %d, %v; want slot 1", slot, err)
	}
	if err := m.Index.Lookup(&k1, &slot); err == nil {
		t.Error("the moved communicator is still keyed by its handle")
	}
	var c bpf.MpiprobeCollComm
	if err := m.Comms.Lookup(uint32(1), &c); err != nil || c.Id != 3 || c.Size != 4 || c.Rank != 1 || c.Flags&commLocal != 0 || c.Handle != 0x1000 {
		t.Errorf("slot 1 = %+v, %v; want id 3, size 4, rank 1, not local, handle kept", c, err)
	}
	for _, k := range []bpf.MpiprobeCollKey{k2, k3} {
		if err := m.Index.Lookup(&k, &slot); err != nil {
			t.Errorf("%+v lost: %v", k, err)
		}
	}
}
