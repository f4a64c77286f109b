package agg

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/identity"
)

// Summary is everything mpiprobe reports for one run on one host.
type Summary struct {
	// Host is the node the tracer ran on.
	Host string
	// Start and End bound the traced interval.
	Start, End time.Time
	// Jobs are the MPI jobs seen, ordered by ID; the job of unknown
	// identity (identity.Unknown) comes last.
	Jobs []Job
	// Dropped lists counter updates the BPF side lost because a map was
	// full. They must be shown: the counts above them are then lower bounds.
	Dropped []Drop
}

// Drop counts counter updates lost in BPF because a map was full.
type Drop struct {
	// What names what was lost, e.g. "event counters map full".
	What string
	// Count is how many updates were lost.
	Count uint64
	// Raise optionally says what to raise to avoid the loss, e.g. a flag
	// such as "--max-procs"; renderers fall back to a generic hint when it
	// is empty.
	Raise string
}

// Job is one MPI job's ranks on this host.
type Job struct {
	// ID is the job's identity.Identity Job, or identity.Unknown.
	ID string
	// Ranks are ordered numerically by rank where the rank is numeric
	// (non-numeric ranks such as identity.Unknown follow), then by PID.
	Ranks []Rank
}

// Rank is one traced process and what happened in it.
type Rank struct {
	// Rank is the process's rank in MPI_COMM_WORLD, or identity.Unknown.
	Rank string
	// PID is the process id.
	PID int
	// Comm is the process's command name, or identity.Unknown.
	Comm string
	// Host is the host named by the process's identity; when that is
	// unknown it is the Summary's Host, since the tracer only sees local
	// processes.
	Host string
	// End says how the process ended (or that it still runs).
	End End
	// Events are the process's event totals, by Count descending, then by
	// event id.
	Events []EventTotal
	// Collectives are the collective calls per communicator, when they were
	// tracked (see Summary.AddCollectives).
	Collectives []CommCalls
	// Startup is the time the process spent in MPI_Init and MPI_Finalize,
	// as far as it was observed (Proc.Startup).
	Startup Startup
}

// EventTotal is how often one event happened, with what the catalog says
// about it.
type EventTotal struct {
	// Event is the catalog event id.
	Event string
	// Detail names the instance of the event (Sample.Detail); it may be empty.
	Detail string
	// Layer is the event's MPI software layer (EventInfo.Layer); it may be empty.
	Layer string
	// Count is how often the event happened.
	Count uint64
	// Peak is the largest value the event carried (Sample.Peak), 0 if none.
	Peak uint64
	// First and Last are the earliest and the latest hit; either is zero
	// when unknown.
	First, Last time.Time
	// Message says what the event means; it is the event id when the
	// catalog does not know the event.
	Message string
	// Advice says what to do about the event; it may be empty.
	Advice string
}

// Build groups procs and samples into a Summary.
//
// Samples are cumulative: for one (pid, event) the highest Count and the
// earliest First and latest Last are kept, so several reads of the same
// counter may be passed; Peak keeps the highest value. Samples of one event
// with different Details are kept apart. info describes an event id, given
// the detail and peak of one total (advice may suggest a value from them);
// when it is nil or does not know the event, Message is the id and Advice
// and Layer are empty (an empty catalog Message also falls back to the id). drops with a
// zero Count are left out; the others are kept in the given order.
//
// Identity fields that are empty are taken as identity.Unknown. When two
// procs share a PID the first one is used.
func Build(host string, start, end time.Time, procs []Proc, samples []Sample, info func(event, detail string, peak uint64) (EventInfo, bool), drops []Drop) Summary {
	s := Summary{Host: host, Start: start, End: end}

	type key struct {
		pid           int
		event, detail string
	}
	merged := make(map[key]*EventTotal)
	byPID := make(map[int][]*EventTotal)
	for _, sm := range samples {
		k := key{pid: int(sm.PID), event: sm.Event, detail: sm.Detail}
		t, ok := merged[k]
		if !ok {
			t = &EventTotal{Event: sm.Event, Detail: sm.Detail}
			merged[k] = t
			byPID[k.pid] = append(byPID[k.pid], t)
		}
		t.Count = max(t.Count, sm.Count)
		t.Peak = max(t.Peak, sm.Peak)
		t.First = Earliest(t.First, sm.First)
		t.Last = Latest(t.Last, sm.Last)
	}

	describe := func(t *EventTotal) EventTotal {
		out := *t
		out.Message = t.Event
		if info != nil {
			if ei, ok := info(t.Event, t.Detail, t.Peak); ok {
				if ei.Message != "" {
					out.Message = ei.Message
				}
				out.Advice = ei.Advice
				out.Layer = ei.Layer
			}
		}
		return out
	}
	events := func(pid int) []EventTotal {
		ts := byPID[pid]
		out := make([]EventTotal, 0, len(ts))
		for _, t := range ts {
			out = append(out, describe(t))
		}
		sortEvents(out)
		return out
	}

	jobs := make(map[string][]Rank)
	seen := make(map[int]bool)
	for _, p := range procs {
		if seen[p.PID] {
			continue
		}
		seen[p.PID] = true
		id := p.Identity
		h := known(id.Host)
		if h == identity.Unknown {
			h = host
		}
		job := known(id.Job)
		jobs[job] = append(jobs[job], Rank{
			Rank:    known(id.Rank),
			PID:     p.PID,
			Comm:    known(p.Comm),
			Host:    h,
			End:     p.End,
			Events:  events(p.PID),
			Startup: p.Startup,
		})
	}
	// Samples of processes the loader does not know: keep them, with
	// what little is known.
	var orphans []int
	for pid := range byPID {
		if !seen[pid] {
			orphans = append(orphans, pid)
		}
	}
	for _, pid := range orphans {
		jobs[identity.Unknown] = append(jobs[identity.Unknown], Rank{
			Rank:   identity.Unknown,
			PID:    pid,
			Comm:   identity.Unknown,
			Host:   host,
			End:    End{Kind: Vanished},
			Events: events(pid),
		})
	}

	for id, ranks := range jobs {
		slices.SortFunc(ranks, func(a, b Rank) int {
			if c := compareIDs(a.Rank, b.Rank); c != 0 {
				return c
			}
			return cmp.Compare(a.PID, b.PID)
		})
		s.Jobs = append(s.Jobs, Job{ID: id, Ranks: ranks})
	}
	slices.SortFunc(s.Jobs, func(a, b Job) int {
		au, bu := a.ID == identity.Unknown, b.ID == identity.Unknown
		switch {
		case au && !bu:
			return 1
		case bu && !au:
			return -1
		}
		return compareIDs(a.ID, b.ID)
	})

	for _, d := range drops {
		if d.Count > 0 {
			s.Dropped = append(s.Dropped, d)
		}
	}
	return s
}

// Totals sums each (event, detail) over all ranks of all jobs: Count is the
// sum, Peak the highest, First the earliest and Last the latest hit. They are
// ordered like a Rank's events, by Count descending, then by event id and detail.
func (s Summary) Totals() []EventTotal {
	type key struct{ event, detail string }
	idx := make(map[key]int)
	var out []EventTotal
	for _, j := range s.Jobs {
		for _, r := range j.Ranks {
			for _, e := range r.Events {
				k := key{e.Event, e.Detail}
				i, ok := idx[k]
				if !ok {
					idx[k] = len(out)
					out = append(out, e)
					continue
				}
				t := &out[i]
				t.Count += e.Count
				t.Peak = max(t.Peak, e.Peak)
				t.First = Earliest(t.First, e.First)
				t.Last = Latest(t.Last, e.Last)
			}
		}
	}
	sortEvents(out)
	return out
}

// sortEvents orders events by Count descending, then by id and detail.
func sortEvents(es []EventTotal) {
	slices.SortFunc(es, func(a, b EventTotal) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Event, b.Event); c != 0 {
			return c
		}
		return cmp.Compare(a.Detail, b.Detail)
	})
}

// known maps an empty identity field to identity.Unknown.
func known(v string) string {
	if v == "" {
		return identity.Unknown
	}
	return v
}

// compareIDs orders decimal ids numerically before all others, which are
// ordered as strings; equal numbers ("1", "01") fall back to string order so
// the order stays total.
func compareIDs(a, b string) int {
	an, aerr := strconv.ParseUint(a, 10, 64)
	bn, berr := strconv.ParseUint(b, 10, 64)
	switch {
	case aerr == nil && berr == nil:
		if c := cmp.Compare(an, bn); c != 0 {
			return c
		}
	case aerr == nil:
		return -1
	case berr == nil:
		return 1
	}
	return cmp.Compare(a, b)
}

// Earliest returns the earlier of two times, ignoring zero ones.
func Earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// Latest returns the later of two times, ignoring zero ones.
func Latest(a, b time.Time) time.Time {
	if a.IsZero() || b.After(a) {
		return b
	}
	return a
}
