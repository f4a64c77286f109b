package status

// Merging the node facts of a job's nodes into one verdict: the ranks of
// every node go through package hang together, as one node's do.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/ranks"
	"github.com/mpiprobe/mpiprobe/internal/status/hang"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// NodeFailure is a node that gave no usable facts, and why.
type NodeFailure struct {
	Host   string `json:"host"`
	Reason string `json:"reason"`
}

// NodeAnswer is what one run of the node command gave: the node asked
// (Host; "" when one run covers several nodes and each document names
// its own), the documents read, and why the run failed ("" if it did
// not).
type NodeAnswer struct {
	Host  string
	Facts []NodeFacts
	Err   string
}

// Merged is the verdict over the ranks of several nodes.
type Merged struct {
	// Ranks are every node's ranks, by rank; a rank two nodes claim is
	// there once, from the first node that claims it (in the order
	// asked).
	Ranks []FactRank
	// Report is package hang's, its Verdict prefixed by what is partial
	// and followed by the hosts of cross-node cycles and knots.
	Report hang.Report
	// Answered are the nodes whose facts were merged; Missing those that
	// gave none (asked, but no document, or a failure).
	Answered []string
	Missing  []NodeFailure
	// Notes are one line each: duplicate ranks, with their cause.
	Notes []string
}

// Merge makes one verdict from the answers of the nodes asked, through
// package hang as one node's status does. A node's documents are its
// answer's (Host set), or those naming it (a launcher's run over several
// nodes). A node asked without a usable document is missing, with the
// reason; a node that answered without being asked is merged under its
// own name.
func Merge(asked []string, answers []NodeAnswer, minWait time.Duration) Merged {
	type nodeDocs struct {
		name string
		docs []NodeFacts
		err  string
	}
	var nodes []*nodeDocs
	byName, byShort := map[string]*nodeDocs{}, map[string]*nodeDocs{}
	node := func(name string) *nodeDocs {
		if n, ok := byName[name]; ok {
			return n
		}
		if n, ok := byShort[shortHost(name)]; ok {
			return n
		}
		n := &nodeDocs{name: name}
		byName[name] = n
		if _, ok := byShort[shortHost(name)]; !ok {
			byShort[shortHost(name)] = n
		}
		nodes = append(nodes, n)
		return n
	}
	for _, h := range asked {
		node(h)
	}
	for _, a := range answers {
		if a.Host != "" {
			n := node(a.Host)
			n.docs = append(n.docs, a.Facts...)
			if n.err == "" {
				n.err = a.Err
			}
			continue
		}
		for _, nf := range a.Facts {
			n := node(nf.Host)
			n.docs = append(n.docs, nf)
		}
		if a.Err != "" {
			for _, n := range nodes {
				if len(n.docs) == 0 && n.err == "" {
					n.err = a.Err
				}
			}
		}
	}

	var m Merged
	// Room for the ranks the documents announce (Expand checks them),
	// up to the most one class may hold.
	want := 0
	for _, n := range nodes {
		for _, nf := range n.docs {
			want += max(0, min(nf.RankCount, maxFactRanks-want))
		}
	}
	m.Ranks = make([]FactRank, 0, want)
	owner := make(map[int]int32, want) // rank -> its index in m.Ranks
	dups := map[[2]string][]int{}
	same := map[[2]string]bool{}
	for _, n := range nodes {
		var frs []FactRank
		err := n.err
		for i, nf := range n.docs {
			if i > 0 && nf.Host == n.docs[0].Host {
				m.Notes = append(m.Notes, fmt.Sprintf("%s answered twice: its second answer is ignored", text.Quote(n.name)))
				continue
			}
			x, xerr := nf.Expand()
			if xerr != nil {
				err = "its node facts are unusable: " + xerr.Error()
				frs = nil
				break
			}
			for j := range x {
				if x[j].Host == nf.Host {
					x[j].Host = n.name
				}
				x[j].self = nf.Host
			}
			frs = append(frs, x...)
		}
		if frs == nil {
			if err == "" {
				err = "no node-facts document came from it"
			}
			m.Missing = append(m.Missing, NodeFailure{Host: n.name, Reason: err})
			continue
		}
		m.Answered = append(m.Answered, n.name)
		for _, fr := range frs {
			fr.node = n.name
			if i, ok := owner[fr.Rank.Rank]; ok {
				o := &m.Ranks[i]
				k := [2]string{o.node, n.name}
				dups[k] = append(dups[k], fr.Rank.Rank)
				if _, seen := same[k]; !seen {
					same[k] = true
				}
				same[k] = same[k] && o.self == fr.self && o.PID == fr.PID
				continue
			}
			owner[fr.Rank.Rank] = int32(len(m.Ranks))
			m.Ranks = append(m.Ranks, fr)
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(dups), func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) }) {
		cause := "two jobs share this job id on those nodes: give the job's own id (mpiprobe ps on each node)"
		if same[k] {
			cause = "both are the same node (the same host name and pids): list it once in --hosts"
		}
		m.Notes = append(m.Notes, fmt.Sprintf("%s claimed by both %s and %s: %s; the verdict uses %s's",
			subjectRanks(dups[k]), text.Quote(k[0]), text.Quote(k[1]), cause, text.Quote(k[0])))
	}
	slices.SortFunc(m.Ranks, func(a, b FactRank) int { return a.Rank.Rank - b.Rank.Rank })

	m.Report = hang.Diagnose(resolveAcross(m.Ranks), minWait)
	m.Report.Verdict = m.partialPrefix() + m.Report.Verdict + acrossNodes(m.Report, m.Ranks)
	return m
}

// shortHost is a host name up to its first dot: a launcher may name a
// node "n1" that was asked as "n1.cluster", or the other way round.
func shortHost(h string) string {
	h, _, _ = strings.Cut(h, ".")
	return h
}

// subjectRanks names ranks: "rank 3", "ranks 0-7".
func subjectRanks(rs []int) string {
	if len(rs) == 1 {
		return fmt.Sprintf("rank %d is", rs[0])
	}
	return fmt.Sprintf("ranks %s are", ranks.Format(rs))
}

// partialPrefix says which nodes the verdict lacks: "partial: 1 of 4
// nodes did not answer (n3: timed out after 6.5 s): ".
func (m Merged) partialPrefix() string {
	if len(m.Missing) == 0 {
		return ""
	}
	const shown = 3
	var parts []string
	for i, f := range m.Missing {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(m.Missing)-shown))
			break
		}
		parts = append(parts, text.Quote(f.Host)+": "+text.Line(f.Reason))
	}
	total := len(m.Answered) + len(m.Missing)
	return fmt.Sprintf("partial: %d of %d %s did not answer (%s): ", len(m.Missing), total, plural(total, "node", "nodes"), strings.Join(parts, "; "))
}

// acrossNodes names the hosts of the cycles and of the knot when they
// span several nodes: "; cycle across nodes: ranks 0,2 on n1, ranks 1,3
// on n2", "; knot across 1000 nodes: ranks 0-9 on n0000, …, and 992 more
// nodes" (the knot only when it holds more than the cycles).
func acrossNodes(rep hang.Report, frs []FactRank) string {
	host := make(map[int]string, len(frs))
	for _, fr := range frs {
		host[fr.Rank.Rank] = fr.Host
	}
	var cycle []int
	for _, c := range rep.Cycles {
		cycle = append(cycle, hang.CycleRanks(c)...)
	}
	cycle = slices.Compact(slices.Sorted(slices.Values(cycle)))
	out := ""
	if s, n := byHost(cycle, host); n > 1 {
		out += "; cycle across nodes: " + s
	}
	if len(rep.Knot.Ranks) > len(cycle) {
		if s, n := byHost(rep.Knot.Ranks, host); n > 1 {
			out += fmt.Sprintf("; knot across %d nodes: %s", n, s)
		}
	}
	return out
}

// byHost names sorted ranks by host, hosts in the order of their lowest
// rank, the first 8: "ranks 0,2 on n1, rank 1 on n2, and 3 more nodes";
// n is the number of hosts.
func byHost(rs []int, host map[int]string) (s string, n int) {
	per := map[string][]int{}
	var hosts []string
	for _, r := range rs {
		h := host[r]
		if _, ok := per[h]; !ok {
			hosts = append(hosts, h)
		}
		per[h] = append(per[h], r)
	}
	const shown = 8
	var parts []string
	for i, h := range hosts {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more nodes", len(hosts)-shown))
			break
		}
		ranks := strings.TrimSuffix(strings.TrimSuffix(subjectRanks(per[h]), " is"), " are")
		parts = append(parts, ranks+" on "+text.Quote(h))
	}
	return strings.Join(parts, ", "), len(hosts)
}

// resolveAcross is resolveCommPeers over every node's ranks: a peer
// known only as a rank of a communicator is the one rank, on any node,
// that is in a call on it with that number.
func resolveAcross(frs []FactRank) []hang.Rank {
	seats := commSeats{}
	for _, fr := range frs {
		if fr.In != nil {
			seats.add(fr.In.Comm, fr.CommRank, fr.Rank.Rank)
		}
	}
	// The calls and waits are Expand's, shared by the ranks of a class,
	// which resolve alike: they are resolved in place.
	for _, fr := range frs {
		if fr.In != nil && len(fr.In.Waits) > 0 {
			seats.resolve(fr.In.Waits)
		}
	}
	out := make([]hang.Rank, len(frs))
	for i, fr := range frs {
		if fr.In != nil && len(fr.In.Waits) > 0 {
			fr.In.Peer = waitsPeer(fr.In.Waits)
		}
		out[i] = fr.Rank
	}
	return out
}

// Result is the merge as status prints it: every rank with the call that
// stands for it, the notes, and the verdict.
func (m Merged) Result(job string, window time.Duration) Result {
	res := Result{Host: fmt.Sprintf("%d %s", len(m.Answered), plural(len(m.Answered), "node", "nodes")), Window: window,
		Report: m.Report, Notes: slices.Clone(m.Notes), Nodes: orEmpty(m.Answered), Missing: orEmpty(m.Missing)}
	for _, f := range m.Missing {
		res.Notes = append(res.Notes, fmt.Sprintf("node %s did not answer: %s", text.Quote(f.Host), text.Line(f.Reason)))
	}
	for _, fr := range m.Ranks {
		r := Rank{Rank: fr.Rank.Rank, PID: fr.PID, Job: job, Host: fr.Host, Ended: fr.Ended, Stopped: fr.Stopped,
			resume: fr.Resume, Unreadable: fr.Unreadable}
		for c, calls := range fr.Counts {
			r.Counts = append(r.Counts, CommCount{Comm: c, Calls: calls})
		}
		slices.SortFunc(r.Counts, func(a, b CommCount) int { return agg.CompareComms(a.Comm, b.Comm) })
		if c := fr.In; c != nil {
			r.Threads = []Thread{{TID: fr.PID, Call: c.Name, Comm: c.Comm, Members: c.Members, Seq: c.Seq, Since: c.Since,
				AtLeast: c.AtLeast, Moving: fr.Moving, Site: c.Site, Args: c.Args, Waits: c.Waits, commRank: fr.CommRank}}
		}
		res.Ranks = append(res.Ranks, r)
	}
	return res
}
