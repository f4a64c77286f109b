package agg

import (
	"cmp"
	"slices"
	"time"
)

// CommCalls is what collective tracking (--collectives) counted on one
// communicator of one process.
type CommCalls struct {
	// PID is the process.
	PID int
	// Comm identifies the communicator across ranks.
	Comm Comm
	// Rank is the process's rank in the communicator, -1 if unknown.
	Rank int
	// Calls are the collectives called on it, ordered by name.
	Calls []CollCalls
}

// CollCalls is one collective on one communicator of one process.
type CollCalls struct {
	// Name is the collective, "MPI_Allreduce".
	Name string
	// Calls counts the calls, those still in flight included.
	Calls uint64
	// Total and Max are the time spent inside completed calls.
	Total, Max time.Duration
	// For nonblocking collectives: requests not seen completing
	// (Pending), seen completing (Completed) through MPI_Wait, MPI_Test and
	// their forms, and the total time from start to completion.
	Pending    int64
	Completed  uint64
	ToComplete time.Duration
}

// AddCollectives attaches the per-communicator collective counts to the
// ranks they belong to (by PID); counts of a process the summary does not
// know are dropped only if it has no rank to hold them, which Build
// prevents for processes that were traced. Communicators are ordered WORLD
// first, then SELF, then by id and size.
func (s *Summary) AddCollectives(cs []CommCalls) {
	byPID := map[int][]CommCalls{}
	for _, c := range cs {
		c.Calls = slices.Clone(c.Calls)
		slices.SortFunc(c.Calls, func(a, b CollCalls) int { return cmp.Compare(a.Name, b.Name) })
		byPID[c.PID] = append(byPID[c.PID], c)
	}
	for ji := range s.Jobs {
		for ri := range s.Jobs[ji].Ranks {
			r := &s.Jobs[ji].Ranks[ri]
			r.Collectives = append(r.Collectives, byPID[r.PID]...)
			slices.SortStableFunc(r.Collectives, func(a, b CommCalls) int { return CompareComms(a.Comm, b.Comm) })
		}
	}
}

// CompareComms orders communicators for display: WORLD, SELF, then named
// ones by name, then by local flag, id and size.
func CompareComms(a, b Comm) int {
	rank := func(c Comm) int {
		switch c.Name {
		case "WORLD":
			return 0
		case "SELF":
			return 1
		case "":
			return 3
		}
		return 2
	}
	if c := cmp.Compare(rank(a), rank(b)); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	if a.Local != b.Local {
		if a.Local {
			return 1
		}
		return -1
	}
	if c := cmp.Compare(a.ID, b.ID); c != 0 {
		return c
	}
	return cmp.Compare(a.Size, b.Size)
}
