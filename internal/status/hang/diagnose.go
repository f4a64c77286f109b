package hang

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/ranks"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// Call is an MPI call a rank is inside now.
type Call struct {
	Name  string        // "MPI_Allreduce"
	Comm  *agg.Comm     // nil if the call has no communicator or it is unknown
	Seq   uint64        // for collectives: this is the Seq-th call of Name on Comm by this rank (1-based); 0 if unknown
	Peer  int           // point-to-point peer rank in WORLD; -1 if none/unknown; -2 for MPI_ANY_SOURCE
	Since time.Duration // how long the rank has been inside
	// AtLeast says Since is a lower bound: the call was already in
	// progress when observation began. The verdict then says "for at least".
	AtLeast bool
	Site    string // application call site ("main+0x1e4 (app.c:32)"), "" if unknown
	// Args are the collective's root, count and datatype when they were
	// read at entry; nil if unknown.
	Args *Args
	// Members are the WORLD ranks of Comm's group when the library's group
	// was read; nil if unknown. They name the members of a communicator
	// that never called on it (the other half of a split).
	Members []int
	// Waits are the point-to-point operations the call waits for, read
	// from the library or inferred (see waitfor.go); nil if unknown.
	Waits []Wait
}

// Rank is one rank's state.
type Rank struct {
	Rank  int    // the rank in WORLD
	PID   int    // its process id (not used by Diagnose)
	Host  string // the host it runs on (not used by Diagnose)
	In    *Call  // nil: computing (in no MPI call)
	Ended string // "" while it runs; else how it ended ("exit 0", "killed by SIGKILL")
	// Counts[comm][collective] = calls made (completed plus the current
	// one); nil if no history is known (probes attached after the hang).
	// A non-nil map is taken as the complete history: a collective or
	// communicator missing from it was called 0 times.
	Counts map[agg.Comm]map[string]uint64
	// Unreadable says why the rank's state is unknown (its stack could
	// not be unwound); "" when In says it. An unreadable rank is never
	// taken as computing.
	Unreadable string
	// Threaded says another thread of the rank may act while In blocks:
	// In is not its main thread's call, or several of its threads are in
	// MPI calls. Such a rank is never part of a knot.
	Threaded bool
	// Stopped says how the rank is stopped ("by SIGSTOP", "by its
	// debugger"); "" while it runs. A stopped rank makes no progress: In
	// is where it stopped, not a call it waits in, and the verdict names
	// it first. Resume says how to resume it ("kill -CONT 4242"), "" when
	// it cannot be said.
	Stopped, Resume string
}

// Divergence flags a rank whose count of one collective on one
// communicator differs from the other members'.
type Divergence struct {
	Rank   int      // the flagged rank
	Comm   agg.Comm // the communicator
	Call   string   // the collective ("MPI_Allreduce")
	Count  uint64   // how many times the rank called it
	Others uint64   // the count most members have (ties: the larger)
}

// Report is the diagnosis of a job.
type Report struct {
	// Verdict is one line saying who waits where, or what is known when
	// that cannot be decided (see the package documentation).
	Verdict string
	// Waiting holds the ranks in the largest group blocked in the same
	// collective call (same Name, Comm, Seq), sorted. It is empty when no
	// such group can be established: nobody blocked in a collective, or
	// the verdict says "are in" because the communicator cannot be
	// compared across ranks (local handles, or an id shared by several
	// communicators).
	Waiting []int
	// Odd holds the known members of that communicator that are not in
	// Waiting (the suspects), sorted.
	Odd []int
	// Divergent lists every collective count that differs from the one
	// most members of its communicator have, ordered by communicator
	// (WORLD first), collective and rank. It is filled even when the
	// verdict does not mention it.
	Divergent []Divergence
	// Threshold is the minWait the report was made with.
	Threshold time.Duration
	// Suspects are the ranks that block progress: members missing from
	// a collective others wait in, the sides of a mismatch, the ranks of
	// a cycle, the not-blocked peers blocked ranks wait on. Sorted.
	Suspects []int
	// Lead are the ranks the verdict names first.
	Lead []int
	// Mismatches are the communicators whose ranks are blocked in
	// collectives that cannot match.
	Mismatches []Mismatch
	// Absent lists, for every group of ranks blocked in one collective,
	// the members of its communicator that are not in it.
	Absent []Absence
	// Edges is the wait-for graph of the ranks blocked in point-to-point
	// calls, Cycles its cycles (see waitfor.go).
	Edges  []Edge
	Cycles [][]Edge
	// Knot holds the blocked ranks none of which can move, each waiting
	// only for ranks of the knot (see knot.go); empty when there is none.
	Knot Knot
}

// rstate is Diagnose's view of one rank.
type rstate struct {
	n      int
	unread string // why the state is unknown ("" if known)
	// threaded: another thread may act while call blocks
	threaded bool
	call     *Call  // nil when computing or ended
	ended    bool   // the rank has ended (its call, if any, is ignored)
	how      string // how it ended, cleaned
	stopped  string // how it is stopped, cleaned ("" while it runs)
	resume   string // how to resume it, cleaned
	blocked  bool   // inside call for minWait or more
	coll     bool   // call is a collective on a known communicator
	key      commKey
	seq      uint64                        // Seq of the collective, from the call or else from Counts
	counts   map[commKey]map[string]uint64 // nil: no history
}

// diag holds the normalised input of Diagnose.
type diag struct {
	input   []Rank
	minWait time.Duration
	ranks   []*rstate // sorted by rank
	byN     map[int]*rstate
	members map[commKey][]int    // known members of shared communicators other than WORLD
	read    map[commKey][]int    // their members as the library's group says, nil when ranks disagree
	display map[commKey]agg.Comm // how to print each key
	worldSz int                  // the largest size of WORLD any rank reports
	stated  map[int]bool         // odd ranks whose count the first group's clause states
}

// group is a candidate answer to "who waits where".
type group struct {
	name  string  // the collective
	key   commKey // its communicator (unset when local)
	seq   uint64
	local bool // ranks in name on local handles: not known to be one call
	amb   bool // key is shared by several communicators
	ranks []int
}

// Diagnose decides who waits where. Ranks inside a call for less than
// minWait are treated as making progress. The rules are described in the
// package documentation.
func Diagnose(ranks []Rank, minWait time.Duration) Report {
	d := newDiag(ranks, minWait)
	rep := Report{Threshold: minWait, Divergent: d.divergences()}

	anyBlocked, allEnded := false, true
	for _, r := range d.ranks {
		anyBlocked = anyBlocked || r.blocked
		allEnded = allEnded && r.ended
	}

	var clauses []string
	skip := func(Divergence) bool { return false }
	showDiv := true
	switch {
	case len(d.ranks) == 0:
		clauses = []string{"no rank is observed"}
	case !anyBlocked && allEnded:
		clauses = d.allEnded()
	case !anyBlocked:
		clauses = d.progress()
		// Counts of a running job are read at different moments: a
		// lag is expected and says nothing.
		showDiv = false
	default:
		gs := d.allGroups()
		switch {
		case len(gs) > 0 && gs[0].local:
			clauses = d.localVerdict(gs[0])
			clauses = append(clauses, d.cycleClauses()...)
		default:
			clauses = d.blockedVerdict(&rep, gs)
			if len(gs) > 0 {
				g := gs[0]
				skip = func(v Divergence) bool {
					return d.stated[v.Rank] && v.Call == g.name && keyOf(v.Comm, v.Rank) == g.key
				}
			}
		}
	}
	if showDiv {
		if s := divergenceClause(rep.Divergent, skip); s != "" {
			clauses = append(clauses, s)
		}
	}
	stopped := d.stoppedClause()
	if stopped != "" {
		clauses = append([]string{stopped}, clauses...)
	}
	rep.Verdict = strings.Join(clauses, "; ")
	withWaitFor(ranks, minWait, &rep)
	addCycles(ranks, &rep)
	d.withKnot(&rep)
	d.leadStopped(&rep)
	return rep
}

// stoppedClause names the stopped ranks, the first thing to say of a job:
// a stopped rank makes no progress, and every rank that needs it waits
// for as long as it is stopped. "" when none is stopped.
func (d *diag) stoppedClause() string {
	var items itemList
	var resume []string
	for _, r := range d.ranks {
		if r.stopped == "" || r.ended {
			continue
		}
		items.add(r.n, "is stopped "+r.stopped, "are stopped "+r.stopped, 0)
		if r.resume != "" {
			resume = append(resume, r.resume)
		}
	}
	shown := items.shown()
	if len(shown) == 0 {
		return ""
	}
	var parts []string
	for _, it := range shown {
		parts = append(parts, it.text())
	}
	s := strings.Join(parts, ", ") + ": a stopped rank makes no progress, and the ranks that need it wait for as long as it is stopped"
	if rest := items.rest(); rest > 0 {
		s += fmt.Sprintf(" (%d more %s stopped)", rest, verb(rest > 1, "rank is", "ranks are"))
	}
	switch {
	case len(resume) == 1:
		s += " (" + resume[0] + " resumes it)"
	case len(resume) > 1:
		s += " (" + strings.Join(resume, ", ") + " resume them)"
	}
	return s
}

// leadStopped makes the stopped ranks the first suspects and the lead.
func (d *diag) leadStopped(rep *Report) {
	var stopped []int
	for _, r := range d.ranks {
		if r.stopped != "" && !r.ended {
			stopped = append(stopped, r.n)
		}
	}
	if len(stopped) == 0 {
		return
	}
	rep.Lead = stopped
	for _, n := range stopped {
		if !slices.Contains(rep.Suspects, n) {
			rep.Suspects = append(rep.Suspects, n)
		}
	}
	slices.Sort(rep.Suspects)
}

func newDiag(in []Rank, minWait time.Duration) *diag {
	d := &diag{
		input:   in,
		minWait: minWait,
		byN:     make(map[int]*rstate),
		members: make(map[commKey][]int),
		read:    make(map[commKey][]int),
		display: make(map[commKey]agg.Comm),
	}
	for i := range in {
		src := &in[i]
		if src.Rank < 0 {
			continue
		}
		if _, dup := d.byN[src.Rank]; dup {
			continue // the first entry of a rank wins
		}
		r := &rstate{n: src.Rank, unread: text.Line(src.Unreadable), stopped: text.Line(src.Stopped), resume: text.Line(src.Resume), threaded: src.Threaded}
		if src.Ended != "" {
			r.ended, r.how = true, text.Line(src.Ended)
		} else {
			r.call = src.In
		}
		if src.Counts != nil {
			r.counts = make(map[commKey]map[string]uint64, len(src.Counts))
			for c, m := range src.Counts {
				k := keyOf(c, r.n)
				d.note(k, c)
				dst := r.counts[k]
				if dst == nil {
					dst = make(map[string]uint64, len(m))
					r.counts[k] = dst
				}
				for name, n := range m {
					dst[name] = max(dst[name], n)
				}
			}
		}
		if c := r.call; c != nil {
			// A stopped rank waits for nobody: it is not running.
			r.blocked = c.Since >= minWait && r.stopped == ""
			r.seq = c.Seq
			switch {
			case isInit(c.Name):
				// MPI_Init is collective over WORLD.
				w := agg.Comm{Name: "WORLD"}
				r.key, r.coll = keyOf(w, r.n), true
				d.note(r.key, w)
			case c.Comm != nil && !isFinalize(c.Name):
				r.key = keyOf(*c.Comm, r.n)
				d.note(r.key, *c.Comm)
				r.coll = isCollective(c.Name, c.Seq)
			}
			if r.coll && r.seq == 0 && r.counts != nil {
				// Counts include the current call: it is the last.
				r.seq = r.counts[r.key][c.Name]
			}
		}
		d.byN[r.n] = r
		d.ranks = append(d.ranks, r)
	}
	slices.SortFunc(d.ranks, func(a, b *rstate) int { return cmp.Compare(a.n, b.n) })

	for _, r := range d.ranks {
		var ks []commKey
		for k := range r.counts {
			if k.kind == shared && !k.isWorld() {
				ks = append(ks, k)
			}
		}
		if r.call != nil && r.call.Comm != nil && r.key.kind == shared && !r.key.isWorld() {
			if _, ok := r.counts[r.key]; !ok {
				ks = append(ks, r.key)
			}
		}
		for _, k := range ks {
			d.members[k] = append(d.members[k], r.n)
		}
		if c := r.call; c != nil && c.Comm != nil && len(c.Members) > 0 && r.key.kind == shared && !r.key.isWorld() {
			d.readMembers(r.key, c.Members)
		}
	}
	return d
}

// readMembers records the members of k one rank read from its library;
// ranks that disagree (two communicators sharing the key) leave k with
// none.
func (d *diag) readMembers(k commKey, ms []int) {
	ms = slices.Sorted(slices.Values(ms))
	old, seen := d.read[k]
	switch {
	case !seen:
		d.read[k] = ms
	case old != nil && !slices.Equal(old, ms):
		d.read[k] = nil
	}
}

// note records c as a way to print k.
func (d *diag) note(k commKey, c agg.Comm) {
	if k.isWorld() {
		d.worldSz = max(d.worldSz, c.Size)
	}
	if old, ok := d.display[k]; !ok || lessComm(c, old) {
		d.display[k] = c
	}
}

// membersOf returns the known members of the communicator k, sorted: every
// observed rank for WORLD, the owner for a private one, else the ranks that
// have it in Counts or are in a call on it.
func (d *diag) membersOf(k commKey) []int {
	switch {
	case k.isWorld() || (k.kind == shared && !d.ambiguous(k) && k.size > 0 && k.size == d.fullSize()):
		// A communicator as large as WORLD has every rank of it.
		out := make([]int, len(d.ranks))
		for i, r := range d.ranks {
			out[i] = r.n
		}
		return out
	case k.kind != shared:
		return []int{k.owner}
	default:
		// The group read from the library, when the ranks on k agree on
		// it and it holds every rank seen on k.
		if rm := d.read[k]; len(rm) == k.size && !d.ambiguous(k) {
			ok := true
			for _, n := range d.members[k] {
				ok = ok && slices.Contains(rm, n)
			}
			if ok {
				return rm
			}
		}
		return d.members[k]
	}
}

// ambiguous reports whether more ranks use the shared key k than its size
// allows: several communicators (halves of a split) share the id and size.
func (d *diag) ambiguous(k commKey) bool {
	return k.kind == shared && !k.isWorld() && k.size > 0 && len(d.members[k]) > k.size
}

// history serialises r's counts on k; ranks of an ambiguous key are only
// grouped when their histories match.
func history(r *rstate, k commKey) string {
	if r.counts == nil {
		return "?"
	}
	m, ok := r.counts[k]
	if !ok {
		return "-"
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		b.WriteString(strconv.Quote(name))
		b.WriteByte('=')
		b.WriteString(strconv.FormatUint(m[name], 10))
		b.WriteByte(',')
	}
	return b.String()
}

// callText describes r's current call: "MPI_Recv from rank 3 at app.c:32".
func callText(r *rstate) string {
	c := r.call
	name := text.Line(c.Name)
	if name == "" {
		name = "an unnamed MPI call"
	}
	var s string
	switch {
	case r.coll && c.Comm == nil: // MPI_Init: collective over WORLD, no argument
		s = name
	case r.coll:
		s = name + seqText(r.seq) + " on " + c.Comm.String()
	case c.Peer >= 0:
		s = name + " " + direction(c.Name) + " rank " + strconv.Itoa(c.Peer)
	case c.Peer == -2:
		s = name + " from any source"
	case c.Comm != nil:
		s = name + " on " + c.Comm.String()
	case isCollectiveName(c.Name):
		s = name + " (communicator unknown)"
	default:
		s = name
	}
	if c.Site != "" {
		s += " at " + text.Line(c.Site)
	}
	return s
}

func seqText(seq uint64) string {
	if seq == 0 {
		return ""
	}
	return " #" + strconv.FormatUint(seq, 10)
}

// state describes what r does now, as a predicate: "is computing",
// "ended (exit 0)", "is in MPI_Recv from rank 3". g, if not nil, is the
// group of the verdict, for a rank that entered its call recently.
func state(r *rstate, g *group, plural bool) string {
	switch {
	case r.ended:
		return "ended (" + r.how + ")"
	case r.stopped != "" && r.call != nil:
		return verb(plural, "is", "are") + " stopped " + r.stopped + " in " + callText(r)
	case r.stopped != "":
		return verb(plural, "is", "are") + " stopped " + r.stopped
	case r.call == nil && r.unread != "":
		return verb(plural, "is", "are") + " in an unknown state: " + r.unread
	case r.call == nil:
		return verb(plural, "is", "are") + " computing"
	case r.finished():
		return "finished (in MPI_Finalize)"
	case g != nil && !g.local && r.coll && !r.blocked &&
		r.call.Name == g.name && r.key == g.key && r.seq == g.seq:
		return "entered the same call " + seconds(r.call.Since) + " ago"
	default:
		return verb(plural, "is", "are") + " in " + callText(r)
	}
}

// groupVerdict explains a group blocked in one collective (rules 1 and 2).
// It returns the clauses, Waiting, Odd, the odd ranks whose count of the
// group's collective the verdict states, and the absent members. A
// secondary group (not the verdict's first) leaves out what the first
// already said about WORLD, and names only the call of an absent member
// whose call an earlier clause gave (described).
func (d *diag) groupVerdict(g *group, secondary bool, described map[int]bool) ([]string, []int, []int, map[int]bool, []Absence) {
	first := d.byN[g.ranks[0]]
	comm := d.display[g.key]
	if first.call.Comm != nil {
		comm = *first.call.Comm
	}
	since, site, sameSite, atLeast := first.call.Since, first.call.Site, true, first.call.AtLeast
	for _, n := range g.ranks[1:] {
		c := d.byN[n].call
		since = min(since, c.Since)
		sameSite = sameSite && c.Site == site
		atLeast = atLeast || c.AtLeast
	}
	on := " on " + comm.String()
	if isInit(g.name) {
		on = ""
	}
	where := text.Line(g.name) + seqText(g.seq) + on + " for " + forText(since, atLeast)
	if sameSite && site != "" {
		where += " at " + text.Line(site)
	}
	plural := len(g.ranks) > 1
	if g.amb {
		return []string{fmt.Sprintf("%s %s in %s (%d ranks use %s: several communicators share its id, so which ranks wait together is not known)",
			subject(g.ranks), verb(plural, "is", "are"), where, len(d.members[g.key]), comm.String())}, nil, nil, nil, nil
	}
	members := d.membersOf(g.key)
	var odd []int
	var abs []Absence
	var items itemList
	waiting := slices.Clone(g.ranks) // one copy, shared by the absences (read only)
	i := 0
	for _, n := range members {
		for i < len(g.ranks) && g.ranks[i] < n {
			i++
		}
		if i < len(g.ranks) && g.ranks[i] == n {
			continue
		}
		odd = append(odd, n)
		r := d.byN[n]
		a := Absence{Rank: n, Call: g.name, Comm: comm, Waiting: waiting, State: absentState(r, g)}
		if r.call != nil && !r.ended {
			a.In = r.call.Name
		}
		abs = append(abs, a)
		one, many := state(r, g, false), state(r, g, true)
		switch a.State {
		case "finalized":
			// Without its history, whether it made the call is not
			// known (it may have matched another call of the
			// others'): say what it does, not what it did not do.
			one = "finished (in MPI_Finalize)"
			if r.counts != nil {
				one += " without " + text.Line(g.name)
			}
			many = one
		case "done":
			one, many = "made the call and finished (in MPI_Finalize)", "made the call and finished (in MPI_Finalize)"
		case "elsewhere":
			if described[n] && r.call != nil {
				one, many = "is in "+text.Line(r.call.Name)+" (above)", "are in "+text.Line(r.call.Name)+" (above)"
			}
		}
		if r.counts != nil && a.State != "done" {
			calls := countOf(r.counts[g.key][g.name], "call")
			one = "has made " + calls + " and " + one
			many = "have made " + calls + " and " + many
		}
		items.add(n, one, many, 0)
	}
	var clauses []string
	shown := items.shown()
	if len(odd) > 0 && allFinalized(abs) && len(shown) == 1 {
		// Lead with the ranks that left: they block the others. That
		// they left without the call is said only when their history
		// shows it.
		if d.byN[odd[0]].counts != nil {
			clauses = []string{fmt.Sprintf("%s finished (in MPI_Finalize) without %s, which %s %s in%s",
				subject(odd), text.Line(g.name)+seqText(g.seq), subject(g.ranks), verb(plural, "waits", "wait"),
				strings.TrimPrefix(where, text.Line(g.name)+seqText(g.seq)))}
		} else {
			clauses = []string{fmt.Sprintf("%s finished (in MPI_Finalize) while %s %s in %s",
				subject(odd), subject(g.ranks), verb(plural, "waits", "wait"), where)}
		}
		shown = nil
	} else {
		clauses = []string{subject(g.ranks) + " " + verb(plural, "waits", "wait") + " in " + where}
	}
	stated := make(map[int]bool)
	for _, it := range shown {
		clauses = append(clauses, it.text())
		for _, n := range it.ranks {
			stated[n] = d.byN[n].counts != nil
		}
	}
	if rest := items.rest(); rest > 0 {
		clauses = append(clauses, fmt.Sprintf("%d more %s of %s %s in other states",
			rest, verb(rest > 1, "rank", "ranks"), comm.Short(), verb(rest > 1, "is", "are")))
	}

	size, missing := g.key.size, 0
	if g.key.isWorld() {
		size = d.worldSize()
		var s string
		if s, missing = d.worldMissing(size); s != "" && !secondary {
			clauses = append(clauses, s)
		}
	} else if size > len(members) {
		missing = size - len(members)
		clauses = append(clauses, fmt.Sprintf("%d of %d ranks of %s %s not identified",
			missing, size, comm.Short(), verb(missing > 1, "is", "are")))
	}
	if len(odd) == 0 && missing == 0 && size > 1 && len(g.ranks) == size {
		clauses = append(clauses, fmt.Sprintf("all %d ranks of %s are in this call", size, comm.Short()))
	}
	if !g.key.isWorld() && !secondary {
		if s, _ := d.worldMissing(d.worldSize()); s != "" {
			clauses = append(clauses, s)
		}
	}
	return clauses, slices.Clone(g.ranks), odd, stated, abs
}

// absentState classifies a member missing from g (see Absence.State).
func absentState(r *rstate, g *group) string {
	switch {
	case r == nil:
		return "unknown"
	case r.ended:
		return "ended"
	case r.call == nil && r.unread != "":
		return "unknown"
	case r.call == nil:
		return "computing"
	case r.finished():
		if r.counts != nil && g.seq > 0 && r.counts[g.key][g.name] >= g.seq {
			return "done"
		}
		return "finalized"
	case !r.blocked && r.coll && r.call.Name == g.name && r.key == g.key && r.seq == g.seq:
		return "entering"
	default:
		return "elsewhere"
	}
}

// localVerdict explains ranks in one collective on rank-local handles
// (rule 3): they cannot be said to wait in the same call.
func (d *diag) localVerdict(g *group) []string {
	since := d.byN[g.ranks[0]].call.Since
	atLeast := false
	in := make(map[int]bool, len(g.ranks))
	for _, n := range g.ranks {
		since = min(since, d.byN[n].call.Since)
		atLeast = atLeast || d.byN[n].call.AtLeast
		in[n] = true
	}
	clauses := []string{fmt.Sprintf("%s %s in %s (communicator not comparable: its layout is not known for this build; the ranks' notes say why) for %s",
		subject(g.ranks), verb(len(g.ranks) > 1, "is", "are"), text.Line(g.name), forText(since, atLeast))}
	var items itemList
	for _, r := range d.ranks {
		if !in[r.n] {
			items.add(r.n, state(r, nil, false), state(r, nil, true), 0)
		}
	}
	clauses = append(clauses, d.describe(&items)...)
	if s, _ := d.worldMissing(d.worldSize()); s != "" {
		clauses = append(clauses, s)
	}
	return clauses
}

// describe prints the first items and counts the rest.
func (d *diag) describe(items *itemList) []string {
	var out []string
	for _, it := range items.shown() {
		out = append(out, it.text())
	}
	if rest := items.rest(); rest > 0 {
		out = append(out, fmt.Sprintf("%d more %s in other states",
			rest, verb(rest > 1, "rank is", "ranks are")))
	}
	return out
}

// cycles finds the ranks that wait on each other: each rank blocked in a
// non-collective call with a known, observed peer waits on that peer.
// Every cycle starts at its lowest rank; cycles are ordered by it.
func (d *diag) cycles() [][]int {
	next := func(r *rstate) (*rstate, bool) {
		if !r.blocked || r.coll || r.call.Peer < 0 {
			return nil, false
		}
		p := d.byN[r.call.Peer]
		return p, p != nil
	}
	const (
		unseen = iota
		onPath
		done
	)
	mark := make(map[int]uint8)
	var out [][]int
	for _, r := range d.ranks {
		var path []int
		for cur := r; ; {
			if m := mark[cur.n]; m == onPath {
				i := slices.Index(path, cur.n)
				c := slices.Clone(path[i:])
				lo := slices.Index(c, slices.Min(c))
				out = append(out, append(c[lo:], c[:lo]...))
				break
			} else if m == done {
				break
			}
			mark[cur.n] = onPath
			path = append(path, cur.n)
			nx, ok := next(cur)
			if !ok {
				break
			}
			cur = nx
		}
		for _, n := range path {
			mark[n] = done
		}
	}
	slices.SortFunc(out, func(a, b []int) int { return cmp.Compare(a[0], b[0]) })
	return out
}

// cycleClauses names the cycles: "ranks 0 and 1 wait on each other".
func (d *diag) cycleClauses() []string {
	if hasWaits(d.input) && len(BuildWaitFor(d.input, d.minWait, nil).Cycles) > 0 {
		return nil // withWaitFor states them
	}
	cs := d.cycles()
	var out []string
	for i, c := range cs {
		if i == maxItems {
			out = append(out, fmt.Sprintf("%d more %s of waiting ranks", len(cs)-i, verb(len(cs)-i > 1, "cycle", "cycles")))
			break
		}
		switch {
		case len(c) == 1:
			out = append(out, fmt.Sprintf("rank %d waits on itself", c[0]))
		case len(c) == 2:
			out = append(out, fmt.Sprintf("ranks %d and %d wait on each other", c[0], c[1]))
		case len(c) <= maxArrows:
			var b strings.Builder
			b.WriteString("ranks ")
			for _, n := range c {
				b.WriteString(strconv.Itoa(n) + " -> ")
			}
			b.WriteString(strconv.Itoa(c[0]) + " wait in a cycle")
			out = append(out, b.String())
		default:
			out = append(out, fmt.Sprintf("%s wait in a cycle of %d", subject(slices.Sorted(slices.Values(c))), len(c)))
		}
	}
	return out
}

// fullSize is the size of WORLD when every rank of it is observed (the
// size reported, or the observed ranks numbered 0..n-1 when none reports
// it), else 0.
func (d *diag) fullSize() int {
	n := len(d.ranks)
	if n == 0 || d.ranks[n-1].n != n-1 {
		return 0
	}
	if d.worldSz != 0 && d.worldSz != n {
		return 0
	}
	return n
}

// worldSize is the size of WORLD as any rank reports it (the largest if
// they disagree), or 0.
func (d *diag) worldSize() int { return d.worldSz }

// worldMissing says which ranks of a WORLD of the given size are not among
// the observed ones, and how many.
func (d *diag) worldMissing(size int) (string, int) {
	if size <= 0 {
		return "", 0
	}
	var gaps []ranks.Span
	next, seen := 0, 0
	for _, r := range d.ranks {
		if r.n >= size {
			break
		}
		if r.n > next {
			gaps = append(gaps, ranks.Span{Lo: next, Hi: r.n - 1})
		}
		next = r.n + 1
		seen++
	}
	if next < size {
		gaps = append(gaps, ranks.Span{Lo: next, Hi: size - 1})
	}
	missing := size - seen
	if missing == 0 {
		return "", 0
	}
	return fmt.Sprintf("%d of %d ranks of WORLD %s not observed here (%s)",
		missing, size, verb(missing > 1, "is", "are"), subjectSpans(gaps, missing)), missing
}

// progress is rule 4: nobody has been inside a call for minWait.
func (d *diag) progress() []string {
	progress := "the job is making progress"
	for _, r := range d.ranks {
		if r.stopped != "" && !r.ended {
			progress = "the running ranks are making progress"
		}
	}
	s := "no rank has been inside an MPI call for " + seconds(d.minWait) + " or more: " + progress
	if d.minWait <= 0 {
		s = "no rank is inside an MPI call: " + progress
	}
	clauses := []string{s}
	var items itemList
	for _, r := range d.ranks {
		if r.ended {
			items.add(r.n, "ended ("+r.how+")", "ended ("+r.how+")", 0)
		}
	}
	for _, it := range items.shown() {
		clauses = append(clauses, it.text())
	}
	if rest := items.rest(); rest > 0 {
		clauses = append(clauses, fmt.Sprintf("%d more %s ended", rest, verb(rest > 1, "rank", "ranks")))
	}
	if s, _ := d.worldMissing(d.worldSize()); s != "" {
		clauses = append(clauses, s)
	}
	return clauses
}

// allEnded explains a job whose observed ranks have all ended.
func (d *diag) allEnded() []string {
	var items itemList
	for _, r := range d.ranks {
		items.add(r.n, "("+r.how+")", "("+r.how+")", 0)
	}
	var parts []string
	for _, it := range items.shown() {
		parts = append(parts, it.text())
	}
	if rest := items.rest(); rest > 0 {
		parts = append(parts, fmt.Sprintf("%d more", rest))
	}
	what := "the observed rank has ended: "
	if len(d.ranks) > 1 {
		what = fmt.Sprintf("all %d observed ranks have ended: ", len(d.ranks))
	}
	clauses := []string{what + strings.Join(parts, ", ")}
	if s, _ := d.worldMissing(d.worldSize()); s != "" {
		clauses = append(clauses, s)
	}
	return clauses
}

// divergences applies rule 6 to every communicator whose counts can be
// compared across ranks: WORLD, and shared ids not used by more ranks than
// their size.
func (d *diag) divergences() []Divergence {
	known := make(map[commKey][]*rstate)
	var withHistory []*rstate
	for _, r := range d.ranks {
		if r.counts == nil {
			continue
		}
		withHistory = append(withHistory, r)
		for k := range r.counts {
			if k.kind == shared && !k.isWorld() && !d.ambiguous(k) {
				known[k] = append(known[k], r)
			}
		}
	}
	for k := range d.display {
		if k.isWorld() {
			known[k] = withHistory // no entry for WORLD means 0 calls on it
		}
	}
	keys := make([]commKey, 0, len(known))
	for k, rs := range known {
		if len(rs) >= 2 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareKeys)
	var out []Divergence
	for _, k := range keys {
		rs := known[k] // in rank order
		names := make(map[string]bool)
		for _, r := range rs {
			for name := range r.counts[k] {
				names[name] = true
			}
		}
		for _, name := range slices.Sorted(maps.Keys(names)) {
			tally := make(map[uint64]int)
			for _, r := range rs {
				tally[r.counts[k][name]]++
			}
			var mode uint64
			best := 0
			for v, n := range tally {
				if n > best || (n == best && v > mode) {
					mode, best = v, n
				}
			}
			for _, r := range rs {
				if c := r.counts[k][name]; c != mode {
					out = append(out, Divergence{Rank: r.n, Comm: d.display[k], Call: name, Count: c, Others: mode})
				}
			}
		}
	}
	return out
}

// compareKeys orders communicators: WORLD first, then by id, size, name.
func compareKeys(a, b commKey) int {
	if a.isWorld() != b.isWorld() {
		if a.isWorld() {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.size, b.size), cmp.Compare(a.name, b.name))
}

// divergenceClause summarises divs for the verdict, leaving out those skip
// says the verdict already states: "counts diverge: rank 7 made 41
// MPI_Allreduce on WORLD, the others 42".
func divergenceClause(divs []Divergence, skip func(Divergence) bool) string {
	type dkey struct {
		comm          agg.Comm
		call          string
		count, others uint64
	}
	index := make(map[dkey]int)
	var keys []dkey
	var ranks [][]int
	for _, v := range divs {
		if skip(v) {
			continue
		}
		k := dkey{v.Comm, v.Call, v.Count, v.Others}
		i, ok := index[k]
		if !ok {
			i = len(keys)
			index[k] = i
			keys = append(keys, k)
			ranks = append(ranks, nil)
		}
		ranks[i] = append(ranks[i], v.Rank)
	}
	if len(keys) == 0 {
		return ""
	}
	var parts []string
	for i, k := range keys {
		if i == maxItems {
			parts = append(parts, fmt.Sprintf("and %d more", len(keys)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s made %d %s on %s, the others %d",
			subject(ranks[i]), k.count, text.Line(k.call), k.comm.Short(), k.others))
	}
	return "counts diverge: " + strings.Join(parts, "; ")
}

// forText says how long: "12.3 s", or "at least 12.3 s" for a lower bound.
func forText(d time.Duration, atLeast bool) string {
	if atLeast {
		return "at least " + seconds(d)
	}
	return seconds(d)
}
