package hang

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mpiprobe/mpiprobe/agg"
)

// Knot is a set of blocked ranks none of which can move: each waits only
// for ranks of the set, whatever the ranks outside it do. It is the
// deadlock of the AND/OR wait-for model. A blocking point-to-point call,
// MPI_Waitall and a collective are AND-waits (every rank they wait for
// must act); a receive from MPI_ANY_SOURCE and MPI_Waitany or
// MPI_Waitsome are OR-waits (any one will do). A cycle of point-to-point
// calls is the simplest knot; a knot also catches a wildcard receive
// whose candidates are all stuck, one of them in a collective.
type Knot struct {
	// Ranks are the ranks of the knot, sorted.
	Ranks []int
	// Waits say what each rank of the knot waits for, by rank.
	Waits []KnotWait
}

// KnotWait is what one rank of a knot waits for.
type KnotWait struct {
	Rank int
	Call string // the blocked call
	Site string // its call site, "" if unknown
	// Any says one of Of is enough (ANY_SOURCE, MPI_Waitany); otherwise
	// all of Of must act.
	Any bool
	// Of are the ranks it waits for, sorted.
	Of []int
	// Coll is set for a collective: Of are the members of its
	// communicator that are not in the same call.
	Coll bool
	// Wait is the point-to-point operation (the first one when the call
	// waits for several), for its tag and communicator; zero for a
	// collective.
	Wait Wait
	// Known says every rank of Of was read: from the library's requests,
	// or from a communicator whose every member is observed.
	Known bool
}

// orWaits are the completion calls that return when any one of their
// requests completes.
var orWaits = setOf("waitany", "waitsome")

// knot finds the knot of the blocked ranks, or none. A rank whose wait is
// not fully known (peer unknown, a member of its communicator not
// observed, its stack unreadable) is taken as able to move, so the knot
// never rests on a guess; an ended or finished rank is also taken as able
// to move, so that ranks waiting on it are left to the clauses that say
// so and the knot holds only ranks stuck by each other.
func (d *diag) knot() Knot {
	waits := map[int][]KnotWait{}
	absent := map[collCall][]int{}
	for _, r := range d.ranks {
		if !r.blocked || r.ended || r.unread != "" || r.finished() || r.threaded {
			continue
		}
		if ws, ok := d.waitsOfRank(r, absent); ok {
			waits[r.n] = ws
		}
	}
	moving := func(n int) bool { _, stuck := waits[n]; return !stuck }
	free := map[int]bool{}
	for changed := true; changed; {
		changed = false
		// The ranks of one collective share their list of members
		// not in it: it is judged once a pass.
		judged := map[*int]bool{}
		for n, ws := range waits {
			if free[n] {
				continue
			}
			all := true
			for _, w := range ws {
				all = all && d.canAct(w, moving, free, judged)
			}
			if all {
				free[n], changed = true, true
			}
		}
	}
	var k Knot
	for _, r := range d.ranks { // by rank: the knot comes out sorted
		if ws, stuck := waits[r.n]; stuck && !free[r.n] {
			k.Ranks = append(k.Ranks, r.n)
			k.Waits = append(k.Waits, ws...)
		}
	}
	return k
}

// canAct reports whether w can be satisfied: one rank of Of can move (or
// is free) when w.Any or Of is one rank, every one of them otherwise (a
// collective's members not in it). judged keeps the answer for a shared
// Of.
func (d *diag) canAct(w KnotWait, moving func(int) bool, free map[int]bool, judged map[*int]bool) bool {
	if len(w.Of) == 0 {
		return false
	}
	if v, ok := judged[&w.Of[0]]; ok && w.Coll {
		return v
	}
	acts := func(m int) bool { return moving(m) || free[m] }
	var v bool
	if w.Any || len(w.Of) == 1 {
		v = slices.ContainsFunc(w.Of, acts)
	} else {
		v = !slices.ContainsFunc(w.Of, func(m int) bool { return !acts(m) })
	}
	if w.Coll {
		judged[&w.Of[0]] = v
	}
	return v
}

// collCall is one collective call as the knot groups its ranks.
type collCall struct {
	name string
	key  commKey
	seq  uint64
}

// waitsOfRank returns what a blocked rank waits for as a conjunction of
// KnotWaits: a collective waits for every member of its communicator not
// in the same call (one KnotWait, its Of shared, through absent, by the
// ranks of that call), a point-to-point call for one of its candidates
// per request. ok is false when that is not fully known.
func (d *diag) waitsOfRank(r *rstate, absent map[collCall][]int) ([]KnotWait, bool) {
	c := r.call
	if r.coll {
		if r.key.kind != shared || d.ambiguous(r.key) {
			return nil, false
		}
		cc := collCall{c.Name, r.key, r.seq}
		of, done := absent[cc]
		if !done {
			of = d.notInCall(r)
			absent[cc] = of
		}
		if len(of) == 0 {
			// Every member is in (a mismatch or a slow call, not a
			// wait on others), or the members are not all known.
			return nil, false
		}
		return []KnotWait{{Rank: r.n, Call: c.Name, Site: c.Site, Of: of, Coll: true, Known: true}}, true
	}
	ws := waitsOf(c)
	if len(ws) == 0 {
		return nil, false
	}
	var out []KnotWait
	for _, w := range ws {
		of, ok := d.candidates(r.n, w)
		if !ok {
			return nil, false
		}
		out = append(out, KnotWait{Rank: r.n, Call: c.Name, Site: c.Site, Any: len(of) > 1 || w.Peer == AnySource, Of: of, Wait: w, Known: w.Known})
	}
	if orWaits[baseName(c.Name)] && len(out) > 1 {
		// Any one request completing returns the call.
		one := out[0]
		one.Any = true
		for _, w := range out[1:] {
			one.Of = append(one.Of, w.Of...)
			one.Known = one.Known && w.Known
		}
		slices.Sort(one.Of)
		one.Of = slices.Compact(one.Of)
		one.Any = len(one.Of) > 1
		out = []KnotWait{one}
	}
	return out, true
}

// notInCall are the members of r's communicator that are not in r's
// collective call, none when they are not all known and observed. The
// rank's seq of 0 (unknown) matches any.
func (d *diag) notInCall(r *rstate) []int {
	ms := d.membersOf(r.key)
	if !d.complete(r.key, ms) {
		return nil
	}
	var out []int
	for _, m := range ms {
		o := d.byN[m]
		if o.coll && o.call.Name == r.call.Name && o.key == r.key && (o.seq == r.seq || o.seq == 0 || r.seq == 0) {
			continue // with it in the same call
		}
		out = append(out, m)
	}
	return out
}

// candidates are the ranks that can complete w for rank n: its peer, or
// for MPI_ANY_SOURCE every other member of its communicator (known only
// when every member is observed).
func (d *diag) candidates(n int, w Wait) ([]int, bool) {
	switch {
	case w.Peer >= 0:
		if d.byN[w.Peer] == nil {
			return nil, false // not observed: it may well act
		}
		return []int{w.Peer}, true
	case w.Peer == AnySource && !w.Send:
		k := keyOf(agg.Comm{Name: "WORLD"}, n)
		if w.Comm != nil {
			k = keyOf(*w.Comm, n)
		}
		if k.kind != shared || d.ambiguous(k) {
			return nil, false
		}
		ms := d.membersOf(k)
		if !d.complete(k, ms) {
			return nil, false
		}
		return slices.DeleteFunc(slices.Clone(ms), func(m int) bool { return m == n }), true
	}
	return nil, false
}

// complete reports whether ms are all the members of k and every one is
// observed.
func (d *diag) complete(k commKey, ms []int) bool {
	size := k.size
	if k.isWorld() {
		size = d.fullSize()
		if size == 0 {
			return false
		}
	}
	if size == 0 || len(ms) != size {
		return false
	}
	for _, m := range ms {
		if d.byN[m] == nil {
			return false
		}
	}
	return true
}

// knotText is "deadlock: ranks 0-2 cannot move: rank 0 waits for any of
// ranks 1,2 (MPI_Recv from any source tag 6 at a.c:16), rank 1 waits for
// 0 (MPI_Recv tag 1 at a.c:20), rank 2 waits for ranks 0,1 (MPI_Barrier
// on WORLD at a.c:30) [2 of 3 waits read from the MPI library]".
func knotText(d *diag, k Knot) string {
	var parts []string
	known := 0
	type key struct {
		rank        int
		coll, anyOf bool
	}
	var order []key
	merged := map[key]KnotWait{}
	for _, w := range k.Waits {
		kk := key{w.Rank, w.Coll, w.Any}
		if m, ok := merged[kk]; ok && (w.Coll || !w.Any) {
			m.Of = append(slices.Clip(m.Of), w.Of...)
			m.Known = m.Known && w.Known
			merged[kk] = m
			continue
		}
		if _, ok := merged[kk]; !ok {
			order = append(order, kk)
			merged[kk] = w
		}
	}
	for _, kk := range order {
		w := merged[kk]
		w.Of = slices.Compact(slices.Sorted(slices.Values(w.Of))) // Of may be shared
		if w.Known {
			known++
		}
		parts = append(parts, knotWaitText(d, w))
	}
	if len(parts) > maxArrows+1 {
		parts = append(parts[:maxArrows], fmt.Sprintf("... (%d more)", len(parts)-maxArrows))
	}
	return fmt.Sprintf("deadlock: %s cannot move: %s", subject(k.Ranks), strings.Join(parts, ", ")) + readOf(known, len(order), "waits")
}

// knotWaitText is one rank's part of a knot.
func knotWaitText(d *diag, w KnotWait) string {
	if w.Coll {
		s := fmt.Sprintf("rank %d waits for %s (%s", w.Rank, ofText(w.Of), w.Call)
		if r := d.byN[w.Rank]; r != nil {
			s += " on " + d.display[r.key].String()
		}
		if site := shortSite(w.Site); site != "" {
			s += " at " + site
		}
		return s + ")"
	}
	e := Edge{From: w.Rank, To: w.Of[0], Call: w.Call, Site: w.Site, Wait: w.Wait, Any: w.Wait.Peer == AnySource}
	e.Wait.Known = w.Known
	s := edgeText(e)
	if w.Any {
		s = strings.Replace(s, fmt.Sprintf("waits for %d (", e.To), "waits for any of "+ofText(w.Of)+" (", 1)
	}
	return s
}

// ofText names the ranks a rank waits for: "3", "ranks 0,1".
func ofText(rs []int) string {
	if len(rs) == 1 {
		return strconv.Itoa(rs[0])
	}
	return subject(rs)
}

// withKnot adds the knot to a report. The verdict leads with it when the
// clauses before do not already hold its ranks in a cycle or a mismatch
// (a cycle of point-to-point calls is a knot the cycle clause states).
func (d *diag) withKnot(rep *Report) {
	k := d.knot()
	if len(k.Ranks) == 0 {
		return
	}
	rep.Knot = k
	stated := map[int]bool{}
	for _, c := range rep.Cycles {
		for _, n := range CycleRanks(c) {
			stated[n] = true
		}
	}
	for _, c := range d.cycles() {
		for _, n := range c {
			stated[n] = true
		}
	}
	for _, m := range rep.Mismatches {
		for _, s := range m.Sides {
			for _, n := range s.Ranks {
				stated[n] = true
			}
		}
	}
	if allIn(k.Ranks, stated) {
		return
	}
	if !k.anyWait() {
		// Every wait is an AND: the clauses before name each rank's
		// call and whom it waits for; say that together they cannot move.
		rep.Verdict += "; " + knotShort(k)
		return
	}
	// A wildcard wait: no cycle states it, so the knot leads.
	rep.Verdict = knotText(d, k) + "; " + rep.Verdict
	rep.Lead = slices.Clone(k.Ranks)
	rep.Suspects = slices.Sorted(mapKeys(setOfRanks(rep.Suspects, k.Ranks)))
}

// anyWait reports whether a rank of k waits for any one of several ranks.
func (k Knot) anyWait() bool {
	for _, w := range k.Waits {
		if w.Any {
			return true
		}
	}
	return false
}

// knotShort is "deadlock: ranks 0-7 cannot move (1 of 8 waits
// inferred)": each waits for another of them.
func knotShort(k Knot) string {
	inferred := map[int]bool{}
	for _, w := range k.Waits {
		if !w.Known {
			inferred[w.Rank] = true
		}
	}
	s := "deadlock: " + subject(k.Ranks) + " cannot move"
	switch n := len(inferred); {
	case n == len(k.Ranks):
		s += " (waits inferred)"
	case n > 0:
		s += fmt.Sprintf(" (%d of %d waits inferred)", n, len(k.Ranks))
	}
	return s
}

// setOfRanks is the union of rank lists as a set.
func setOfRanks(lists ...[]int) map[int]bool {
	m := map[int]bool{}
	for _, l := range lists {
		for _, n := range l {
			m[n] = true
		}
	}
	return m
}
