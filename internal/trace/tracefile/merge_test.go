package tracefile

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// split cuts t into one part per node, as each node's recorder would have
// written it: ranks r with r%nodes == n on node n, each part numbering its
// own calls and sites in the order of their first use (reversed on odd
// nodes, so that indices differ between parts), its Start `late[n]` after
// t's and its times counted from there.
func split(t *Trace, nodes int, late []time.Duration) []Part {
	parts := make([]Part, nodes)
	for n := range parts {
		p := &Trace{Version: Version, Complete: t.Complete,
			Header: Header{Host: fmt.Sprintf("node%d", n), Start: t.Header.Start.Add(late[n]), Command: []string{"-p", fmt.Sprint(n)}}}
		rankIdx, callIdx, siteIdx := map[int]int{}, map[int]int{}, map[int]int{}
		for r, rk := range t.Ranks {
			if r%nodes == n {
				rankIdx[r] = len(p.Ranks)
				rk.Host = p.Header.Host
				p.Ranks = append(p.Ranks, rk)
			}
		}
		var calls, sites []int
		for _, e := range t.Events {
			if _, ok := rankIdx[e.Rank]; !ok {
				continue
			}
			if _, ok := callIdx[e.Call]; !ok {
				callIdx[e.Call] = len(calls)
				calls = append(calls, e.Call)
			}
			if _, ok := siteIdx[e.Site]; !ok {
				siteIdx[e.Site] = len(sites)
				sites = append(sites, e.Site)
			}
		}
		if n%2 == 1 {
			slices.Reverse(calls)
			slices.Reverse(sites)
			for i, c := range calls {
				callIdx[c] = i
			}
			for i, s := range sites {
				siteIdx[s] = i
			}
		}
		for _, c := range calls {
			p.Calls = append(p.Calls, t.Calls[c])
		}
		for _, s := range sites {
			p.Sites = append(p.Sites, t.Sites[s])
		}
		for _, e := range t.Events {
			if r, ok := rankIdx[e.Rank]; ok {
				e.Rank, e.Call, e.Site = r, callIdx[e.Call], siteIdx[e.Site]
				e.Enter -= int64(late[n])
				e.Exit -= int64(late[n])
				p.Events = append(p.Events, e)
			}
		}
		for _, e := range t.Ends {
			if r, ok := rankIdx[e.Rank]; ok {
				e.Rank = r
				p.Ends = append(p.Ends, e)
			}
		}
		parts[n] = Part{Name: fmt.Sprintf("node%d.trace", n), Trace: p}
	}
	return parts
}

// byRank describes every event and end of t by value, rank by rank (by pid):
// what must not change when a trace is split by node and merged.
func byRank(t *Trace) map[int][]string {
	out := map[int][]string{}
	for _, e := range t.Events {
		r := t.Ranks[e.Rank]
		ev := e
		ev.Rank, ev.Call, ev.Site = 0, 0, 0
		out[r.PID] = append(out[r.PID], fmt.Sprintf("%s %s %+v %+v", r.Rank, t.Calls[e.Call], t.Sites[e.Site], ev))
	}
	for _, e := range t.Ends {
		r := t.Ranks[e.Rank]
		out[r.PID] = append(out[r.PID], fmt.Sprintf("end %s %d %s", r.Rank, e.Lost, e.End))
	}
	return out
}

// TestMergeUndoesSplit: a trace cut by node, each part with its own
// indices and clock start, merges back into the same calls of the same
// ranks at the same times (each rank's events in order), whatever the
// number of nodes.
func TestMergeUndoesSplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 31))
	for i := range 200 {
		whole := randTrace(rng, rng.IntN(300))
		nodes := 1 + rng.IntN(len(whole.Ranks))
		late := make([]time.Duration, nodes)
		for n := 1; n < nodes; n++ {
			late[n] = time.Duration(rng.Int64N(int64(time.Hour)))
		}
		whole.Complete = rng.IntN(4) > 0
		parts := split(whole, nodes, late)
		m, err := Merge(parts)
		if err != nil {
			t.Fatalf("trace %d: %v", i, err)
		}
		got, want := byRank(m), byRank(whole)
		for pid, w := range want {
			if g := got[pid]; !slices.Equal(g, w) {
				t.Fatalf("trace %d, %d nodes, pid %d:\ngot  %q\nwant %q", i, nodes, pid, g, w)
			}
		}
		if len(got) != len(want) || len(m.Ranks) != len(whole.Ranks) {
			t.Fatalf("trace %d: %d ranks with events, want %d; %d ranks, want %d", i, len(got), len(want), len(m.Ranks), len(whole.Ranks))
		}
		if !m.Header.Start.Equal(whole.Header.Start) || m.Complete != whole.Complete {
			t.Errorf("trace %d: start %v complete %v, want %v %v", i, m.Header.Start, m.Complete, whole.Header.Start, whole.Complete)
		}
		for _, r := range m.Ranks {
			if want := fmt.Sprintf("node%d", slices.IndexFunc(whole.Ranks, func(w Rank) bool { return w.PID == r.PID })%nodes); r.Host != want {
				t.Errorf("trace %d: pid %d on %s, want %s", i, r.PID, r.Host, want)
			}
		}
		if len(m.Calls) > len(whole.Calls) || len(m.Sites) > len(whole.Sites) {
			t.Errorf("trace %d: %d calls, %d sites: more than the %d, %d of the whole", i, len(m.Calls), len(m.Sites), len(whole.Calls), len(whole.Sites))
		}
	}
}

// TestMergeTimes: the node whose recording started later has its calls
// moved by the difference, the merged trace starts at the earliest start,
// and the hosts are listed in the order of the files.
func TestMergeTimes(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	mk := func(host, rank string, start time.Time, enter int64) *Trace {
		return &Trace{Header: Header{Host: host, Start: start}, Calls: []string{"MPI_Init"}, Sites: []Site{{Object: "/a"}},
			Ranks:  []Rank{{PID: 7, Host: host, Job: "j1", Rank: rank}},
			Events: []Event{{Call: 0, Site: 0, Enter: enter, Exit: enter + 10}}, Complete: true}
	}
	m, err := Merge([]Part{{"b.trace", mk("b", "1", t0.Add(1500*time.Microsecond), 100)}, {"a.trace", mk("a", "0", t0, 100)}})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Header.Start.Equal(t0) || m.Header.Host != "b,a" || len(m.Calls) != 1 || len(m.Sites) != 1 {
		t.Errorf("header %+v, calls %v, sites %v", m.Header, m.Calls, m.Sites)
	}
	if m.Events[0].Enter != 1_500_100 || m.Events[0].Exit != 1_500_110 || m.Events[1].Enter != 100 || m.Events[1].Rank != 1 {
		t.Errorf("events %+v", m.Events)
	}
}

// TestMergeRefuses: files of two jobs, or a rank in two files, give one
// line naming the cause and the files.
func TestMergeRefuses(t *testing.T) {
	mk := func(ranks ...Rank) *Trace { return &Trace{Ranks: ranks, Complete: true} }
	for _, c := range []struct {
		name  string
		parts []Part
		want  []string // all in the message
	}{
		{"two jobs", []Part{{"a.trace", mk(Rank{PID: 1, Host: "a", Job: "j1", Rank: "0"})}, {"b.trace", mk(Rank{PID: 1, Host: "b", Job: "j2", Rank: "1"})}},
			[]string{`b.trace holds job "j2", a.trace job "j1"`, "one job"}},
		{"two jobs in the second file", []Part{{"a.trace", mk(Rank{PID: 1, Host: "a", Job: "j1", Rank: "0"})},
			{"b.trace", mk(Rank{PID: 1, Host: "b", Job: "j1", Rank: "1"}, Rank{PID: 2, Host: "b", Job: "j\n3", Rank: "2"})}},
			[]string{`b.trace holds job "j\n3", a.trace job "j1"`}},
		{"rank in two files", []Part{{"a.trace", mk(Rank{PID: 1, Host: "a", Job: "j1", Rank: "0"}, Rank{PID: 2, Host: "a", Job: "j1", Rank: "1"})},
			{"b.trace", mk(Rank{PID: 5, Host: "b", Job: "j1", Rank: "2"})}, {"c.trace", mk(Rank{PID: 1, Host: "c", Job: "j1", Rank: "1"})}},
			[]string{`rank "1" is in both a.trace and c.trace`, "two nodes claiming one rank"}},
		{"one file twice, ranks unknown", []Part{{"a.trace", mk(Rank{PID: 1, Host: "a", Job: "?", Rank: "?"})}, {"a2.trace", mk(Rank{PID: 1, Host: "a", Job: "?", Rank: "?"})}},
			[]string{`process 1 of host "a" is in both a.trace and a2.trace`, "given twice"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := Merge(c.parts)
			if err == nil {
				t.Fatalf("merged: %+v", m)
			}
			msg := err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) || strings.Contains(msg, "\n") {
					t.Errorf("%q, want one line with %q", msg, w)
				}
			}
		})
	}
	// Ranks that repeat within one file (two jobs traced with -p, ranks
	// unknown) are that file's business, as with one file.
	same := mk(Rank{PID: 1, Host: "a", Job: "?", Rank: "?"}, Rank{PID: 2, Host: "a", Job: "?", Rank: "?"})
	if _, err := Merge([]Part{{"a.trace", same}, {"b.trace", mk(Rank{PID: 1, Host: "b", Job: "?", Rank: "?"})}}); err != nil {
		t.Errorf("ranks ? on two hosts: %v", err)
	}
}

// TestSumDamage adds up what was read of every file.
func TestSumDamage(t *testing.T) {
	s := SumDamage([]*DamageError{{Events: 10, Written: 10}, {Events: 5, Chunks: 2, Written: 8, Damage: []Damage{{Start: 1, End: 2, Chunk: 3, Cause: "crc mismatch"}}}})
	if s.Events != 15 || s.Written != 18 || s.Chunks != 2 || len(s.Damage) != 1 {
		t.Errorf("%+v", s)
	}
	if s := SumDamage([]*DamageError{{Events: 10, Written: 10}, {Events: 5, Written: -1, Unclosed: true}}); s.Written != -1 || !s.Unclosed {
		t.Errorf("%+v", s)
	}
}
