package counters

import (
	"cmp"
	"slices"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/probes"
)

// Key names one counter: an event in one process, and its instance. The
// event is the catalog id, not its index, so that a saved C/T state
// survives catalog changes.
type Key struct {
	// PID is the process (thread group) id.
	PID uint32 `json:"pid"`
	// Event is the catalog event id.
	Event string `json:"event"`
	// Detail is the BPF side's instance key (0 for events with one instance).
	Detail uint64 `json:"detail,omitempty"`
}

// Reading is one counter as the kernel holds it.
type Reading struct {
	// PID is the process (thread group) id.
	PID uint32
	// Event is the index of the event in the catalog, as the BPF side counts it.
	Event uint32
	// Detail is the BPF side's instance key.
	Detail uint64
	// Count is the running total, Peak the largest value an event carried.
	Count, Peak uint64
	// FirstNs and LastNs are the CLOCK_MONOTONIC times of the first and
	// latest hit.
	FirstNs, LastNs uint64
	// Name returns the name the BPF side read from the process for this
	// counter. It is called only when the counter first appears; nil
	// means none.
	Name func() string
}

// Observation is what the C/T rule must observe of one reading: the count
// of a counter, and the catalog event it belongs to.
type Observation struct {
	// Key names the counter.
	Key Key
	// Index is the event's index in the catalog.
	Index int
	// Count is the counter's running total.
	Count uint64
}

// Snapshot holds the latest sample of every counter read so far.
type Snapshot struct {
	cat     probes.Catalog
	wall    func(ns uint64) time.Time
	samples map[Key]agg.Sample
}

// New returns an empty snapshot of the counters of cat's events. wall
// converts a BPF timestamp (CLOCK_MONOTONIC nanoseconds) to wall-clock
// time (kernel.Timebase.Wall).
func New(cat probes.Catalog, wall func(ns uint64) time.Time) *Snapshot {
	return &Snapshot{cat: cat, wall: wall, samples: map[Key]agg.Sample{}}
}

// Update takes one reading into the snapshot and returns what the C/T rule
// must observe of it. It reports false, and keeps nothing, for an event the
// catalog does not hold.
func (s *Snapshot) Update(r Reading) (Observation, bool) {
	if int(r.Event) >= len(s.cat.Events) {
		return Observation{}, false
	}
	ev := s.cat.Events[r.Event]
	key := Key{PID: r.PID, Event: ev.ID, Detail: r.Detail}
	prev, seen := s.samples[key]
	if !seen { // the name is read once, when the counter appears
		name := ""
		if r.Name != nil {
			name = r.Name()
		}
		prev.Detail = s.cat.DetailOf(int(r.Event), r.Detail, name)
	}
	s.samples[key] = agg.Sample{PID: r.PID, Event: ev.ID, Detail: prev.Detail, Count: r.Count, Peak: r.Peak,
		First: s.wall(r.FirstNs), Last: s.wall(r.LastNs)}
	return Observation{Key: key, Index: int(r.Event), Count: r.Count}, true
}

// Sample returns the latest sample of a counter.
func (s *Snapshot) Sample(k Key) (agg.Sample, bool) {
	sm, ok := s.samples[k]
	return sm, ok
}

// Keys returns the counters of the processes keep accepts (all with a nil
// keep), ordered by process, event and detail.
func (s *Snapshot) Keys(keep func(pid uint32) bool) []Key {
	var out []Key
	for k := range s.samples {
		if keep == nil || keep(k.PID) {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(x, y Key) int {
		return cmp.Or(cmp.Compare(x.PID, y.PID), cmp.Compare(x.Event, y.Event), cmp.Compare(x.Detail, y.Detail))
	})
	return out
}

// Forget drops counters, e.g. those of a finished job whose pids a later
// process may reuse.
func (s *Snapshot) Forget(keys []Key) {
	for _, k := range keys {
		delete(s.samples, k)
	}
}

// Summary builds the summary of procs from the samples of the processes
// keep accepts (all with a nil keep), the events described by the catalog.
func (s *Snapshot) Summary(host string, start, end time.Time, procs []agg.Proc, keep func(pid uint32) bool, drops []agg.Drop) agg.Summary {
	keys := s.Keys(keep)
	samples := make([]agg.Sample, 0, len(keys))
	for _, k := range keys {
		samples = append(samples, s.samples[k])
	}
	return agg.Build(host, start, end, procs, samples, Describe(s.cat), drops)
}

// Describe adapts the catalog's descriptions of its events to agg.Build.
func Describe(cat probes.Catalog) func(event, detail string, peak uint64) (agg.EventInfo, bool) {
	return func(event, detail string, peak uint64) (agg.EventInfo, bool) {
		d, ok := cat.Describe(event, detail, peak)
		return agg.EventInfo(d), ok
	}
}
