package hang

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// Args are the arguments of a collective call that must agree across its
// ranks, as read at entry; a nil *Args is unknown.
type Args struct {
	Root     int    `json:"root"`     // -1 when the collective has no root
	Count    int64  `json:"count"`    // elements sent (the first count argument)
	Datatype string `json:"datatype"` // the datatype's name or handle
}

// String renders the arguments that matter: "root 1 count 4 MPI_INT".
func (a *Args) String() string {
	if a == nil {
		return ""
	}
	var parts []string
	if a.Root >= 0 {
		parts = append(parts, fmt.Sprintf("root %d", a.Root))
	}
	parts = append(parts, fmt.Sprintf("count %d", a.Count))
	if a.Datatype != "" {
		parts = append(parts, text.Line(a.Datatype))
	}
	return strings.Join(parts, " ")
}

// Side is one of the calls of a mismatch: the ranks making it.
type Side struct {
	Ranks []int
	Call  string
	Seq   uint64
	Site  string
	Args  *Args
}

// Mismatch says that the ranks of one communicator are blocked in
// collectives that cannot match: different calls, or (when every member
// is blocked on it) the same call at different call sites or with
// different arguments.
type Mismatch struct {
	Comm  agg.Comm
	Sides []Side
}

// Absence is a member of a communicator that is not in the collective
// other members wait in on it.
type Absence struct {
	Rank int
	// Call and Comm are the collective the others wait in; Waiting are
	// those ranks.
	Call    string
	Comm    agg.Comm
	Waiting []int
	// State says where the absent rank is: "finalized" (in MPI_Finalize
	// without having made the call), "done" (in MPI_Finalize after it),
	// "computing", "ended", "elsewhere" (in another MPI call, In),
	// "entering" (in the call for less than minWait) or "unknown".
	State string
	In    string
}

// isFinalize reports whether a call is MPI_Finalize.
func isFinalize(name string) bool { return baseName(name) == "finalize" }

// isInit reports whether a call is MPI_Init or MPI_Init_thread: collective
// over WORLD, without a communicator argument.
func isInit(name string) bool {
	n := baseName(name)
	return n == "init" || n == "init_thread"
}

// IsCollective reports whether name is a collective MPI call.
func IsCollective(name string) bool { return isCollectiveName(name) }

// finished reports whether r sits in MPI_Finalize.
func (r *rstate) finished() bool { return !r.ended && r.call != nil && isFinalize(r.call.Name) }

// allGroups returns every group of ranks blocked in one collective, the
// largest first (ties: lowest rank).
func (d *diag) allGroups() []*group {
	type gkey struct {
		name  string
		key   commKey
		seq   uint64
		local bool
		hist  string
	}
	groups := make(map[gkey]*group)
	var order []*group
	for _, r := range d.ranks {
		if !r.blocked || !r.coll {
			continue
		}
		gk := gkey{name: r.call.Name}
		if r.key.kind == local {
			gk.local = true
		} else {
			gk.key, gk.seq = r.key, r.seq
			if d.ambiguous(r.key) {
				gk.hist = history(r, r.key)
			}
		}
		g := groups[gk]
		if g == nil {
			g = &group{name: gk.name, key: gk.key, seq: gk.seq, local: gk.local, amb: gk.hist != ""}
			groups[gk] = g
			order = append(order, g)
		}
		g.ranks = append(g.ranks, r.n)
	}
	slices.SortStableFunc(order, func(a, b *group) int { return len(b.ranks) - len(a.ranks) })
	return order
}

// sideOf is the identity of r's collective for mismatch detection.
func sideOf(r *rstate) Side {
	return Side{Call: r.call.Name, Seq: r.seq, Site: r.call.Site, Args: r.call.Args}
}

func sameSide(a, b Side) bool {
	if a.Call != b.Call || a.Seq != b.Seq || a.Site != b.Site {
		return false
	}
	if a.Args == nil || b.Args == nil {
		return true
	}
	return *a.Args == *b.Args
}

// mismatch finds the mismatch of the collectives blocked on key k, if any.
func (d *diag) mismatch(k commKey, gs []*group) (Mismatch, bool) {
	var sides []Side
	var in []int
	names := map[string]bool{}
	for _, g := range gs {
		for _, n := range g.ranks {
			s := sideOf(d.byN[n])
			in = append(in, n)
			names[s.Call+"#"+fmt.Sprint(s.Seq)] = true
			i := slices.IndexFunc(sides, func(o Side) bool { return sameSide(o, s) })
			if i < 0 {
				s.Ranks = []int{n}
				sides = append(sides, s)
			} else {
				sides[i].Ranks = append(sides[i].Ranks, n)
			}
		}
	}
	if len(sides) < 2 {
		return Mismatch{}, false
	}
	if len(names) < 2 {
		// The same call at different sites or with different
		// arguments: a mismatch only when nobody else is missing.
		members := d.membersOf(k)
		size := k.size
		if k.isWorld() {
			size = d.worldSize()
		}
		if len(members) != len(in) || (size > 0 && size != len(in)) {
			return Mismatch{}, false
		}
	}
	for i := range sides {
		slices.Sort(sides[i].Ranks)
	}
	slices.SortFunc(sides, func(a, b Side) int { return a.Ranks[0] - b.Ranks[0] })
	return Mismatch{Comm: d.display[k], Sides: sides}, true
}

// mismatchText renders a mismatch: "mismatch on WORLD: rank 0 in
// MPI_Reduce root 0 at x.c:19, rank 1 in MPI_Reduce root 1 at x.c:21".
func mismatchText(m Mismatch, since time.Duration, atLeast bool) string {
	var parts []string
	for _, s := range m.Sides {
		p := subject(s.Ranks) + " in " + text.Line(s.Call) + seqText(s.Seq)
		if a := s.Args.String(); a != "" {
			p += " " + a
		}
		if s.Site != "" {
			p += " at " + text.Line(s.Site)
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("mismatch on %s for %s: %s", m.Comm.String(), forText(since, atLeast), strings.Join(parts, ", "))
}

// blockedVerdict explains a job where some ranks are blocked and some are
// in collectives on known communicators: every communicator with blocked
// ranks is explained (a mismatch, or each group with the members that are
// not in it), then the ranks not yet named.
func (d *diag) blockedVerdict(rep *Report, gs []*group) []string {
	var clauses []string
	named := map[int]bool{}
	described := map[int]bool{} // ranks whose call a clause already gave
	suspects := map[int]bool{}
	byKey := map[commKey][]*group{}
	var keys []commKey
	for _, g := range gs {
		if g.local {
			continue
		}
		if _, ok := byKey[g.key]; !ok {
			keys = append(keys, g.key)
		}
		byKey[g.key] = append(byKey[g.key], g)
	}
	primary := true
	for _, k := range keys {
		kgs := byKey[k]
		if m, ok := d.mismatch(k, kgs); ok && !kgs[0].amb {
			since, atLeast := time.Duration(-1), false
			for _, s := range m.Sides {
				for _, n := range s.Ranks {
					c := d.byN[n].call
					if since < 0 || c.Since < since {
						since = c.Since
					}
					atLeast = atLeast || c.AtLeast
					named[n], suspects[n] = true, true
				}
			}
			rep.Mismatches = append(rep.Mismatches, m)
			clauses = append(clauses, mismatchText(m, since, atLeast))
			if primary {
				rep.Lead = append(rep.Lead, m.Sides[0].Ranks...)
				for _, s := range m.Sides[1:] {
					rep.Lead = append(rep.Lead, s.Ranks...)
				}
				slices.Sort(rep.Lead)
			}
			primary = false
			continue
		}
		for _, g := range kgs {
			cl, waiting, odd, stated, abs := d.groupVerdict(g, !primary, described)
			if !primary && len(abs) > 0 && allIn(g.ranks, described) && allIn(odd, described) {
				// Every rank of this group and every member it
				// waits for were described by an earlier group
				// (ranks waiting for each other on two
				// communicators): say only that they wait in turn.
				cl = []string{waitsInTurn(g, odd)}
			}
			for _, n := range g.ranks {
				described[n] = true
			}
			for _, a := range abs {
				described[a.Rank] = true
			}
			for _, n := range g.ranks {
				named[n] = true
			}
			for _, a := range abs {
				named[a.Rank] = true
				if a.State != "done" && a.State != "entering" {
					suspects[a.Rank] = true
				}
			}
			rep.Absent = append(rep.Absent, abs...)
			if primary {
				rep.Waiting, rep.Odd, d.stated = waiting, odd, stated
				rep.Lead = slices.Clone(g.ranks)
				if len(abs) > 0 && allFinalized(abs) {
					rep.Lead = nil
					for _, a := range abs {
						rep.Lead = append(rep.Lead, a.Rank)
					}
				}
			}
			primary = false
			clauses = append(clauses, cl...)
		}
	}
	for _, c := range d.cycles() {
		for _, n := range c {
			suspects[n] = true
		}
	}
	clauses = append(clauses, d.cycleClauses()...)
	// Blocked ranks outside any collective group: point-to-point and
	// other calls, those that did not finish first.
	var blocked, done itemList
	var unobserved []int
	for _, r := range d.ranks {
		if named[r.n] || !r.blocked || r.coll {
			continue
		}
		named[r.n] = true
		if r.finished() {
			done.add(r.n, "finished (in MPI_Finalize)", "finished (in MPI_Finalize)", r.call.Since)
			continue
		}
		t := callText(r)
		blocked.add(r.n, "is in "+t, "are in "+t, r.call.Since)
		if r.call.AtLeast {
			blocked.index["is in "+t].atLeast = true
		}
		if p := r.call.Peer; p >= 0 && !slices.Contains(unobserved, p) {
			if pr := d.byN[p]; pr == nil {
				unobserved = append(unobserved, p)
			} else if !pr.blocked || pr.finished() {
				suspects[p] = true
			}
		}
		if primary && len(rep.Lead) == 0 {
			rep.Lead = append(rep.Lead, r.n)
		}
	}
	for _, it := range blocked.shown() {
		clauses = append(clauses, it.text()+" for "+forText(it.minSince, it.atLeast))
	}
	if rest := blocked.rest(); rest > 0 {
		clauses = append(clauses, fmt.Sprintf("%d more %s blocked in other calls", rest, verb(rest > 1, "rank is", "ranks are")))
	}
	clauses = append(clauses, d.describe(&done)...)
	var others itemList
	for _, r := range d.ranks {
		if named[r.n] {
			continue
		}
		named[r.n] = true
		others.add(r.n, state(r, nil, false), state(r, nil, true), 0)
	}
	slices.Sort(unobserved)
	for _, p := range unobserved {
		others.add(p, "is not observed here", "are not observed here", 0)
	}
	clauses = append(clauses, d.describe(&others)...)
	if len(keys) == 0 || !keys[0].isWorld() {
		if s, _ := d.worldMissing(d.worldSize()); s != "" && !slices.Contains(clauses, s) {
			clauses = append(clauses, s)
		}
	}
	rep.Suspects = slices.Sorted(mapKeys(suspects))
	return clauses
}

// allIn reports whether every rank of rs is in set.
func allIn(rs []int, set map[int]bool) bool {
	for _, n := range rs {
		if !set[n] {
			return false
		}
	}
	return true
}

// waitsInTurn says that the ranks of g, whose call an earlier clause gave
// ("rank 1 is in MPI_Barrier on WORLD"), wait there for the members odd of
// its communicator, also described already: "rank 1 in turn waits there
// for rank 0".
func waitsInTurn(g *group, odd []int) string {
	return fmt.Sprintf("%s in turn %s there for %s", subject(g.ranks), verb(len(g.ranks) > 1, "waits", "wait"), subject(odd))
}

// CycleRanks returns the ranks of a cycle of the wait-for graph, in order.
func CycleRanks(c []Edge) []int {
	out := make([]int, len(c))
	for i, e := range c {
		out[i] = e.From
	}
	return out
}

// addCycles makes the ranks of the wait-for graph's cycles suspects, and,
// when the verdict starts with them (the library's requests were read),
// the ranks it leads with.
func addCycles(in []Rank, rep *Report) {
	if len(rep.Cycles) == 0 {
		return
	}
	set := map[int]bool{}
	for _, n := range rep.Suspects {
		set[n] = true
	}
	for _, c := range rep.Cycles {
		for _, n := range CycleRanks(c) {
			set[n] = true
		}
	}
	rep.Suspects = slices.Sorted(mapKeys(set))
	if hasWaits(in) {
		rep.Lead = slices.Sorted(slices.Values(CycleRanks(rep.Cycles[0])))
	}
}

func allFinalized(abs []Absence) bool {
	for _, a := range abs {
		if a.State != "finalized" {
			return false
		}
	}
	return true
}

func mapKeys(m map[int]bool) func(func(int) bool) {
	return func(yield func(int) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
