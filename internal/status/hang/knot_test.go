package hang

import (
	"slices"
	"testing"
)

// TestKnot checks the AND/OR wait-for model: which ranks are reported as
// unable to move, and what the verdict says of them.
func TestKnot(t *testing.T) {
	w3 := world(3)
	recv := func(peer int, known bool) *Call {
		return &Call{Name: "MPI_Recv", Comm: &w3, Peer: peer, Since: sec(9), Site: "main+0x10 (a.c:16)",
			Waits: []Wait{{Peer: peer, CommPeer: -1, Tag: 5, Comm: &w3, Known: known}}}
	}
	barrier := coll("MPI_Barrier", w3, 1, 9)
	barrier.Site = "main+0x40 (a.c:30)"
	waitany := func(peers ...int) *Call {
		c := &Call{Name: "MPI_Waitany", Peer: -1, Since: sec(9)}
		for _, p := range peers {
			c.Waits = append(c.Waits, Wait{Peer: p, CommPeer: -1, Tag: 1, Comm: &w3, Known: true})
		}
		return c
	}
	w2 := world(2)
	barrier2 := coll("MPI_Barrier", w2, 1, 9)
	barrier2.Site = "main+0x40 (a.c:30)"
	recv2 := &Call{Name: "MPI_Recv", Comm: &w2, Peer: 0, Since: sec(9), Site: "main+0x10 (a.c:16)",
		Waits: []Wait{{Peer: 0, CommPeer: -1, Tag: 112, Comm: &w2, Known: true}}}
	cases := []struct {
		name   string
		ranks  []Rank
		knot   []int
		say    []string
		notSay []string
		lead   []int
	}{
		{
			// The shape of issue 30, item 3: no cycle of point-to-point
			// calls, but no rank can move.
			name:  "wildcard receive, its sender waits for it, the third rank in a barrier",
			ranks: []Rank{{Rank: 0, In: recv(AnySource, true)}, {Rank: 1, In: recv(0, true)}, {Rank: 2, In: barrier}},
			knot:  []int{0, 1, 2},
			say: []string{
				"deadlock: ranks 0-2 cannot move: rank 0 waits for any of ranks 1-2 (MPI_Recv from any source tag 5 at a.c:16), rank 1 waits for 0 (MPI_Recv tag 5 at a.c:16), rank 2 waits for ranks 0-1 (MPI_Barrier on WORLD (size 3) at a.c:30) [waits read from the MPI library]",
			},
			lead: []int{0, 1, 2},
		},
		{
			name:   "wildcard receive with a computing candidate: it may still receive",
			ranks:  []Rank{{Rank: 0, In: recv(AnySource, true)}, {Rank: 1, In: recv(0, true)}, {Rank: 2}},
			notSay: []string{"deadlock"},
		},
		{
			name:   "the barrier's member not observed: nothing is claimed",
			ranks:  []Rank{{Rank: 0, In: recv(AnySource, true)}, {Rank: 1, In: recv(0, true)}, {Rank: 2, In: coll("MPI_Barrier", world(4), 1, 9)}},
			notSay: []string{"deadlock"},
		},
		{
			name:   "a peer unknown: nothing is claimed",
			ranks:  []Rank{{Rank: 0, In: recv(AnySource, true)}, {Rank: 1, In: &Call{Name: "MPI_Recv", Comm: &w3, Peer: PeerUnknown, Since: sec(9)}}, {Rank: 2, In: barrier}},
			notSay: []string{"deadlock"},
		},
		{
			name:  "MPI_Waitany is an OR-wait",
			ranks: []Rank{{Rank: 0, In: waitany(1, 2)}, {Rank: 1, In: recv(0, true)}, {Rank: 2, In: barrier}},
			knot:  []int{0, 1, 2},
			say:   []string{"rank 0 waits for any of ranks 1-2 (MPI_Waitany recv tag 1"},
		},
		{
			name:   "MPI_Waitany with one request on a computing rank can return",
			ranks:  []Rank{{Rank: 0, In: waitany(1, 2)}, {Rank: 1, In: recv(0, true)}, {Rank: 2}},
			notSay: []string{"deadlock"},
		},
		{
			name:  "MPI_Waitall is an AND-wait: one stuck peer is enough",
			ranks: []Rank{{Rank: 0, In: &Call{Name: "MPI_Waitall", Peer: -1, Since: sec(9), Waits: []Wait{{Peer: 1, CommPeer: -1, Tag: 1, Comm: &w3, Known: true}, {Peer: 2, CommPeer: -1, Tag: 1, Comm: &w3, Known: true}}}}, {Rank: 1, In: recv(0, true)}, {Rank: 2}},
			knot:  []int{0, 1},
		},
		{
			// Rank 1 waits for a rank that ended: it is stuck, but by
			// an ended rank, which the verdict says; no knot.
			name:   "waiting for an ended rank is not a knot",
			ranks:  []Rank{{Rank: 0, Ended: "exit 0"}, {Rank: 1, In: recv(0, true)}, {Rank: 2, In: barrier}},
			notSay: []string{"deadlock"},
		},
		{
			name:  "ranks in a collective and one in a receive from one of them: all AND-waits",
			ranks: []Rank{{Rank: 0, In: barrier}, {Rank: 1, In: barrier}, {Rank: 2, In: recv(0, false)}},
			knot:  []int{0, 1, 2},
			say:   []string{"deadlock: ranks 0-2 cannot move (1 of 3 waits inferred)"},
		},
		{
			// testdata/deadlock/bsend_wrong_tag.c: the cycle goes
			// through rank 0's barrier, which rank 1 never enters.
			name:  "a receive from a rank in a barrier the receiver has not entered: a cycle through the barrier",
			ranks: []Rank{{Rank: 0, In: barrier2}, {Rank: 1, In: recv2}},
			knot:  []int{0, 1},
			say:   []string{"deadlock cycle: rank 0 waits for 1 (MPI_Barrier at a.c:30, which 1 has not entered), rank 1 waits for 0 (MPI_Recv tag 112 at a.c:16) [peers read from the MPI library]"},
			lead:  []int{0, 1},
		},
		{
			name:   "two collectives waiting for each other are a mismatch, not a cycle",
			ranks:  []Rank{{Rank: 0, In: barrier2}, {Rank: 1, In: coll("MPI_Allreduce", w2, 1, 9)}},
			knot:   []int{0, 1},
			notSay: []string{"deadlock cycle"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := Diagnose(c.ranks, sec(5))
			if !slices.Equal(rep.Knot.Ranks, c.knot) {
				t.Errorf("knot %v, want %v", rep.Knot.Ranks, c.knot)
			}
			checkSays(t, rep.Verdict, c.say, c.notSay)
			if c.lead != nil && !slices.Equal(rep.Lead, c.lead) {
				t.Errorf("lead %v, want %v", rep.Lead, c.lead)
			}
		})
	}
}
