package collstate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/cilium/ebpf"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/probes"
)

// Maps are the BPF maps of collective tracking.
type Maps struct {
	Index, Comms, Stats, Free *ebpf.Map
	// Reqs and Pending follow nonblocking collectives' requests (nil in
	// pinned sessions, which status only reads).
	Reqs, Pending *ebpf.Map
}

// Of returns the collective-tracking maps of loaded BPF objects.
func Of(o *bpf.MpiprobeObjects) Maps {
	return Maps{Index: o.CollIndex, Comms: o.CollComms, Stats: o.CollStats, Free: o.CollFree,
		Reqs: o.CollReqs, Pending: o.CollPending}
}

// The flags of struct coll_comm (enum comm_flag in bpf/collectives.h).
const commLocal = uint32(bpf.MpiprobeCommFlagCOMM_LOCAL)

// The builtin MPICH handles of MPI_COMM_WORLD and MPI_COMM_SELF.
const (
	mpichWorld = 0x44000000
	mpichSelf  = 0x44000001
)

// MaxSlots is the most communicator slots the kernel can size the maps
// for: coll_stats holds probes.MaxCollectives entries per slot and a map's
// max_entries is a 32-bit number, so (2^32-1)/64 = 67,108,863. Beyond it
// the sizes would wrap around (99,999,999,999 slots became 1,215,752,191
// and the kernel refused coll_index, a hash map of that many buckets, with
// E2BIG, "argument list too long"). Memory is the tighter bound in
// practice: see SlotBytes and MaxSlotsFor.
const MaxSlots = (1<<32 - 1) / probes.MaxCollectives

// SlotBytes returns the kernel memory one communicator slot takes, at least:
// its probes.MaxCollectives coll_stats entries (4 KiB), its coll_comms
// entry, its coll_index element (key, value and the hash table's element
// header, about 48 bytes) and its place in the coll_free queue. The
// kernel allocates the maps whole when they are created.
func SlotBytes() uint64 {
	return uint64(probes.MaxCollectives*binary.Size(bpf.MpiprobeCollStat{}) +
		binary.Size(bpf.MpiprobeCollComm{}) + binary.Size(bpf.MpiprobeCollKey{}) + 8 + 48 + 4)
}

// MaxSlotsFor returns the most communicator slots whose maps fit in mem
// bytes of memory, and no more than MaxSlots.
func MaxSlotsFor(mem uint64) int {
	return int(min(mem/SlotBytes(), MaxSlots))
}

// Sizes returns the map sizes for slots communicator slots, by map name,
// for kernel.Options.MaxEntries. slots 0 keeps the object's minimal sizes
// (no tracking).
func Sizes(slots int) map[string]uint32 {
	if slots <= 0 {
		return nil
	}
	n := uint32(slots)
	return map[string]uint32{"coll_index": n, "coll_comms": n, "coll_free": n, "coll_stats": n * probes.MaxCollectives}
}

// Init hands every slot to the BPF free queue.
func Init(m Maps) error {
	n := m.Comms.MaxEntries()
	for s := uint32(0); s < n; s++ {
		if err := m.Free.Update(nil, s, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("free communicator slot %d: %w", s, err)
		}
	}
	return nil
}

// Stat is one collective on one communicator of one process.
type Stat struct {
	// Name is the collective, "MPI_Allreduce".
	Name string
	// Calls counts entries, the calls in flight included.
	Calls uint64
	// Inside is how many threads are inside now.
	Inside int64
	// Since is when the last call was entered, in CLOCK_MONOTONIC
	// nanoseconds (meaningful when Inside > 0).
	Since uint64
	// Total and Max are the time inside completed calls.
	Total, Max time.Duration
	// Nonblocking collectives: requests started and not seen completing
	// (Pending), seen completing (Completed), and the total time from
	// start to completion of those.
	Pending    int64
	Completed  uint64
	ToComplete time.Duration
	// PendingSince is when the oldest request not completed yet was
	// started (CLOCK_MONOTONIC ns), 0 if none or unknown.
	PendingSince uint64
	// Root and Count are the root and count the last call was entered
	// with (-1: the collective has none), Datatype the datatype handle
	// (0: none): an int handle in MPICH, an address in Open MPI.
	Root, Count int64
	Datatype    uint64
}

// Entry is one communicator of one process and its collectives.
type Entry struct {
	// PID is the process.
	PID int
	// Comm identifies the communicator across ranks.
	Comm agg.Comm
	// Rank is the process's rank in it, -1 if unknown.
	Rank int
	// Handle is the MPI_Comm value (a pointer in Open MPI, an int in MPICH).
	Handle uint64
	// Slot is the BPF slot.
	Slot uint32
	// Stats are the collectives called on it, in the order of
	// probes.Collectives.
	Stats []Stat
}

// name names the well-known communicators by the rules of the libraries:
// MPICH's builtin handles, and Open MPI's context ids 0 and 1 (MPICH's
// handles are ints, Open MPI's are pointers).
func name(c bpf.MpiprobeCollComm) string {
	switch {
	case c.Handle == mpichWorld:
		return "WORLD"
	case c.Handle == mpichSelf:
		return "SELF"
	case c.Flags&commLocal != 0 || c.Handle <= 0xffffffff:
		return ""
	case c.Id == 0:
		return "WORLD"
	case c.Id == 1:
		return "SELF"
	}
	return ""
}

// Read returns the communicators of the processes keep accepts (every
// process when keep is nil), ordered by process, then communicator.
func Read(m Maps, keep func(pid int) bool) ([]Entry, error) {
	colls := probes.Collectives()
	oldest := map[uint32]uint64{} // coll_stats index -> oldest pending start
	if m.Reqs != nil {
		var k bpf.MpiprobeReqKey
		var v bpf.MpiprobeReqVal
		it := m.Reqs.Iterate()
		for it.Next(&k, &v) {
			if o, ok := oldest[v.Idx]; !ok || v.StartNs < o {
				oldest[v.Idx] = v.StartNs
			}
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("read outstanding requests: %w", err)
		}
	}
	var k bpf.MpiprobeCollKey
	var slot uint32
	var out []Entry
	it := m.Index.Iterate()
	for it.Next(&k, &slot) {
		pid := int(k.Tgid)
		if keep != nil && !keep(pid) {
			continue
		}
		var c bpf.MpiprobeCollComm
		if err := m.Comms.Lookup(slot, &c); err != nil {
			return out, fmt.Errorf("read communicator slot %d: %w", slot, err)
		}
		e := Entry{
			PID:    pid,
			Comm:   agg.Comm{ID: k.Id, Size: int(k.Size), Name: name(c), Local: k.Flags&commLocal != 0},
			Rank:   int(c.Rank),
			Handle: c.Handle,
			Slot:   slot,
		}
		for i, coll := range colls {
			var st bpf.MpiprobeCollStat
			idx := slot*probes.MaxCollectives + uint32(i)
			if err := m.Stats.Lookup(idx, &st); err != nil {
				return out, fmt.Errorf("read collective counters %d: %w", idx, err)
			}
			if st.Calls == 0 {
				continue
			}
			e.Stats = append(e.Stats, Stat{
				Name: coll.Name, Calls: st.Calls, Inside: st.Inside, Since: st.SinceNs,
				Total: time.Duration(st.TotalNs), Max: time.Duration(st.MaxNs),
				Pending: st.Pending, Completed: st.Completed, ToComplete: time.Duration(st.DoneNs),
				PendingSince: oldest[idx],
				Root:         st.Root, Count: st.Count, Datatype: st.Dtype,
			})
		}
		out = append(out, e)
	}
	if err := it.Err(); err != nil {
		return out, fmt.Errorf("read communicator index: %w", err)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if a.PID != b.PID {
			return a.PID - b.PID
		}
		return int(a.Slot) - int(b.Slot)
	})
	return out, nil
}

// Release takes back the slots of processes that have ended: their
// counters are zeroed and the slots return to the free queue. Read them
// first: what was counted there is gone afterwards.
func Release(m Maps, ended func(pid int) bool) error {
	var k bpf.MpiprobeCollKey
	var slot uint32
	type kv struct {
		k    bpf.MpiprobeCollKey
		slot uint32
	}
	var gone []kv
	it := m.Index.Iterate()
	for it.Next(&k, &slot) {
		if ended(int(k.Tgid)) {
			gone = append(gone, kv{k, slot})
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read communicator index: %w", err)
	}
	var zero bpf.MpiprobeCollStat
	var errs []error
	if m.Reqs != nil && m.Pending != nil {
		errs = append(errs, releaseRequests(m, ended))
	}
	for _, g := range gone {
		if err := m.Index.Delete(g.k); err != nil {
			errs = append(errs, fmt.Errorf("release slot %d: %w", g.slot, err))
			continue
		}
		for i := uint32(0); i < probes.MaxCollectives; i++ {
			if err := m.Stats.Update(g.slot*probes.MaxCollectives+i, zero, ebpf.UpdateAny); err != nil {
				errs = append(errs, fmt.Errorf("clear slot %d: %w", g.slot, err))
			}
		}
		if err := m.Free.Update(nil, g.slot, ebpf.UpdateAny); err != nil {
			errs = append(errs, fmt.Errorf("free slot %d: %w", g.slot, err))
		}
	}
	return errors.Join(errs...)
}

// PinRoot is where sessions pin their collective maps, one directory per
// session named by the session's pid.
const PinRoot = "/sys/fs/bpf/mpiprobe"

var pinNames = [...]string{"coll_index", "coll_comms", "coll_stats", "coll_reqs"}

// Pin pins the maps status reads under dir (created; the BPF file system
// must be mounted at its root, see MountBPFFS).
func Pin(m Maps, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pin collective maps: %w", err)
	}
	for i, mp := range []*ebpf.Map{m.Index, m.Comms, m.Stats, m.Reqs} {
		if err := mp.Pin(filepath.Join(dir, pinNames[i])); err != nil {
			return fmt.Errorf("pin collective maps in %s: %w", dir, err)
		}
	}
	return nil
}

// Unpin removes what Pin made.
func Unpin(m Maps, dir string) error {
	var errs []error
	for _, mp := range []*ebpf.Map{m.Index, m.Comms, m.Stats, m.Reqs} {
		errs = append(errs, mp.Unpin())
	}
	if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Session is a running mpiprobe session whose collective maps are pinned.
type Session struct {
	// PID is the session's process.
	PID int
	// Maps are its pinned maps (Free is nil); close them with Close.
	Maps Maps
}

// Close releases the maps.
func (s Session) Close() {
	for _, m := range []*ebpf.Map{s.Maps.Index, s.Maps.Comms, s.Maps.Stats, s.Maps.Reqs} {
		if m != nil {
			_ = m.Close()
		}
	}
}

// OpenPinned opens the pinned maps of every live session under root.
// Directories of sessions that no longer run are removed (their probes
// went with them); alive reports whether a pid runs.
func OpenPinned(root string, alive func(pid int) bool) ([]Session, error) {
	ents, err := os.ReadDir(root)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", root, err)
	}
	var out []Session
	var errs []error
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if !alive(pid) {
			_ = os.RemoveAll(dir)
			continue
		}
		s := Session{PID: pid}
		ms := []**ebpf.Map{&s.Maps.Index, &s.Maps.Comms, &s.Maps.Stats, &s.Maps.Reqs}
		ok := true
		for i, name := range pinNames {
			m, err := ebpf.LoadPinnedMap(filepath.Join(dir, name), &ebpf.LoadPinOptions{ReadOnly: true})
			if err != nil {
				errs = append(errs, fmt.Errorf("open collective maps of mpiprobe pid %d: %w", pid, err))
				ok = false
				break
			}
			*ms[i] = m
		}
		if !ok {
			s.Close()
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// releaseRequests forgets the outstanding requests of ended processes, so
// that completion probes go back to returning at once.
func releaseRequests(m Maps, ended func(pid int) bool) error {
	var k bpf.MpiprobeReqKey
	var v bpf.MpiprobeReqVal
	var gone []bpf.MpiprobeReqKey
	it := m.Reqs.Iterate()
	for it.Next(&k, &v) {
		if ended(int(k.Tgid)) {
			gone = append(gone, k)
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read outstanding requests: %w", err)
	}
	var errs []error
	for _, g := range gone {
		if err := m.Reqs.Delete(g); err != nil {
			continue // completed meanwhile
		}
		var n int64
		if err := m.Pending.Lookup(uint32(0), &n); err != nil {
			errs = append(errs, err)
			continue
		}
		// User space and BPF both adjust the counter; BPF only adds and
		// subtracts atomically, so a racing update can be lost here. The
		// counter only gates the completion probes' early return.
		if err := m.Pending.Update(uint32(0), max(n-1, 0), ebpf.UpdateAny); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Rekey moves the communicators of process pid that the BPF side keyed by
// their rank-local handle (their library's layout was not known yet) to
// the identity resolve reads for the handle, keeping their slots and
// counts. A communicator that already has a slot under its identity (the
// BPF side got there first) keeps both. It returns how many it moved.
func Rekey(m Maps, pid int, resolve func(handle uint64) (id uint64, size, rank int32, ok bool)) (int, error) {
	type local struct {
		key  bpf.MpiprobeCollKey
		slot uint32
	}
	var found []local
	var key bpf.MpiprobeCollKey
	var slot uint32
	it := m.Index.Iterate()
	for it.Next(&key, &slot) {
		if int(key.Tgid) == pid && key.Flags&commLocal != 0 {
			found = append(found, local{key, slot})
		}
	}
	if err := it.Err(); err != nil {
		return 0, fmt.Errorf("read coll_index: %w", err)
	}
	moved := 0
	for _, l := range found {
		var c bpf.MpiprobeCollComm
		if err := m.Comms.Lookup(&l.slot, &c); err != nil {
			return moved, fmt.Errorf("read communicator slot %d: %w", l.slot, err)
		}
		id, size, rank, ok := resolve(c.Handle)
		if !ok {
			continue
		}
		// Unkey first: the index may be full. The BPF side no longer
		// looks the handle key up once the layout is installed.
		if err := m.Index.Delete(&l.key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return moved, fmt.Errorf("unkey communicator slot %d: %w", l.slot, err)
		}
		nk := bpf.MpiprobeCollKey{Tgid: l.key.Tgid, Id: id, Size: size}
		if err := m.Index.Update(&nk, &l.slot, ebpf.UpdateNoExist); err != nil {
			// Keyed by the BPF side already (or no room): keep the
			// handle key.
			if rerr := m.Index.Update(&l.key, &l.slot, ebpf.UpdateAny); rerr != nil {
				return moved, fmt.Errorf("key communicator slot %d again: %w", l.slot, rerr)
			}
			if errors.Is(err, ebpf.ErrKeyExist) {
				continue
			}
			return moved, fmt.Errorf("key communicator slot %d: %w", l.slot, err)
		}
		c.Id, c.Size, c.Rank, c.Flags = id, size, rank, c.Flags&^commLocal
		if err := m.Comms.Update(&l.slot, &c, ebpf.UpdateExist); err != nil {
			return moved, fmt.Errorf("update communicator slot %d: %w", l.slot, err)
		}
		moved++
	}
	return moved, nil
}
