package status

// Node facts: what one node's status knows of its ranks, as package hang
// needs it, written so that the caller of a fanned-out status can merge
// the facts of every node into one verdict (merge.go). Ranks in the same
// state form one class (STAT's equivalence classes): the call, its
// communicator, site, waits and history are written once per class, and
// only what differs per rank (its number, pid, host, time inside) per
// rank.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/ranks"
	"github.com/mpiprobe/mpiprobe/internal/report"
	"github.com/mpiprobe/mpiprobe/internal/status/hang"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// KindNodeFacts is the "kind" of a node-facts document (docs/json.md).
const KindNodeFacts = "node_facts"

// NodeFacts is one node's facts: its ranks of the job, grouped in classes.
type NodeFacts struct {
	report.Envelope
	Host          string  `json:"host"`
	Job           string  `json:"job"`
	WindowSeconds float64 `json:"window_seconds"`
	// RankCount is the number of ranks in Classes.
	RankCount int         `json:"rank_count"`
	Classes   []FactClass `json:"classes"`
	Notes     []string    `json:"notes"`
}

// FactClass is ranks in one state. Ranks are the sorted ranks as spans
// ([[0,3],[5,5]]); PIDs, and Hosts when present, hold one entry per rank
// in that order. How long they have been inside their call is
// SinceSeconds for all of them, or SinceEach per rank.
type FactClass struct {
	Ranks        [][2]int  `json:"ranks"`
	PIDs         []int     `json:"pids"`
	SinceSeconds *float64  `json:"since_seconds,omitempty"`
	SinceEach    []float64 `json:"since_seconds_each,omitempty"`
	// Hosts is absent when every rank runs on the document's host.
	Hosts []string `json:"hosts,omitempty"`
	// CommRanks are the ranks' numbers in Call.Comm when it is not WORLD
	// (-1 unknown); absent when none is known.
	CommRanks []int `json:"comm_ranks,omitempty"`
	FactState
}

// FactState is what the ranks of a class share.
type FactState struct {
	// Call is the call that stands for the rank (hangRank); null while
	// it computes.
	Call       *FactCall `json:"call"`
	Ended      string    `json:"ended,omitempty"`
	Stopped    string    `json:"stopped,omitempty"`
	Resume     string    `json:"resume,omitempty"`
	Unreadable string    `json:"unreadable,omitempty"`
	Threaded   bool      `json:"threaded,omitempty"`
	// Counts are the collective counts; absent without history.
	Counts *[]CommCount `json:"counts,omitempty"`
}

// FactCall is hang.Call without its time, which is per rank.
type FactCall struct {
	Name    string      `json:"name"`
	Comm    *agg.Comm   `json:"comm,omitempty"`
	Seq     uint64      `json:"seq,omitempty"`
	Peer    int         `json:"peer"`
	AtLeast bool        `json:"at_least,omitempty"`
	Moving  bool        `json:"moving,omitempty"`
	Site    string      `json:"site,omitempty"`
	Args    *hang.Args  `json:"args,omitempty"`
	Members []int       `json:"members,omitempty"`
	Waits   []hang.Wait `json:"waits,omitempty"`
}

// FactRank is one rank of the facts, expanded.
type FactRank struct {
	hang.Rank
	// CommRank is its number in In.Comm (not WORLD), -1 if unknown.
	CommRank int
	// Moving says its call moved during the window (In.Since is 0).
	Moving bool
	// node is the node that answered for it, self the host its
	// document names (Merge).
	node, self string
}

// NewNodeFacts groups the ranks of res (Collect's) into classes. Ranks
// whose number is unknown cannot be merged with other nodes' and are
// left out, with a note.
func NewNodeFacts(res Result, job string) NodeFacts {
	nf := NodeFacts{Envelope: report.Envelope{SchemaVersion: report.SchemaVersion, Kind: KindNodeFacts},
		Host: res.Host, Job: job, WindowSeconds: res.Window.Seconds(), Classes: []FactClass{}, Notes: orEmpty(slices.Clone(res.Notes))}
	hs := resolveCommPeers(res.Ranks)
	var frs []FactRank
	for i, r := range res.Ranks {
		if r.Rank < 0 {
			nf.Notes = append(nf.Notes, fmt.Sprintf("pid %d: its rank is unknown (no launcher environment): left out of the node facts", r.PID))
			continue
		}
		fr := FactRank{Rank: hs[i], CommRank: -1}
		if best := standing(r.Threads); best != nil {
			fr.Moving = best.Moving
			if best.Comm != nil && best.Comm.Name != "WORLD" {
				fr.CommRank = best.commRank
			}
		}
		frs = append(frs, fr)
	}
	nf.Classes = groupFacts(frs, res.Host)
	nf.RankCount = len(frs)
	return nf
}

// standing is the thread that stands for its rank (betterThread), nil
// when none is in an MPI call.
func standing(ts []Thread) *Thread {
	var best *Thread
	for i := range ts {
		if best == nil || betterThread(&ts[i], best) {
			best = &ts[i]
		}
	}
	return best
}

// groupFacts puts ranks with the same state in one class, classes in the
// order of their lowest rank.
func groupFacts(frs []FactRank, host string) []FactClass {
	frs = slices.Clone(frs)
	slices.SortStableFunc(frs, func(a, b FactRank) int { return a.Rank.Rank - b.Rank.Rank })
	type acc struct {
		st      FactState
		rs      []int
		pids    []int
		since   []float64
		hosts   []string
		crs     []int
		foreign bool
		anyCR   bool
	}
	byKey := map[string]*acc{}
	var order []*acc
	var key bytes.Buffer
	for _, fr := range frs {
		st := factState(fr)
		key.Reset()
		_ = json.NewEncoder(&key).Encode(st) // plain data: cannot fail
		a := byKey[key.String()]
		if a == nil {
			a = &acc{st: st}
			byKey[key.String()] = a
			order = append(order, a)
		}
		var since time.Duration
		if fr.In != nil {
			since = fr.In.Since
		}
		a.rs = append(a.rs, fr.Rank.Rank)
		a.pids = append(a.pids, fr.PID)
		a.since = append(a.since, since.Seconds())
		a.hosts = append(a.hosts, fr.Host)
		a.crs = append(a.crs, fr.CommRank)
		a.foreign = a.foreign || fr.Host != host
		a.anyCR = a.anyCR || fr.CommRank >= 0
	}
	out := make([]FactClass, 0, len(order))
	for _, a := range order {
		c := FactClass{PIDs: a.pids, SinceEach: a.since, FactState: a.st}
		for _, s := range ranks.Spans(a.rs) {
			c.Ranks = append(c.Ranks, [2]int{s.Lo, s.Hi})
		}
		if allSame(a.since) {
			c.SinceSeconds, c.SinceEach = &a.since[0], nil
		}
		if a.foreign {
			c.Hosts = a.hosts
		}
		if a.anyCR {
			c.CommRanks = a.crs
		}
		out = append(out, c)
	}
	return out
}

func allSame[T comparable](xs []T) bool {
	for _, x := range xs {
		if x != xs[0] {
			return false
		}
	}
	return true
}

// factState is what of fr its class shares.
func factState(fr FactRank) FactState {
	st := FactState{Ended: fr.Ended, Stopped: fr.Stopped, Resume: fr.Resume, Unreadable: fr.Unreadable, Threaded: fr.Threaded}
	if c := fr.In; c != nil {
		st.Call = &FactCall{Name: c.Name, Comm: c.Comm, Seq: c.Seq, Peer: c.Peer, AtLeast: c.AtLeast, Moving: fr.Moving,
			Site: c.Site, Args: c.Args, Members: c.Members, Waits: c.Waits}
	}
	if fr.Counts != nil {
		cs := []CommCount{}
		for comm, calls := range fr.Counts {
			cs = append(cs, CommCount{Comm: comm, Calls: calls})
		}
		slices.SortFunc(cs, func(a, b CommCount) int { return agg.CompareComms(a.Comm, b.Comm) })
		st.Counts = &cs
	}
	return st
}

// Expand turns the classes back into ranks, checking that each class's
// lists fit its ranks.
func (nf NodeFacts) Expand() ([]FactRank, error) {
	var out []FactRank
	for i, c := range nf.Classes {
		n := 0
		for _, s := range c.Ranks {
			if s[0] < 0 || s[1] < s[0] || s[1] > math.MaxInt32 || s[1]-s[0] >= maxFactRanks-n {
				return nil, fmt.Errorf("class %d: rank span [%d,%d] is not a span of rank numbers (0 ≤ first ≤ last ≤ %d, at most %d ranks)", i, s[0], s[1], math.MaxInt32, maxFactRanks)
			}
			n += s[1] - s[0] + 1
		}
		switch {
		case n == 0:
			return nil, fmt.Errorf("class %d has no ranks", i)
		case len(c.PIDs) != n:
			return nil, fmt.Errorf("class %d: %d ranks but %d pids", i, n, len(c.PIDs))
		case (c.SinceSeconds == nil) == (c.SinceEach == nil):
			return nil, fmt.Errorf("class %d: give since_seconds or since_seconds_each, one of them", i)
		case c.SinceEach != nil && len(c.SinceEach) != n:
			return nil, fmt.Errorf("class %d: %d ranks but %d since_seconds_each", i, n, len(c.SinceEach))
		case c.Hosts != nil && len(c.Hosts) != n:
			return nil, fmt.Errorf("class %d: %d ranks but %d hosts", i, n, len(c.Hosts))
		case c.CommRanks != nil && len(c.CommRanks) != n:
			return nil, fmt.Errorf("class %d: %d ranks but %d comm_ranks", i, n, len(c.CommRanks))
		}
		// The class's ranks share one history: package hang only
		// reads it.
		var counts map[agg.Comm]map[string]uint64
		if c.Counts != nil {
			counts = countsMap(*c.Counts)
		}
		// Ranks of a class with one time inside share their call, and
		// every rank of the class its waits: package hang only reads
		// them, and Merge resolves the waits of the class at once.
		var waits []hang.Wait
		var shared *hang.Call
		if c.Call != nil {
			waits = slices.Clone(c.Call.Waits)
			if c.SinceSeconds != nil {
				var err error
				if shared, err = c.call(i, *c.SinceSeconds, waits); err != nil {
					return nil, err
				}
			}
		}
		out = slices.Grow(out, n)
		j := 0
		for _, s := range c.Ranks {
			for r := s[0]; r <= s[1]; r, j = r+1, j+1 {
				fr := FactRank{Rank: hang.Rank{Rank: r, PID: c.PIDs[j], Host: nf.Host, Ended: c.Ended, Stopped: c.Stopped,
					Resume: c.Resume, Unreadable: c.Unreadable, Threaded: c.Threaded, Counts: counts}, CommRank: -1}
				if c.Hosts != nil {
					fr.Host = c.Hosts[j]
				}
				if c.CommRanks != nil {
					fr.CommRank = c.CommRanks[j]
				}
				if c.Call != nil {
					fr.In, fr.Moving = shared, c.Call.Moving
					if shared == nil {
						var err error
						if fr.In, err = c.call(i, c.SinceEach[j], waits); err != nil {
							return nil, err
						}
					}
				}
				out = append(out, fr)
			}
		}
	}
	if len(out) != nf.RankCount {
		return nil, fmt.Errorf("rank_count says %d ranks, the classes hold %d", nf.RankCount, len(out))
	}
	return out, nil
}

// call is the class's call entered since seconds ago, for class i.
func (c FactClass) call(i int, since float64, waits []hang.Wait) (*hang.Call, error) {
	if math.IsNaN(since) || since < 0 || since > maxSinceSeconds {
		return nil, fmt.Errorf("class %d: since_seconds %v is not a time inside a call (0 to %d s)", i, since, int(maxSinceSeconds))
	}
	k := c.Call
	return &hang.Call{Name: k.Name, Comm: k.Comm, Seq: k.Seq, Peer: k.Peer, Since: time.Duration(math.Round(since * 1e9)),
		AtLeast: k.AtLeast, Site: k.Site, Args: k.Args, Members: k.Members, Waits: waits}, nil
}

// Limits on untrusted node facts: a class's ranks, and a time inside a
// call (a century).
const (
	maxFactRanks    = 1 << 24
	maxSinceSeconds = 100 * 365 * 24 * 3600
)

// WriteNodeFacts writes nf as one JSON document on one line: a launcher
// that runs the node command on many nodes at once (srun) interleaves
// their output by lines.
func WriteNodeFacts(w io.Writer, nf NodeFacts) error {
	b, err := json.Marshal(nf)
	if err != nil {
		return fmt.Errorf("encode node facts: %w", err)
	}
	_, err = w.Write(append(text.EscapeJSON(b), '\n'))
	return err
}

// ReadNodeFacts reads a stream of node-facts documents (one, or several
// concatenated, as a launcher that runs the node command on many nodes
// prints them), checking each one's envelope and host (Expand checks its
// classes). A document that does not decode is skipped up to the next
// line, so that one node's garbled output costs only its own document;
// the error names every document skipped.
func ReadNodeFacts(r io.Reader) ([]NodeFacts, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var out []NodeFacts
	var errs []error
	for i := 1; len(bytes.TrimSpace(data)) > 0; i++ {
		dec := json.NewDecoder(bytes.NewReader(data))
		var nf NodeFacts
		err := dec.Decode(&nf)
		if err == nil {
			err = nf.check()
			data = data[dec.InputOffset():]
		} else {
			// Resume after the line the bad document ends on.
			end := int(dec.InputOffset())
			if nl := bytes.IndexByte(data[end:], '\n'); nl >= 0 {
				end += nl + 1
			} else {
				end = len(data)
			}
			data = data[max(end, 1):]
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("document %d: not node facts: %w", i, err))
			continue
		}
		out = append(out, nf)
	}
	if len(out) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("no node-facts document (empty output)"))
	}
	return out, errors.Join(errs...)
}

// check says what makes nf unusable.
func (nf NodeFacts) check() error {
	switch {
	case nf.Kind != KindNodeFacts:
		return fmt.Errorf("kind %s, not %q: is the node command `mpiprobe status --node-facts`?", text.Quote(nf.Kind), KindNodeFacts)
	case nf.SchemaVersion != report.SchemaVersion:
		return fmt.Errorf("schema_version %d: this mpiprobe reads version %d; run the same mpiprobe on every node", nf.SchemaVersion, report.SchemaVersion)
	case strings.TrimSpace(nf.Host) == "":
		return errors.New("no host")
	}
	return nil
}
