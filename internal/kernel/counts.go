package kernel

import (
	"fmt"
	"log/slog"

	"github.com/cilium/ebpf"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/counters"
)

// ReadCounters calls fn with every counter of the counts map m, as a plain
// Go reading for counters.Snapshot.Update. The reading's Name is valid
// during the call only.
func ReadCounters(m *ebpf.Map, fn func(counters.Reading)) error {
	var k bpf.MpiprobeCountKey
	var v bpf.MpiprobeCountVal
	name := func() string { return CString(v.Name[:]) }
	it := m.Iterate()
	for it.Next(&k, &v) {
		fn(counters.Reading{PID: k.Tgid, Event: k.Event, Detail: k.Detail, Count: v.Count, Peak: v.Peak,
			FirstNs: v.FirstNs, LastNs: v.LastNs, Name: name})
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read counters: %w", err)
	}
	return nil
}

// DeleteCounters removes the counters of the processes del names from the
// counts map m, so that a later process reusing a pid starts from zero.
func DeleteCounters(m *ebpf.Map, del func(pid uint32) bool) {
	var k bpf.MpiprobeCountKey
	var v bpf.MpiprobeCountVal
	var keys []bpf.MpiprobeCountKey
	it := m.Iterate()
	for it.Next(&k, &v) {
		if del(k.Tgid) {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		_ = m.Delete(k)
	}
}

// CString returns the NUL-terminated string at the start of b, as the BPF
// side stores names read from the process.
func CString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// DropReasons says what each index of the drops map counts, and what to do.
// It is indexed by the generated enum drop_reason, so the order cannot drift
// from the BPF side.
func DropReasons() []string {
	r := make([]string, bpf.MpiprobeDropReasonDROP_MAX)
	r[bpf.MpiprobeDropReasonDROP_COUNTS_FULL] = "event counters (counts map full: too many processes x events)"
	r[bpf.MpiprobeDropReasonDROP_TRACED_FULL] = "followed child processes (traced map full)"
	r[bpf.MpiprobeDropReasonDROP_RINGBUF_FULL] = "process notifications (ring buffer full: mpiprobe fell behind)"
	r[bpf.MpiprobeDropReasonDROP_COLL_FULL] = "collective calls (no free communicator slot: raise --comm-slots)"
	return r
}

// ReadDrops reads the drops map m, summed over the CPUs, into counts (one
// per DropReasons) and logs a warning for each count that grew.
func ReadDrops(m *ebpf.Map, counts []uint64, log *slog.Logger) {
	reasons := DropReasons()
	for i := range min(len(counts), len(reasons)) {
		var per []uint64
		if err := m.Lookup(uint32(i), &per); err != nil {
			continue
		}
		var sum uint64
		for _, n := range per {
			sum += n
		}
		if sum > counts[i] {
			log.Warn("BPF map full: updates dropped", "what", reasons[i], "dropped", sum)
		}
		counts[i] = sum
	}
}
