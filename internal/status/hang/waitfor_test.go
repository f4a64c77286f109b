package hang

import (
	"slices"
	"testing"
)

func TestWaitForGraph(t *testing.T) {
	w := world(3)
	recv := func(peer, tag int, known bool) *Call {
		return &Call{Name: "MPI_Recv", Comm: &w, Peer: peer, Since: sec(9), Site: "main+0x10 (a.c:16)",
			Waits: []Wait{{Peer: peer, CommPeer: -1, Tag: tag, Comm: &w, Known: known}}}
	}
	cases := []struct {
		name   string
		ranks  []Rank
		cycles [][]int // From of each edge, per cycle
		edges  int
		say    []string // substrings of the verdict
		notSay []string
	}{
		{
			name:   "recv recv cycle, known",
			ranks:  []Rank{{Rank: 0, In: recv(1, 7, true)}, {Rank: 1, In: recv(0, 7, true)}},
			cycles: [][]int{{0, 1}}, edges: 2,
			say:    []string{"deadlock cycle: rank 0 waits for 1 (MPI_Recv tag 7 at a.c:16), rank 1 waits for 0 (MPI_Recv tag 7 at a.c:16) [peers read from the MPI library]"},
			notSay: []string{"wait on each other"},
		},
		{
			name:   "mixed known and inferred",
			ranks:  []Rank{{Rank: 0, In: recv(1, 7, true)}, {Rank: 1, In: recv(0, 7, false)}},
			cycles: [][]int{{0, 1}}, edges: 2,
			say: []string{"rank 1 waits for 0 (MPI_Recv tag 7 at a.c:16, inferred)", "[1 of 2 peers read from the MPI library]"},
		},
		{
			name:   "chain to a finalizing rank",
			ranks:  []Rank{{Rank: 0, In: &Call{Name: "MPI_Finalize", Peer: -1, Since: sec(9)}}, {Rank: 1, In: recv(0, 7, true)}, {Rank: 2, In: recv(1, 3, true)}},
			cycles: nil, edges: 2,
			say: []string{"rank 1 waits for 0 (MPI_Recv tag 7 at a.c:16), which is in MPI_Finalize"},
		},
		{
			name:   "self receive",
			ranks:  []Rank{{Rank: 0, In: recv(0, 4, true)}, {Rank: 1, In: nil}},
			cycles: [][]int{{0}}, edges: 1,
			say: []string{"deadlock cycle: rank 0 waits for 0 (MPI_Recv tag 4"},
		},
		{
			name:  "ANY_SOURCE with a computing rank: no cycle",
			ranks: []Rank{{Rank: 0, In: recv(AnySource, 6, true)}, {Rank: 1, In: recv(0, 1, true)}, {Rank: 2}},
			edges: 3,
			say:   nil, notSay: []string{"deadlock cycle"},
		},
		{
			name:   "ANY_SOURCE with all others blocked: cycle",
			ranks:  []Rank{{Rank: 0, In: recv(AnySource, 6, true)}, {Rank: 1, In: recv(0, 1, true)}, {Rank: 2, In: recv(0, 1, true)}},
			cycles: [][]int{{0, 1}, {0, 2}}, edges: 4,
			say: []string{"deadlock cycle: rank 0 waits for 1 (MPI_Recv from any source tag 6"},
		},
		{
			name:  "ANY_SOURCE nobody blocked: states named",
			ranks: []Rank{{Rank: 0, In: &Call{Name: "MPI_Finalize", Peer: -1, Since: sec(9)}}, {Rank: 1, In: recv(AnySource, 6, true)}},
			edges: 1,
			say:   []string{"rank 1 waits for any rank (MPI_Recv from any source tag 6 at a.c:16), and rank 0 is in MPI_Finalize"},
		},
		{
			name: "a stopped rank waits for nobody and is named first",
			ranks: []Rank{{Rank: 0, In: recv(1, 7, true)}, {Rank: 1, In: recv(0, 7, true), Stopped: "by SIGSTOP", Resume: "kill -CONT 42"},
				{Rank: 2, In: &Call{Name: "MPI_Barrier", Comm: &w, Peer: -1, Since: sec(9)}}},
			edges: 1,
			say: []string{"rank 1 is stopped by SIGSTOP: a stopped rank makes no progress", "(kill -CONT 42 resumes it)",
				"rank 0 waits for 1 (MPI_Recv tag 7 at a.c:16), which is stopped by SIGSTOP", "rank 1 is stopped by SIGSTOP in MPI_Recv"},
			notSay: []string{"rank 1 waits for 0", "deadlock cycle"},
		},
		{
			name:   "a stopped rank that computes",
			ranks:  []Rank{{Rank: 0, In: recv(1, 7, true)}, {Rank: 1, Stopped: "by SIGTSTP"}},
			edges:  1,
			say:    []string{"rank 1 is stopped by SIGTSTP: a stopped rank makes no progress", "which is stopped by SIGTSTP"},
			notSay: []string{"computing"},
		},
		{
			name:  "recent call is not blocked",
			ranks: []Rank{{Rank: 0, In: recv(1, 7, true)}, {Rank: 1, In: &Call{Name: "MPI_Recv", Peer: 0, Since: sec(0.1), Waits: []Wait{{Peer: 0, Tag: 7, Known: true}}}}},
			edges: 1, notSay: []string{"deadlock cycle"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := BuildWaitFor(c.ranks, sec(5), nil)
			if len(g.Edges) != c.edges {
				t.Errorf("edges: got %d %+v, want %d", len(g.Edges), g.Edges, c.edges)
			}
			var got [][]int
			for _, cy := range g.Cycles {
				var fs []int
				for _, e := range cy {
					fs = append(fs, e.From)
				}
				got = append(got, fs)
			}
			if !slices.EqualFunc(got, c.cycles, slices.Equal) {
				t.Errorf("cycles: got %v, want %v", got, c.cycles)
			}
			rep := Diagnose(c.ranks, sec(5))
			checkSays(t, rep.Verdict, c.say, c.notSay)
			if len(rep.Cycles) != len(c.cycles) {
				t.Errorf("Report.Cycles: %d, want %d", len(rep.Cycles), len(c.cycles))
			}
			for _, r := range c.ranks {
				if r.Stopped != "" && (!slices.Equal(rep.Lead, []int{r.Rank}) || !slices.Contains(rep.Suspects, r.Rank)) {
					t.Errorf("stopped rank %d: lead %v, suspects %v; want it the lead and a suspect", r.Rank, rep.Lead, rep.Suspects)
				}
			}
		})
	}
}
