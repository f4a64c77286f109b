package status

// What a running --collectives session recorded of the ranks.

import (
	"fmt"

	"github.com/mpiprobe/mpiprobe/internal/collstate"
)

// readHistory returns, per pid, the collective counts of running
// --collectives sessions.
func readHistory(cfg Config, pids []int, res *Result) map[int][]collstate.Entry {
	want := map[int]bool{}
	for _, p := range pids {
		want[p] = true
	}
	sessions, err := collstate.OpenPinned(cfg.PinRoot, func(pid int) bool { return !gone(pid) })
	if err != nil {
		res.Notes = append(res.Notes, "collective history: "+err.Error())
	}
	out := map[int][]collstate.Entry{}
	for _, s := range sessions {
		es, err := collstate.Read(s.Maps, func(pid int) bool { return want[pid] })
		s.Close()
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("collective history of mpiprobe pid %d: %v", s.PID, err))
			continue
		}
		if len(es) > 0 {
			res.History = append(res.History, s.PID)
		}
		for _, e := range es {
			out[e.PID] = append(out[e.PID], e)
		}
	}
	return out
}

// inFlight finds the history entry of the collective a thread is in: same
// name and a thread inside. When several communicators qualify, the one
// the stack shows decides; a single entry wins over the stack's vote, since
// the probe read the communicator from the call's own argument.
func inFlight(hist []collstate.Entry, th Thread) (collstate.Entry, collstate.Stat, bool) {
	var found []struct {
		e  collstate.Entry
		st collstate.Stat
	}
	for _, e := range hist {
		for _, st := range e.Stats {
			if st.Name == th.Call && st.Inside > 0 {
				found = append(found, struct {
					e  collstate.Entry
					st collstate.Stat
				}{e, st})
			}
		}
	}
	if len(found) > 1 && th.Comm != nil {
		for _, f := range found {
			if f.e.Comm.ID == th.Comm.ID && f.e.Comm.Size == th.Comm.Size {
				return f.e, f.st, true
			}
		}
	}
	if len(found) == 1 {
		return found[0].e, found[0].st, true
	}
	return collstate.Entry{}, collstate.Stat{}, false
}

// completionCalls complete requests.
var completionCalls = map[string]bool{
	"MPI_Wait": true, "MPI_Test": true, "MPI_Waitall": true, "MPI_Testall": true,
	"MPI_Waitany": true, "MPI_Testany": true, "MPI_Waitsome": true, "MPI_Testsome": true,
}

// completing finds the nonblocking collective a thread in a completion
// call waits for: the only one of the rank with a request not completed.
func completing(hist []collstate.Entry, th Thread) (collstate.Entry, collstate.Stat, bool) {
	if !completionCalls[th.Call] {
		return collstate.Entry{}, collstate.Stat{}, false
	}
	var e collstate.Entry
	var st collstate.Stat
	n := 0
	for _, h := range hist {
		for _, s := range h.Stats {
			if s.Pending > 0 {
				e, st = h, s
				n++
			}
		}
	}
	return e, st, n == 1
}

// counts turns history entries into per-communicator counts.
func counts(es []collstate.Entry) []CommCount {
	var out []CommCount
	for _, e := range es {
		c := CommCount{Comm: e.Comm, Calls: map[string]uint64{}}
		for _, st := range e.Stats {
			c.Calls[st.Name] = st.Calls
		}
		out = append(out, c)
	}
	return out
}
