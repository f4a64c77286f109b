package collstate

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/kernel"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/probes"
)

// slots is the number of communicator slots the tests load the maps with.
const slots = 4

// requireBPF skips the test when BPF maps cannot be made here (and fails
// it under MPIPROBE_E2E=require).
func requireBPF(t *testing.T) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (BPF maps and programs need CAP_BPF and CAP_PERFMON)")
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		missing = append(missing, "a kernel with BTF (/sys/kernel/btf/vmlinux)")
	}
	mpitest.Require(t, missing...)
}

// load loads the real BPF objects with slots communicator slots and
// returns their collective maps.
func load(t *testing.T) Maps {
	t.Helper()
	requireBPF(t)
	var objs bpf.MpiprobeObjects
	if err := kernel.Load(&objs, kernel.Options{MaxEntries: Sizes(slots)}); err != nil {
		t.Fatalf("load the BPF objects: %v", err)
	}
	t.Cleanup(func() { _ = objs.Close() })
	return Of(&objs)
}

// popFree empties the free queue and returns what it held, in order.
func popFree(t *testing.T, m Maps) []uint32 {
	t.Helper()
	var out []uint32
	for range 1000 {
		var s uint32
		err := m.Free.LookupAndDelete(nil, &s)
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return out
		}
		if err != nil {
			t.Fatalf("pop the free queue: %v", err)
		}
		out = append(out, s)
	}
	t.Fatalf("the free queue does not empty: %v...", out[:10])
	return nil
}

// collIndex returns a collective's index in probes.Collectives.
func collIndex(t *testing.T, name string) int {
	t.Helper()
	i := slices.IndexFunc(probes.Collectives(), func(c probes.Collective) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("no collective %s", name)
	}
	return i
}

// The processes of the fixture: an MPICH rank and an Open MPI rank.
const (
	pidMPICH = 1001
	pidOMPI  = 1002
)

// fixture is what populate wrote.
type fixture struct {
	// entries are what Read must return for both pids.
	entries []Entry
	// reqs are the outstanding requests, by pid.
	reqs map[int][]bpf.MpiprobeReqKey
}

// populate writes the maps as the BPF side would have for two processes:
//
//	slot 0: pid 1001, an MPICH communicator of an unknown build (local handle)
//	slot 1: pid 1002, Open MPI's MPI_COMM_WORLD (a pointer, context id 0)
//	slot 2: pid 1001, MPICH's MPI_COMM_WORLD (handle 0x44000000)
//	slot 3: pid 1002, Open MPI's MPI_COMM_SELF (context id 1)
func populate(t *testing.T, m Maps) fixture {
	t.Helper()
	const ompiWorld, ompiSelf = 0x7f3a5c21d2a0, 0x7f3a5c21d6c0
	type comm struct {
		slot uint32
		key  bpf.MpiprobeCollKey
		comm bpf.MpiprobeCollComm
	}
	comms := []comm{
		{0, bpf.MpiprobeCollKey{Tgid: pidMPICH, Flags: commLocal, Id: 0x84000003, Size: -1},
			bpf.MpiprobeCollComm{Tgid: pidMPICH, Flags: commLocal, Id: 0x84000003, Handle: 0x84000003, Size: -1, Rank: -1}},
		{1, bpf.MpiprobeCollKey{Tgid: pidOMPI, Id: 0, Size: 4},
			bpf.MpiprobeCollComm{Tgid: pidOMPI, Id: 0, Handle: ompiWorld, Size: 4, Rank: 3}},
		{2, bpf.MpiprobeCollKey{Tgid: pidMPICH, Id: 0, Size: 4},
			bpf.MpiprobeCollComm{Tgid: pidMPICH, Id: 0, Handle: mpichWorld, Size: 4, Rank: 1}},
		{3, bpf.MpiprobeCollKey{Tgid: pidOMPI, Id: 1, Size: 1},
			bpf.MpiprobeCollComm{Tgid: pidOMPI, Id: 1, Handle: ompiSelf, Size: 1, Rank: 0}},
	}
	for _, c := range comms {
		if err := m.Index.Put(c.key, c.slot); err != nil {
			t.Fatalf("write coll_index: %v", err)
		}
		if err := m.Comms.Put(c.slot, c.comm); err != nil {
			t.Fatalf("write coll_comms: %v", err)
		}
	}
	barrier, ibcast := collIndex(t, "MPI_Barrier"), collIndex(t, "MPI_Ibcast")
	allreduce, last := collIndex(t, "MPI_Allreduce"), len(probes.Collectives())-1
	stats := []struct {
		slot, coll int
		st         bpf.MpiprobeCollStat
	}{
		{2, barrier, bpf.MpiprobeCollStat{Calls: 3, TotalNs: 3000, MaxNs: 1500}},
		{2, ibcast, bpf.MpiprobeCollStat{Calls: 2, Pending: 1, Completed: 1, DoneNs: 800, TotalNs: 40, MaxNs: 25}},
		// Calls 0: not listed, whatever else it holds.
		{2, allreduce, bpf.MpiprobeCollStat{TotalNs: 5, Inside: 1}},
		{1, allreduce, bpf.MpiprobeCollStat{Calls: 7, Inside: 1, SinceNs: 12345, TotalNs: 1000, MaxNs: 300}},
		{1, last, bpf.MpiprobeCollStat{Calls: 1, Pending: 1}},
	}
	for _, s := range stats {
		if err := m.Stats.Put(uint32(s.slot*probes.MaxCollectives+s.coll), s.st); err != nil {
			t.Fatalf("write coll_stats: %v", err)
		}
	}
	reqs := []struct {
		k bpf.MpiprobeReqKey
		v bpf.MpiprobeReqVal
	}{
		{bpf.MpiprobeReqKey{Tgid: pidMPICH, Req: 0x98000010}, bpf.MpiprobeReqVal{Idx: uint32(2*probes.MaxCollectives + ibcast), StartNs: 500}},
		{bpf.MpiprobeReqKey{Tgid: pidMPICH, Req: 0x98000011}, bpf.MpiprobeReqVal{Idx: uint32(2*probes.MaxCollectives + ibcast), StartNs: 400}},
		{bpf.MpiprobeReqKey{Tgid: pidOMPI, Req: 0x55d0c0de1000}, bpf.MpiprobeReqVal{Idx: uint32(1*probes.MaxCollectives + last), StartNs: 900}},
	}
	f := fixture{reqs: map[int][]bpf.MpiprobeReqKey{}}
	for _, r := range reqs {
		if err := m.Reqs.Put(r.k, r.v); err != nil {
			t.Fatalf("write coll_reqs: %v", err)
		}
		f.reqs[int(r.k.Tgid)] = append(f.reqs[int(r.k.Tgid)], r.k)
	}
	if err := m.Pending.Put(uint32(0), int64(len(reqs))); err != nil {
		t.Fatalf("write coll_pending: %v", err)
	}

	colls := probes.Collectives()
	f.entries = []Entry{
		{PID: pidMPICH, Comm: agg.Comm{ID: 0x84000003, Size: -1, Local: true}, Rank: -1, Handle: 0x84000003, Slot: 0},
		{PID: pidMPICH, Comm: agg.Comm{ID: 0, Size: 4, Name: "WORLD"}, Rank: 1, Handle: mpichWorld, Slot: 2, Stats: []Stat{
			{Name: colls[barrier].Name, Calls: 3, Total: 3000, Max: 1500},
			{Name: colls[ibcast].Name, Calls: 2, Total: 40, Max: 25, Pending: 1, Completed: 1, ToComplete: 800, PendingSince: 400},
		}},
		{PID: pidOMPI, Comm: agg.Comm{ID: 0, Size: 4, Name: "WORLD"}, Rank: 3, Handle: ompiWorld, Slot: 1, Stats: []Stat{
			{Name: "MPI_Allreduce", Calls: 7, Inside: 1, Since: 12345, Total: 1000 * time.Nanosecond, Max: 300},
			{Name: "MPI_Ineighbor_alltoallw", Calls: 1, Pending: 1, PendingSince: 900},
		}},
		{PID: pidOMPI, Comm: agg.Comm{ID: 1, Size: 1, Name: "SELF"}, Rank: 0, Handle: ompiSelf, Slot: 3},
	}
	return f
}

// describe renders entries one a line for failure messages.
func describe(es []Entry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "\n\t%+v", e)
	}
	return b.String()
}

func TestSizes(t *testing.T) {
	tests := []struct {
		slots int
		want  map[string]uint32
	}{
		{0, nil},
		{-1, nil},
		{5, map[string]uint32{"coll_index": 5, "coll_comms": 5, "coll_free": 5, "coll_stats": 5 * probes.MaxCollectives}},
	}
	spec, err := bpf.LoadMpiprobe()
	if err != nil {
		t.Fatalf("LoadMpiprobe: %v", err)
	}
	for _, tt := range tests {
		got := Sizes(tt.slots)
		if !maps.Equal(got, tt.want) {
			t.Errorf("Sizes(%d) = %v, want %v", tt.slots, got, tt.want)
		}
		for name := range got {
			if _, ok := spec.Maps[name]; !ok {
				t.Errorf("Sizes(%d) sizes %s, which the BPF object lacks", tt.slots, name)
			}
		}
	}
}

func TestName(t *testing.T) {
	tests := []struct {
		name string
		comm bpf.MpiprobeCollComm
		want string
	}{
		{"MPICH world", bpf.MpiprobeCollComm{Handle: 0x44000000, Id: 0}, "WORLD"},
		{"MPICH self", bpf.MpiprobeCollComm{Handle: 0x44000001, Id: 0x10}, "SELF"},
		{"MPICH world of an unknown build", bpf.MpiprobeCollComm{Handle: 0x44000000, Id: 0x44000000, Flags: commLocal}, "WORLD"},
		{"MPICH direct handle with context id 0", bpf.MpiprobeCollComm{Handle: 0x84000002, Id: 0}, ""},
		{"MPICH direct handle with context id 1", bpf.MpiprobeCollComm{Handle: 0x84000002, Id: 1}, ""},
		{"Open MPI world", bpf.MpiprobeCollComm{Handle: 0x7f3a5c21d2a0, Id: 0}, "WORLD"},
		{"Open MPI self", bpf.MpiprobeCollComm{Handle: 0x7f3a5c21d6c0, Id: 1}, "SELF"},
		{"Open MPI other", bpf.MpiprobeCollComm{Handle: 0x55d0c0de2000, Id: 2}, ""},
		{"smallest pointer handle", bpf.MpiprobeCollComm{Handle: 0x100000000, Id: 0}, "WORLD"},
		{"unknown build: the id is the handle", bpf.MpiprobeCollComm{Handle: 0x7f3a5c21d2a0, Id: 0, Flags: commLocal}, ""},
	}
	for _, tt := range tests {
		if got := name(tt.comm); got != tt.want {
			t.Errorf("%s: name(%+v) = %q, want %q", tt.name, tt.comm, got, tt.want)
		}
	}
}

func TestInit(t *testing.T) {
	m := load(t)
	if got := m.Comms.MaxEntries(); got != slots {
		t.Fatalf("coll_comms has %d entries, want %d", got, slots)
	}
	want := []uint32{0, 1, 2, 3}
	for round := 1; round <= 2; round++ {
		if err := Init(m); err != nil {
			t.Fatalf("Init (round %d): %v", round, err)
		}
		if got := popFree(t, m); !slices.Equal(got, want) {
			t.Errorf("round %d: the free queue held %v, want %v", round, got, want)
		}
	}
}

func TestRead(t *testing.T) {
	m := load(t)
	f := populate(t, m)

	got, err := Read(m, nil)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if !reflect.DeepEqual(got, f.entries) {
		t.Errorf("Read =%s\nwant%s", describe(got), describe(f.entries))
	}

	t.Run("keep", func(t *testing.T) {
		var asked []int
		got, err := Read(m, func(pid int) bool {
			asked = append(asked, pid)
			return pid == pidOMPI
		})
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if want := f.entries[2:]; !reflect.DeepEqual(got, want) {
			t.Errorf("Read of pid %d =%s\nwant%s", pidOMPI, describe(got), describe(want))
		}
		if len(asked) != len(f.entries) {
			t.Errorf("keep asked about %v, want once per communicator", asked)
		}
		got, err = Read(m, func(int) bool { return false })
		if err != nil || len(got) != 0 {
			t.Errorf("Read keeping nothing = %v, %v, want nothing", got, err)
		}
	})

	t.Run("without requests", func(t *testing.T) {
		noReqs := m
		noReqs.Reqs = nil
		got, err := Read(noReqs, nil)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		want := slices.Clone(f.entries)
		for i := range want {
			want[i].Stats = slices.Clone(want[i].Stats)
			for j := range want[i].Stats {
				want[i].Stats[j].PendingSince = 0
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Read without coll_reqs =%s\nwant%s", describe(got), describe(want))
		}
	})
}

func TestReadEmpty(t *testing.T) {
	m := load(t)
	got, err := Read(m, nil)
	if err != nil || len(got) != 0 {
		t.Errorf("Read of empty maps = %v, %v, want nothing", got, err)
	}
}

func TestRelease(t *testing.T) {
	m := load(t)
	if err := Init(m); err != nil {
		t.Fatal(err)
	}
	popFree(t, m) // the BPF side took every slot
	f := populate(t, m)
	ended := func(pid int) bool { return pid == pidMPICH }

	// Nothing ended: nothing changes.
	if err := Release(m, func(int) bool { return false }); err != nil {
		t.Fatalf("Release of nothing: %v", err)
	}
	if got, err := Read(m, nil); err != nil || !reflect.DeepEqual(got, f.entries) {
		t.Errorf("Read after releasing nothing =%s, %v\nwant%s", describe(got), err, describe(f.entries))
	}
	if got := popFree(t, m); len(got) != 0 {
		t.Errorf("releasing nothing freed slots %v", got)
	}

	if err := Release(m, ended); err != nil {
		t.Fatalf("Release: %v", err)
	}

	// The index forgets pid 1001 only.
	var k bpf.MpiprobeCollKey
	var slot uint32
	left := map[uint32]bool{}
	it := m.Index.Iterate()
	for it.Next(&k, &slot) {
		if k.Tgid == pidMPICH {
			t.Errorf("coll_index still maps %+v to slot %d", k, slot)
		}
		left[slot] = true
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(left, map[uint32]bool{1: true, 3: true}) {
		t.Errorf("coll_index holds slots %v, want 1 and 3", left)
	}

	// Its counters are zero; the others are kept.
	var zero bpf.MpiprobeCollStat
	for _, s := range []uint32{0, 2} {
		for i := uint32(0); i < probes.MaxCollectives; i++ {
			var st bpf.MpiprobeCollStat
			if err := m.Stats.Lookup(s*probes.MaxCollectives+i, &st); err != nil {
				t.Fatal(err)
			}
			if st != zero {
				t.Errorf("slot %d collective %d not cleared: %+v", s, i, st)
			}
		}
	}
	if got, err := Read(m, nil); err != nil || !reflect.DeepEqual(got, f.entries[2:]) {
		t.Errorf("Read after Release =%s, %v\nwant%s", describe(got), err, describe(f.entries[2:]))
	}

	// Its slots are free again.
	freed := popFree(t, m)
	slices.Sort(freed)
	if !slices.Equal(freed, []uint32{0, 2}) {
		t.Errorf("the free queue holds %v, want slots 0 and 2", freed)
	}

	// Its requests are forgotten, the pending count follows.
	for pid, keys := range f.reqs {
		for _, k := range keys {
			var v bpf.MpiprobeReqVal
			err := m.Reqs.Lookup(k, &v)
			switch {
			case ended(pid) && err == nil:
				t.Errorf("coll_reqs still holds %+v", k)
			case !ended(pid) && err != nil:
				t.Errorf("coll_reqs lost %+v of a running process: %v", k, err)
			}
		}
	}
	var pending int64
	if err := m.Pending.Lookup(uint32(0), &pending); err != nil {
		t.Fatal(err)
	}
	if want := int64(len(f.reqs[pidOMPI])); pending != want {
		t.Errorf("coll_pending = %d, want %d", pending, want)
	}

	// Releasing again changes nothing.
	if err := Release(m, ended); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if got := popFree(t, m); len(got) != 0 {
		t.Errorf("a second Release freed slots %v again", got)
	}
}

// TestReleasePendingFloor checks that the pending count does not go below
// zero when it is already lower than the requests being forgotten.
func TestReleasePendingFloor(t *testing.T) {
	m := load(t)
	populate(t, m)
	if err := m.Pending.Put(uint32(0), int64(1)); err != nil {
		t.Fatal(err)
	}
	if err := Release(m, func(pid int) bool { return pid == pidMPICH }); err != nil {
		t.Fatalf("Release: %v", err)
	}
	var pending int64
	if err := m.Pending.Lookup(uint32(0), &pending); err != nil {
		t.Fatal(err)
	}
	if pending != 0 {
		t.Errorf("coll_pending = %d, want 0", pending)
	}
}

// pinRoot returns a fresh directory of the BPF file system for one test,
// removed at its end.
func pinRoot(t *testing.T) string {
	t.Helper()
	if err := kernel.MountBPFFS("/sys/fs/bpf"); err != nil {
		t.Fatalf("MountBPFFS: %v", err)
	}
	root := filepath.Join("/sys/fs/bpf", fmt.Sprintf("mpiprobe-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_")))
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	return root
}

// pinDummy pins a small map at path.
func pinDummy(t *testing.T, path string) {
	t.Helper()
	mp, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer mp.Close()
	if err := mp.Pin(path); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestPinOpenUnpin(t *testing.T) {
	m := load(t)
	f := populate(t, m)
	root := pinRoot(t)
	self := os.Getpid()
	dir := filepath.Join(root, strconv.Itoa(self))

	if err := Pin(m, dir); err != nil {
		t.Fatalf("Pin: %v", err)
	}
	for _, n := range pinNames {
		if !exists(filepath.Join(dir, n)) {
			t.Errorf("Pin made no %s", filepath.Join(dir, n))
		}
	}

	// A session that ended without cleaning up, one that runs but lost its
	// maps, and names that are not sessions.
	const deadPID, brokenPID = 999999999, 4242
	dead := filepath.Join(root, strconv.Itoa(deadPID))
	if err := os.Mkdir(dead, 0o700); err != nil {
		t.Fatal(err)
	}
	pinDummy(t, filepath.Join(dead, "coll_index"))
	broken := filepath.Join(root, strconv.Itoa(brokenPID))
	if err := os.Mkdir(broken, 0o700); err != nil {
		t.Fatal(err)
	}
	notPID := filepath.Join(root, "notapid")
	if err := os.Mkdir(notPID, 0o700); err != nil {
		t.Fatal(err)
	}
	numericFile := filepath.Join(root, "12345")
	pinDummy(t, numericFile)

	var asked []int
	alive := func(pid int) bool {
		asked = append(asked, pid)
		return pid == self || pid == brokenPID
	}
	sessions, err := OpenPinned(root, alive)
	defer func() {
		for _, s := range sessions {
			s.Close()
		}
	}()
	if err == nil || !strings.Contains(err.Error(), strconv.Itoa(brokenPID)) {
		t.Errorf("OpenPinned error %v, want one naming the session %d whose maps are missing", err, brokenPID)
	}
	if len(sessions) != 1 || sessions[0].PID != self {
		t.Fatalf("OpenPinned = %+v, want the session of pid %d", sessions, self)
	}
	slices.Sort(asked)
	if want := []int{brokenPID, self, deadPID}; !slices.Equal(asked, slices.Sorted(slices.Values(want))) {
		t.Errorf("alive asked about %v, want %v", asked, want)
	}
	if exists(dead) {
		t.Errorf("the directory of the dead session %d is still there", deadPID)
	}
	for _, p := range []string{broken, notPID, numericFile, dir} {
		if !exists(p) {
			t.Errorf("OpenPinned removed %s", p)
		}
	}

	s := sessions[0]
	if s.Maps.Free != nil || s.Maps.Pending != nil {
		t.Errorf("a pinned session has Free %v and Pending %v, want neither", s.Maps.Free, s.Maps.Pending)
	}
	got, err := Read(s.Maps, nil)
	if err != nil {
		t.Fatalf("Read of the pinned maps: %v", err)
	}
	if !reflect.DeepEqual(got, f.entries) {
		t.Errorf("Read of the pinned maps =%s\nwant%s", describe(got), describe(f.entries))
	}
	if err := s.Maps.Index.Put(bpf.MpiprobeCollKey{Tgid: 7}, uint32(0)); err == nil {
		t.Errorf("the pinned maps were opened writable")
	}

	if err := Unpin(m, dir); err != nil {
		t.Fatalf("Unpin: %v", err)
	}
	if exists(dir) {
		t.Errorf("Unpin left %s", dir)
	}
	for _, mp := range []*ebpf.Map{m.Index, m.Comms, m.Stats, m.Reqs} {
		if mp.IsPinned() {
			t.Errorf("map %v still pinned after Unpin", mp)
		}
	}
	if got, err := Read(m, nil); err != nil || !reflect.DeepEqual(got, f.entries) {
		t.Errorf("Read after Unpin =%s, %v\nwant%s", describe(got), err, describe(f.entries))
	}
	again, _ := OpenPinned(root, func(pid int) bool { return pid == self })
	for _, s := range again {
		s.Close()
	}
	if len(again) != 0 {
		t.Errorf("OpenPinned after Unpin = %+v, want no session", again)
	}
}

func TestOpenPinnedNoRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "absent")
	sessions, err := OpenPinned(root, func(int) bool {
		t.Errorf("alive called without any session")
		return true
	})
	if sessions != nil || err != nil {
		t.Errorf("OpenPinned(%s) = %+v, %v, want nothing and no error", root, sessions, err)
	}
}

func TestOpenPinnedEmptyRoot(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "notapid"), 0o700); err != nil {
		t.Fatal(err)
	}
	sessions, err := OpenPinned(root, func(int) bool {
		t.Errorf("alive called for a name that is not a pid")
		return true
	})
	if len(sessions) != 0 || err != nil {
		t.Errorf("OpenPinned(%s) = %+v, %v, want nothing and no error", root, sessions, err)
	}
	if !exists(filepath.Join(root, "notapid")) {
		t.Errorf("OpenPinned removed a directory that is not a session")
	}
}

func TestMaxSlots(t *testing.T) {
	if got := uint64(MaxSlots) * probes.MaxCollectives; got > 1<<32-1 {
		t.Errorf("MaxSlots×%d = %d entries: more than a map holds", probes.MaxCollectives, got)
	}
	if got := uint64(MaxSlots+1) * probes.MaxCollectives; got <= 1<<32-1 {
		t.Errorf("MaxSlots+1 would still fit a map: MaxSlots is not the largest")
	}
	tests := []struct {
		mem  uint64
		want int
	}{
		{0, 0},
		{SlotBytes() - 1, 0},
		{SlotBytes(), 1},
		{4096 * SlotBytes(), 4096},
		{1 << 62, MaxSlots},
	}
	for _, tc := range tests {
		if got := MaxSlotsFor(tc.mem); got != tc.want {
			t.Errorf("MaxSlotsFor(%d) = %d, want %d", tc.mem, got, tc.want)
		}
	}
	if b := SlotBytes(); b < 4096 || b > 8192 {
		t.Errorf("SlotBytes() = %d, want a little over 4 KiB (64 collectives × 64 bytes)", b)
	}
}
