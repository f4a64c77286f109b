package hang

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// Peer values of Call.Peer and Wait.Peer that are not ranks.
const (
	// PeerUnknown: the peer could not be read or inferred.
	PeerUnknown = -1
	// AnySource: a receive from MPI_ANY_SOURCE.
	AnySource = -2
	// AnyTag is Wait.Tag for MPI_ANY_TAG.
	AnyTag = -1
	// TagUnknown is Wait.Tag when the tag could not be read.
	TagUnknown = -3
)

// Wait is one point-to-point operation a blocked call waits for: a
// receive waits for its peer's send, a send the library holds back
// (rendezvous) waits for its peer's receive.
type Wait struct {
	// Send is set for a send; else the operation is a receive.
	Send bool `json:"send,omitempty"`
	// Peer is the peer's rank in WORLD, AnySource, or PeerUnknown.
	Peer int `json:"peer"`
	// CommPeer is the peer's rank in Comm when it is known there but not
	// in WORLD (Peer is then PeerUnknown); -1 otherwise.
	CommPeer int `json:"comm_peer"`
	// Tag is the tag, AnyTag or TagUnknown.
	Tag int `json:"tag"`
	// Comm is the request's communicator, nil if unknown.
	Comm *agg.Comm `json:"comm,omitempty"`
	// Known says the peer was read from the library's state (the request
	// object); otherwise it is inferred from the call alone.
	Known bool `json:"known"`
}

// Edge is one "waits for" relation: rank From is blocked in Call until
// rank To does its part of Wait.
type Edge struct {
	From, To int
	Call     string // the blocked call ("MPI_Recv")
	Site     string // its call site, "" if unknown
	Wait     Wait
	// Any says From waits for any one of the ranks it has such an edge
	// to: a receive from MPI_ANY_SOURCE (Wait.Peer is AnySource), or
	// MPI_Waitany/MPI_Waitsome over several requests.
	Any bool
	// Coll says From waits in the collective Call (on Wait.Comm) that To,
	// a member blocked in another call, has not entered: with the others
	// absent from it, an AND-edge (collEdges).
	Coll bool
}

// WaitFor is the wait-for graph of the blocked ranks.
type WaitFor struct {
	// Edges are sorted by From, then To.
	Edges []Edge
	// Cycles are the elementary cycles found, each starting at its lowest
	// rank; ordered by that rank.
	Cycles [][]Edge
}

// maxCycles bounds the cycles reported; cycleBudget the search steps.
const (
	maxCycles   = 8
	cycleBudget = 200000
)

// BuildWaitFor builds the wait-for graph of the ranks blocked (inside
// their call for minWait or more) in point-to-point calls, and finds its
// cycles. A receive from MPI_ANY_SOURCE waits for every other observed
// rank of its communicator (known for WORLD only); a cycle is claimed
// through it only when all of those are blocked.
//
// abs are the members absent from the collectives ranks are blocked in
// ([Report.Absent]): their waits join the graph when point-to-point
// waits are there too (collEdges).
func BuildWaitFor(in []Rank, minWait time.Duration, abs []Absence) WaitFor {
	byN := map[int]*Rank{}
	var order []int
	for i := range in {
		r := &in[i]
		if r.Rank < 0 {
			continue
		}
		if _, dup := byN[r.Rank]; dup {
			continue
		}
		byN[r.Rank] = r
		order = append(order, r.Rank)
	}
	slices.Sort(order)
	blocked := func(n int) bool {
		r := byN[n]
		return r != nil && r.Ended == "" && r.Stopped == "" && r.In != nil && r.In.Since >= minWait && !isCollectiveName(r.In.Name)
	}
	var g WaitFor
	for _, n := range order {
		if !blocked(n) {
			continue
		}
		c := byN[n].In
		ws := waitsOf(c)
		// MPI_Waitany and MPI_Waitsome return when any one of their
		// requests completes: their edges are OR-edges, as a wildcard
		// receive's.
		or := orWaits[baseName(c.Name)] && len(ws) > 1
		for _, w := range ws {
			switch {
			case w.Peer >= 0:
				g.Edges = append(g.Edges, Edge{From: n, To: w.Peer, Call: c.Name, Site: c.Site, Wait: w, Any: or})
			case w.Peer == AnySource && !w.Send && (w.Comm == nil || w.Comm.Name == "WORLD"):
				for _, m := range order {
					if m != n {
						g.Edges = append(g.Edges, Edge{From: n, To: m, Call: c.Name, Site: c.Site, Wait: w, Any: true})
					}
				}
			}
		}
	}
	g.Edges = dedupEdges(g.Edges)
	if coll := collEdges(in, abs, g.Edges); len(coll) > 0 {
		g.Edges = dedupEdges(append(g.Edges, coll...))
	}
	// A wildcard's edge closes a cycle only when every rank it may wait
	// for is blocked in a point-to-point call: other shapes are knots
	// (knot.go), stated as such.
	for _, c := range findCycles(g.Edges, blocked) {
		if slices.ContainsFunc(c, func(e Edge) bool { return !e.Coll }) {
			g.Cycles = append(g.Cycles, c)
		}
	}
	return g
}

// maxCollEdges bounds the collective waits collEdges adds: past it (a
// job of thousands of ranks, most in one collective, hundreds elsewhere)
// none is added, and the knot states what cannot move.
const maxCollEdges = 10000

// collEdges are the waits of the ranks blocked in a collective for the
// members absent from it that are blocked in another MPI call (Absence
// state "elsewhere"): each such member is needed, so each is an edge.
// Only a cycle that also holds a point-to-point edge is named through
// them (collectives alone waiting on each other are mismatches, which
// the verdict states as such), so only the waits of ranks some
// point-to-point edge of p2p leads to are added, and none when they
// would be more than maxCollEdges.
func collEdges(in []Rank, abs []Absence, p2p []Edge) []Edge {
	if len(p2p) == 0 {
		return nil
	}
	awaited := map[int]bool{}
	for _, e := range p2p {
		awaited[e.To] = true
	}
	// The ranks of each waiting list some edge leads to; the absences of
	// one group share their list, which is looked at once.
	type list struct {
		first *int
		n     int
	}
	froms := map[list][]int{}
	n := 0
	for _, a := range abs {
		if a.State != "elsewhere" || len(a.Waiting) == 0 {
			continue
		}
		k := list{&a.Waiting[0], len(a.Waiting)}
		fs, ok := froms[k]
		if !ok {
			for _, w := range a.Waiting {
				if awaited[w] {
					fs = append(fs, w)
				}
			}
			froms[k] = fs
		}
		if n += len(fs); n > maxCollEdges {
			return nil
		}
	}
	if n == 0 {
		return nil
	}
	site := map[int]string{}
	for _, r := range in {
		if _, ok := site[r.Rank]; !ok && r.In != nil {
			site[r.Rank] = r.In.Site
		}
	}
	var out []Edge
	for _, a := range abs {
		if a.State != "elsewhere" || len(a.Waiting) == 0 {
			continue
		}
		for _, w := range froms[list{&a.Waiting[0], len(a.Waiting)}] {
			c := a.Comm
			out = append(out, Edge{From: w, To: a.Rank, Call: a.Call, Site: site[w], Coll: true,
				Wait: Wait{Peer: a.Rank, CommPeer: -1, Tag: TagUnknown, Comm: &c, Known: true}})
		}
	}
	return out
}

// hasWaits reports whether any rank's call says what it waits for
// (status read the library's point-to-point state).
func hasWaits(in []Rank) bool {
	for _, r := range in {
		if r.In != nil && len(r.In.Waits) > 0 {
			return true
		}
	}
	return false
}

// waitsOf returns what a call waits for: its Waits, or else one inferred
// from Peer.
func waitsOf(c *Call) []Wait {
	if len(c.Waits) > 0 {
		return c.Waits
	}
	if c.Peer >= 0 || c.Peer == AnySource {
		n := baseName(c.Name)
		if n == "recv" || n == "send" || n == "ssend" || n == "sendrecv" || n == "sendrecv_replace" || n == "probe" {
			return []Wait{{Send: strings.Contains(n, "send") && !strings.Contains(n, "recv"), Peer: c.Peer, CommPeer: -1, Tag: TagUnknown, Comm: c.Comm}}
		}
	}
	return nil
}

// dedupEdges sorts edges and keeps one per (From, To), preferring known
// ones.
func dedupEdges(es []Edge) []Edge {
	slices.SortStableFunc(es, func(a, b Edge) int {
		if c := cmp.Compare(a.From, b.From); c != 0 {
			return c
		}
		if c := cmp.Compare(a.To, b.To); c != 0 {
			return c
		}
		switch {
		case a.Any != b.Any:
			if !a.Any {
				return -1
			}
			return 1
		case a.Wait.Known != b.Wait.Known:
			if a.Wait.Known {
				return -1
			}
			return 1
		}
		return 0
	})
	return slices.CompactFunc(es, func(a, b Edge) bool { return a.From == b.From && a.To == b.To })
}

// findCycles enumerates elementary cycles, each from its lowest rank. An
// ANY_SOURCE edge is usable only when every rank its source waits for
// through ANY_SOURCE is blocked.
func findCycles(es []Edge, blocked func(int) bool) [][]Edge {
	anyOK := map[int]bool{}
	for _, e := range es {
		if e.Any {
			if _, seen := anyOK[e.From]; !seen {
				anyOK[e.From] = true
			}
			anyOK[e.From] = anyOK[e.From] && blocked(e.To)
		}
	}
	out := map[int][]Edge{}
	var nodes []int
	for _, e := range es {
		if e.Any && !anyOK[e.From] {
			continue
		}
		if _, ok := out[e.From]; !ok {
			nodes = append(nodes, e.From)
		}
		out[e.From] = append(out[e.From], e)
	}
	slices.Sort(nodes)
	var cycles [][]Edge
	steps := 0
	for _, start := range nodes {
		var path []Edge
		on := map[int]bool{start: true}
		var dfs func(n int) bool
		dfs = func(n int) bool {
			for _, e := range out[n] {
				steps++
				if steps > cycleBudget || len(cycles) >= maxCycles {
					return false
				}
				switch {
				case e.To == start:
					cycles = append(cycles, append(slices.Clone(path), e))
				case e.To > start && !on[e.To]:
					on[e.To] = true
					path = append(path, e)
					if !dfs(e.To) {
						return false
					}
					path = path[:len(path)-1]
					on[e.To] = false
				}
			}
			return true
		}
		if !dfs(start) {
			break
		}
	}
	return cycles
}

// edgeText is "rank 0 waits for 1 (MPI_Recv tag 7 at a.c:16)".
func edgeText(e Edge) string {
	var b strings.Builder
	if e.Coll {
		fmt.Fprintf(&b, "rank %d waits for %d (%s", e.From, e.To, text.Line(e.Call))
		if e.Wait.Comm != nil && e.Wait.Comm.Name != "WORLD" {
			b.WriteString(" on " + e.Wait.Comm.String())
		}
		if s := shortSite(e.Site); s != "" {
			b.WriteString(" at " + s)
		}
		fmt.Fprintf(&b, ", which %d has not entered)", e.To)
		return b.String()
	}
	fmt.Fprintf(&b, "rank %d waits for %d (%s", e.From, e.To, text.Line(e.Call))
	if e.Wait.Send && baseName(e.Call) != "send" && baseName(e.Call) != "ssend" {
		b.WriteString(" send")
	} else if !e.Wait.Send && baseName(e.Call) != "recv" {
		b.WriteString(" recv")
	}
	if e.Wait.Peer == AnySource {
		b.WriteString(" from any source")
	}
	switch t := e.Wait.Tag; {
	case t >= 0:
		b.WriteString(" tag " + strconv.Itoa(t))
	case t == AnyTag:
		b.WriteString(" any tag")
	}
	if e.Wait.Comm != nil && e.Wait.Comm.Name != "WORLD" {
		b.WriteString(" on " + e.Wait.Comm.String())
	}
	if s := shortSite(e.Site); s != "" {
		b.WriteString(" at " + s)
	}
	if !e.Wait.Known {
		b.WriteString(", inferred")
	}
	b.WriteString(")")
	return b.String()
}

// shortSite keeps the file:line of a call site when it has one:
// "main+0x1e4 (app.c:32)" becomes "app.c:32".
func shortSite(site string) string {
	site = text.Line(site)
	if i := strings.LastIndex(site, " ("); i >= 0 && strings.HasSuffix(site, ")") {
		return path.Base(site[i+2 : len(site)-1])
	}
	return site
}

// cycleText is "deadlock cycle: rank 0 waits for 1 (...), rank 1 waits
// for 0 (...)", with whether its edges were read or inferred.
func cycleText(c []Edge) string {
	var parts []string
	known, p2p := 0, 0
	for i, e := range c {
		if i < maxArrows || i == len(c)-1 {
			parts = append(parts, edgeText(e))
		} else if i == maxArrows {
			parts = append(parts, fmt.Sprintf("... (%d more)", len(c)-maxArrows-1))
		}
		if e.Coll {
			continue // observed, not read from a request
		}
		p2p++
		if e.Wait.Known {
			known++
		}
	}
	return "deadlock cycle: " + strings.Join(parts, ", ") + readOf(known, p2p, "peers")
}

// readOf says how many of n facts (peers, waits) were read from the
// library rather than inferred: " [peers read from the MPI library]".
func readOf(known, n int, what string) string {
	switch known {
	case n:
		return " [" + what + " read from the MPI library]"
	case 0:
		return " [" + what + " inferred from the calls]"
	default:
		return fmt.Sprintf(" [%d of %d %s read from the MPI library]", known, n, what)
	}
}

// waitForClauses states the wait-for graph: its cycles first, then every
// blocked rank waiting for a rank that is not blocked ("rank 0 waits for 1
// (MPI_Recv tag 7), which is in MPI_Finalize"). It is Diagnose's only use
// of the graph: the cycles go first in the verdict.
func waitForClauses(in []Rank, g WaitFor) (cycles, others []string) {
	for i, c := range g.Cycles {
		if i == maxItems {
			cycles = append(cycles, fmt.Sprintf("%d more deadlock %s", len(g.Cycles)-i, verb(len(g.Cycles)-i > 1, "cycle", "cycles")))
			break
		}
		cycles = append(cycles, cycleText(c))
	}
	byN := map[int]*Rank{}
	for i := range in {
		if _, dup := byN[in[i].Rank]; !dup {
			byN[in[i].Rank] = &in[i]
		}
	}
	inCycle := map[int]bool{}
	for _, c := range g.Cycles {
		for _, e := range c {
			inCycle[e.From] = true
		}
	}
	// The waits in collectives are stated by the missing-collective
	// clauses: here they only close cycles.
	p2p := slices.DeleteFunc(slices.Clone(g.Edges), func(e Edge) bool { return e.Coll })
	g.Edges = p2p
	from := map[int]bool{}
	for _, e := range g.Edges {
		from[e.From] = true
	}
	n := 0
	anyTo := map[int][]int{}
	var anyFrom []int
	for _, e := range g.Edges {
		if e.Any && !inCycle[e.From] {
			if anyTo[e.From] == nil {
				anyFrom = append(anyFrom, e.From)
			}
			anyTo[e.From] = append(anyTo[e.From], e.To)
		}
	}
	for _, f := range anyFrom {
		// A receive from any source: say what the ranks it may wait for
		// are doing when none of them is blocked in a point-to-point call.
		var e Edge
		var states []string
		for _, x := range g.Edges {
			if x.From == f && x.Any {
				e = x
				if from[x.To] {
					states = nil
					break
				}
				states = append(states, fmt.Sprintf("rank %d %s", x.To, peerState(byN[x.To])))
			}
		}
		if len(states) == 0 || n == maxItems {
			continue
		}
		n++
		who := "any rank"
		if e.Wait.Peer != AnySource {
			var of []int
			for _, x := range g.Edges {
				if x.From == f && x.Any {
					of = append(of, x.To)
				}
			}
			who = "any of " + ofText(of)
		}
		s := strings.Replace(edgeText(e), fmt.Sprintf("waits for %d (", e.To), "waits for "+who+" (", 1)
		if len(states) > maxItems {
			states = append(states[:maxItems], fmt.Sprintf("%d more", len(states)-maxItems))
		}
		others = append(others, s+", and "+strings.Join(states, ", "))
	}
	for _, e := range g.Edges {
		if e.Any || inCycle[e.From] || from[e.To] {
			continue
		}
		if n == maxItems {
			others = append(others, "more ranks wait for ranks that are not blocked")
			break
		}
		n++
		others = append(others, edgeText(e)+", which "+peerState(byN[e.To]))
	}
	return cycles, others
}

// peerState says what the rank a blocked rank waits for is doing.
func peerState(r *Rank) string {
	switch {
	case r == nil:
		return "is not observed here"
	case r.Ended != "":
		return "ended (" + text.Line(r.Ended) + ")"
	case r.Stopped != "":
		return "is stopped " + text.Line(r.Stopped)
	case r.In == nil:
		return "is computing"
	default:
		s := "is in " + text.Line(r.In.Name)
		if site := shortSite(r.In.Site); site != "" {
			s += " at " + site
		}
		return s
	}
}

// withWaitFor adds the wait-for graph to a report: Edges and Cycles, the
// cycles first in the verdict and the ranks waiting for a rank that is not
// blocked after it. This is the one place Diagnose's verdict takes the
// graph into account.
func withWaitFor(in []Rank, minWait time.Duration, rep *Report) {
	g := BuildWaitFor(in, minWait, rep.Absent)
	rep.Edges, rep.Cycles = g.Edges, g.Cycles
	if !hasWaits(in) {
		return // only peers from Call.Peer: the verdict's own cycle clauses say it
	}
	cycles, others := waitForClauses(in, g)
	parts := append(cycles, rep.Verdict)
	if rep.Verdict == "" {
		parts = cycles
	}
	parts = append(parts, others...)
	rep.Verdict = strings.Join(parts, "; ")
}
