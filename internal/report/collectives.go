package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/ranks"
)

// commKey groups a communicator across the ranks of a job: by value, except
// that a rank-local handle belongs to its process only.
type commKey struct {
	comm agg.Comm
	pid  int
}

func keyOf(c agg.CommCalls) commKey {
	k := commKey{comm: c.Comm}
	if c.Comm.Local {
		k.pid = c.PID
	}
	return k
}

// writeCollectives writes the job's collective counts: per communicator and
// collective, the ranks with each call count, and the time inside.
func writeCollectives(ew *errWriter, j agg.Job) {
	type coll struct {
		byCount      map[uint64][]int
		total, worst time.Duration
		pending      int64
		completed    uint64
		toComplete   time.Duration
		nonblocking  bool
	}
	type comm struct {
		members []int
		inComm  map[int]int // rank in the communicator -> how many processes claim it
		colls   map[string]*coll
	}
	comms := map[commKey]*comm{}
	var order []commKey
	for _, r := range j.Ranks {
		n, err := strconv.Atoi(r.Rank)
		if err != nil {
			n = -1
		}
		for _, c := range r.Collectives {
			k := keyOf(c)
			cm, ok := comms[k]
			if !ok {
				cm = &comm{inComm: map[int]int{}, colls: map[string]*coll{}}
				comms[k] = cm
				order = append(order, k)
			}
			cm.members = append(cm.members, n)
			if c.Rank >= 0 {
				cm.inComm[c.Rank]++
			}
			for _, cc := range c.Calls {
				co, ok := cm.colls[cc.Name]
				if !ok {
					co = &coll{byCount: map[uint64][]int{}}
					cm.colls[cc.Name] = co
				}
				co.byCount[cc.Calls] = append(co.byCount[cc.Calls], n)
				co.total += cc.Total
				co.worst = max(co.worst, cc.Max)
				co.pending += cc.Pending
				co.completed += cc.Completed
				co.toComplete += cc.ToComplete
				co.nonblocking = co.nonblocking || cc.Completed > 0 || cc.Pending != 0
			}
		}
	}
	if len(order) == 0 {
		return
	}
	slices.SortStableFunc(order, func(a, b commKey) int {
		if c := agg.CompareComms(a.comm, b.comm); c != 0 {
			return c
		}
		return a.pid - b.pid
	})
	ew.printf("\nCollective calls per communicator (count: ranks; time inside: total over ranks, longest call):\n")
	for _, k := range order {
		cm := comms[k]
		head := "  " + k.comm.String() + " — ranks " + ranks.Format(cm.members)
		shared := false
		for _, n := range cm.inComm {
			if n > 1 {
				shared = true
			}
		}
		if shared {
			head += " (one id for several communicators of this size, e.g. the halves of a split)"
		}
		if k.comm.Local {
			head += " (rank-local handle: the communicator layout of this build was not inferred, the warning at the start says why)"
		}
		ew.printf("%s\n", head)
		names := make([]string, 0, len(cm.colls))
		for n := range cm.colls {
			names = append(names, n)
		}
		slices.Sort(names)
		w := 0
		for _, n := range names {
			w = max(w, len(n))
		}
		for _, n := range names {
			co := cm.colls[n]
			counts := make([]uint64, 0, len(co.byCount))
			for c := range co.byCount {
				counts = append(counts, c)
			}
			slices.SortFunc(counts, func(a, b uint64) int { return len(co.byCount[b]) - len(co.byCount[a]) })
			var parts []string
			for _, c := range counts {
				rs := co.byCount[c]
				parts = append(parts, rankWord(rs)+": "+thousands(c))
			}
			line := fmt.Sprintf("    %-*s  %s   %s, longest %s", w, n, strings.Join(parts, "; "), round(co.total), round(co.worst))
			if co.nonblocking {
				line += fmt.Sprintf("; completed %s (start to completion %s)", thousands(co.completed), round(co.toComplete))
				if co.pending > 0 {
					line += fmt.Sprintf(", NOT COMPLETED %d", co.pending)
				}
			}
			if len(counts) > 1 {
				line += "   COUNTS DIFFER"
			}
			ew.printf("%s\n", line)
		}
	}
}

// rankWord says "rank 3" or "ranks 0-2".
func rankWord(rs []int) string {
	if len(rs) == 1 {
		return "rank " + ranks.Format(rs)
	}
	return "ranks " + ranks.Format(rs)
}

// round shortens a duration for the table.
func round(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(100 * time.Nanosecond).String()
}
