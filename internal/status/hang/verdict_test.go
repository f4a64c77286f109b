package hang

import (
	"slices"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
)

// factCase checks the structured facts of a report beside its verdict.
type factCase struct {
	name       string
	ranks      []Rank
	verdict    string
	suspects   []int
	lead       []int
	absent     []Absence
	mismatches []Mismatch
}

func sited(c *Call, site string) *Call { c.Site = site; return c }

func TestDiagnoseFacts(t *testing.T) {
	w2, w3, w4 := world(2), world(3), world(4)
	win := agg.Comm{ID: 3, Size: 2}
	half := agg.Comm{ID: 3, Size: 2}
	fin := func(since float64) *Call {
		return &Call{Name: "MPI_Finalize", Peer: -1, Since: sec(since), Site: "main (x.c:30)"}
	}
	cases := []factCase{
		{
			// Issue 15, pattern 1: the rank that left is named first.
			name: "a rank finished without the collective the others wait in",
			ranks: job(3, func(i int) Rank {
				if i == 1 {
					return Rank{In: fin(9)}
				}
				return Rank{In: sited(coll("MPI_Gather", w3, 0, 9), "main (x.c:12)")}
			}),
			verdict:  "rank 1 finished (in MPI_Finalize) while ranks 0,2 wait in MPI_Gather on WORLD (size 3) for 9.0 s at main (x.c:12)",
			suspects: []int{1},
			lead:     []int{1},
			absent:   []Absence{{Rank: 1, Call: "MPI_Gather", Comm: w3, Waiting: []int{0, 2}, State: "finalized", In: "MPI_Finalize"}},
		},
		{
			// Issue 30, item 9: rank 1 made one MPI_Win_fence fewer
			// and its MPI_Win_free matched rank 0's last fence; with
			// no history the verdict must not say it skipped
			// MPI_Win_free, with history it says what the counts show.
			name: "a finished rank without history is not said to have skipped the call",
			ranks: job(2, func(i int) Rank {
				if i == 1 {
					return Rank{In: fin(9)}
				}
				return Rank{In: sited(coll("MPI_Win_free", w2, 0, 9), "main (x.c:20)")}
			}),
			verdict:  "rank 1 finished (in MPI_Finalize) while rank 0 waits in MPI_Win_free on WORLD (size 2) for 9.0 s at main (x.c:20)",
			suspects: []int{1},
			lead:     []int{1},
			absent:   []Absence{{Rank: 1, Call: "MPI_Win_free", Comm: w2, Waiting: []int{0}, State: "finalized", In: "MPI_Finalize"}},
		},
		{
			name: "a finished rank whose history lacks the call is said to have left without it",
			ranks: job(2, func(i int) Rank {
				if i == 1 {
					return Rank{In: fin(9), Counts: counts(w2, "MPI_Win_fence", 1)}
				}
				return Rank{In: sited(coll("MPI_Win_free", w2, 1, 9), "main (x.c:20)"), Counts: counts(w2, "MPI_Win_fence", 2, w2, "MPI_Win_free", 1)}
			}),
			verdict:  "rank 1 finished (in MPI_Finalize) without MPI_Win_free #1, which rank 0 waits in on WORLD (size 2) for 9.0 s at main (x.c:20); counts diverge: rank 1 made 1 MPI_Win_fence on WORLD, the others 2; rank 1 made 0 MPI_Win_free on WORLD, the others 1",
			suspects: []int{1},
			lead:     []int{1},
			absent:   []Absence{{Rank: 1, Call: "MPI_Win_free", Comm: w2, Waiting: []int{0}, State: "finalized", In: "MPI_Finalize"}},
		},
		{
			// With history, a rank that made the call and finished
			// merely waits.
			name: "a rank that made the call and finished is not the cause",
			ranks: job(3, func(i int) Rank {
				switch i {
				case 1:
					return Rank{In: fin(9), Counts: counts(w3, "MPI_Gather", 1)}
				case 2:
					return Rank{Counts: counts(w3, "MPI_Gather", 0)}
				}
				return Rank{In: coll("MPI_Gather", w3, 1, 9), Counts: counts(w3, "MPI_Gather", 1)}
			}),
			verdict:  "rank 0 waits in MPI_Gather #1 on WORLD (size 3) for 9.0 s; rank 1 made the call and finished (in MPI_Finalize); rank 2 has made 0 calls and is computing",
			suspects: []int{2},
			lead:     []int{0},
			absent: []Absence{
				{Rank: 1, Call: "MPI_Gather", Comm: w3, Waiting: []int{0}, State: "done", In: "MPI_Finalize"},
				{Rank: 2, Call: "MPI_Gather", Comm: w3, Waiting: []int{0}, State: "computing"},
			},
		},
		{
			// Issue 15, pattern 2: two communicators, both ranks named.
			name: "a hang across two communicators names both ranks",
			ranks: job(2, func(i int) Rank {
				if i == 0 {
					return Rank{In: coll("MPI_Win_fence", win, 0, 8)}
				}
				return Rank{In: coll("MPI_Barrier", w2, 0, 8)}
			}),
			verdict:  "rank 0 waits in MPI_Win_fence on comm 3 (size 2) for 8.0 s; rank 1 is in MPI_Barrier on WORLD (size 2); rank 1 in turn waits there for rank 0; deadlock: ranks 0-1 cannot move",
			suspects: []int{0, 1},
			lead:     []int{0},
			absent: []Absence{
				{Rank: 1, Call: "MPI_Win_fence", Comm: win, Waiting: []int{0}, State: "elsewhere", In: "MPI_Barrier"},
				{Rank: 0, Call: "MPI_Barrier", Comm: w2, Waiting: []int{1}, State: "elsewhere", In: "MPI_Win_fence"},
			},
		},
		{
			// Not every member of the second group was described by
			// the first: it is explained in full.
			name: "a second communicator with a rank not described yet is explained in full",
			ranks: job(3, func(i int) Rank {
				switch i {
				case 0:
					return Rank{In: coll("MPI_Win_fence", win, 0, 8)}
				case 1:
					return Rank{In: coll("MPI_Barrier", w3, 0, 8)}
				}
				return Rank{}
			}),
			verdict: "rank 0 waits in MPI_Win_fence on comm 3 (size 2) for 8.0 s; 1 of 2 ranks of comm 3 (size 2) is not identified; " +
				"rank 1 waits in MPI_Barrier on WORLD (size 3) for 8.0 s; rank 0 is in MPI_Win_fence (above); rank 2 is computing",
			suspects: []int{0, 2},
			lead:     []int{0},
			absent: []Absence{
				{Rank: 0, Call: "MPI_Barrier", Comm: w3, Waiting: []int{1}, State: "elsewhere", In: "MPI_Win_fence"},
				{Rank: 2, Call: "MPI_Barrier", Comm: w3, Waiting: []int{1}, State: "computing"},
			},
		},
		{
			// The odd half of a split, which rank 3 never joins: the
			// group read from the library names rank 3 as its other
			// member, where the ranks seen on it alone could not.
			name: "a split communicator's member read from the library is named",
			ranks: job(4, func(i int) Rank {
				if i == 1 {
					c := coll("MPI_Allreduce", half, 0, 5)
					c.Members = []int{3, 1}
					return Rank{In: c}
				}
				return Rank{In: coll("MPI_Barrier", w4, 0, 5)}
			}),
			verdict:  "ranks 0,2-3 wait in MPI_Barrier on WORLD (size 4) for 5.0 s; rank 1 is in MPI_Allreduce on comm 3 (size 2); rank 1 in turn waits there for rank 3; deadlock: ranks 0-3 cannot move",
			suspects: []int{1, 3},
			lead:     []int{0, 2, 3},
			absent: []Absence{
				{Rank: 1, Call: "MPI_Barrier", Comm: w4, Waiting: []int{0, 2, 3}, State: "elsewhere", In: "MPI_Allreduce"},
				{Rank: 3, Call: "MPI_Allreduce", Comm: half, Waiting: []int{1}, State: "elsewhere", In: "MPI_Barrier"},
			},
		},
		{
			// Issue 15, pattern 3: one call, two sites.
			name: "the same collective at two call sites is a mismatch",
			ranks: job(2, func(i int) Rank {
				return Rank{In: sited(coll("MPI_Reduce", w2, 0, 6), []string{"main (x.c:19)", "main (x.c:21)"}[i])}
			}),
			verdict:    "mismatch on WORLD (size 2) for 6.0 s: rank 0 in MPI_Reduce at main (x.c:19), rank 1 in MPI_Reduce at main (x.c:21)",
			suspects:   []int{0, 1},
			lead:       []int{0, 1},
			mismatches: []Mismatch{{Comm: w2, Sides: []Side{{Ranks: []int{0}, Call: "MPI_Reduce", Site: "main (x.c:19)"}, {Ranks: []int{1}, Call: "MPI_Reduce", Site: "main (x.c:21)"}}}},
		},
		{
			// Arguments read at entry tell calls at one site apart.
			name: "different roots at one call site are a mismatch",
			ranks: job(2, func(i int) Rank {
				c := sited(coll("MPI_Reduce", w2, 3, 6), "main (x.c:19)")
				c.Args = &Args{Root: i, Count: 1, Datatype: "MPI_INT"}
				return Rank{In: c}
			}),
			verdict:  "mismatch on WORLD (size 2) for 6.0 s: rank 0 in MPI_Reduce #3 root 0 count 1 MPI_INT at main (x.c:19), rank 1 in MPI_Reduce #3 root 1 count 1 MPI_INT at main (x.c:19)",
			suspects: []int{0, 1},
			lead:     []int{0, 1},
			mismatches: []Mismatch{{Comm: w2, Sides: []Side{
				{Ranks: []int{0}, Call: "MPI_Reduce", Seq: 3, Site: "main (x.c:19)", Args: &Args{Root: 0, Count: 1, Datatype: "MPI_INT"}},
				{Ranks: []int{1}, Call: "MPI_Reduce", Seq: 3, Site: "main (x.c:19)", Args: &Args{Root: 1, Count: 1, Datatype: "MPI_INT"}},
			}}},
		},
		{
			// Different sites while a member is missing are no mismatch:
			// the missing member is the cause.
			name: "different sites with a member missing are not a mismatch",
			ranks: job(3, func(i int) Rank {
				if i == 2 {
					return Rank{}
				}
				return Rank{In: sited(coll("MPI_Barrier", w3, 0, 6), []string{"main (x.c:5)", "main (x.c:7)"}[i])}
			}),
			verdict:  "ranks 0-1 wait in MPI_Barrier on WORLD (size 3) for 6.0 s; rank 2 is computing",
			suspects: []int{2},
			lead:     []int{0, 1},
			absent:   []Absence{{Rank: 2, Call: "MPI_Barrier", Comm: w3, Waiting: []int{0, 1}, State: "computing"}},
		},
		{
			// Issue 15, pattern 5: the stuck rank leads, not the ranks in
			// MPI_Finalize.
			name: "the stuck rank leads, the finalized ranks follow",
			ranks: job(4, func(i int) Rank {
				if i == 3 {
					return Rank{In: &Call{Name: "MPI_Recv", Comm: &w4, Peer: 1, Since: sec(7)}}
				}
				return Rank{In: fin(8)}
			}),
			verdict:  "rank 3 is in MPI_Recv from rank 1 for 7.0 s; ranks 0-2 finished (in MPI_Finalize)",
			suspects: []int{1},
			lead:     []int{3},
		},
		{
			name: "a rank waits in MPI_Init for one that never called it",
			ranks: job(2, func(i int) Rank {
				if i == 1 {
					return Rank{}
				}
				return Rank{In: &Call{Name: "MPI_Init", Peer: -1, Since: sec(6), Site: "main (x.c:3)"}}
			}),
			verdict:  "rank 0 waits in MPI_Init for 6.0 s at main (x.c:3); rank 1 is computing",
			suspects: []int{1},
			lead:     []int{0},
			absent:   []Absence{{Rank: 1, Call: "MPI_Init", Comm: agg.Comm{Name: "WORLD"}, Waiting: []int{0}, State: "computing"}},
		},
		{
			// Issue 15, pattern 4: a stack that could not be unwound is
			// not "computing".
			name: "an unreadable rank is not computing",
			ranks: job(2, func(i int) Rank {
				if i == 1 {
					return Rank{Unreadable: "its stack could not be unwound"}
				}
				return Rank{In: coll("MPI_Barrier", w2, 0, 6)}
			}),
			verdict:  "rank 0 waits in MPI_Barrier on WORLD (size 2) for 6.0 s; rank 1 is in an unknown state: its stack could not be unwound",
			suspects: []int{1},
			lead:     []int{0},
			absent:   []Absence{{Rank: 1, Call: "MPI_Barrier", Comm: w2, Waiting: []int{0}, State: "unknown"}},
		},
		{
			// A split half whose other member is not known stays "not
			// identified"; WORLD's absent rank is named.
			name: "split half: the unknown member is counted, not invented",
			ranks: job(4, func(i int) Rank {
				if i == 1 {
					return Rank{In: coll("MPI_Allreduce", half, 0, 6)}
				}
				return Rank{In: coll("MPI_Barrier", w4, 0, 6)}
			}),
			verdict:  "ranks 0,2-3 wait in MPI_Barrier on WORLD (size 4) for 6.0 s; rank 1 is in MPI_Allreduce on comm 3 (size 2); rank 1 waits in MPI_Allreduce on comm 3 (size 2) for 6.0 s; 1 of 2 ranks of comm 3 (size 2) is not identified",
			suspects: []int{1},
			lead:     []int{0, 2, 3},
			absent:   []Absence{{Rank: 1, Call: "MPI_Barrier", Comm: w4, Waiting: []int{0, 2, 3}, State: "elsewhere", In: "MPI_Allreduce"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := Diagnose(tc.ranks, 5*time.Second)
			if rep.Verdict != tc.verdict {
				t.Errorf("verdict\n got %q\nwant %q", rep.Verdict, tc.verdict)
			}
			if !slices.Equal(rep.Suspects, tc.suspects) {
				t.Errorf("Suspects = %v, want %v", rep.Suspects, tc.suspects)
			}
			if !slices.Equal(rep.Lead, tc.lead) {
				t.Errorf("Lead = %v, want %v", rep.Lead, tc.lead)
			}
			if !slices.EqualFunc(rep.Absent, tc.absent, func(a, b Absence) bool {
				return a.Rank == b.Rank && a.Call == b.Call && a.Comm == b.Comm && slices.Equal(a.Waiting, b.Waiting) && a.State == b.State && a.In == b.In
			}) {
				t.Errorf("Absent = %+v, want %+v", rep.Absent, tc.absent)
			}
			if !slices.EqualFunc(rep.Mismatches, tc.mismatches, func(a, b Mismatch) bool {
				return a.Comm == b.Comm && slices.EqualFunc(a.Sides, b.Sides, func(x, y Side) bool {
					return slices.Equal(x.Ranks, y.Ranks) && x.Call == y.Call && x.Seq == y.Seq && x.Site == y.Site &&
						(x.Args == nil) == (y.Args == nil) && (x.Args == nil || *x.Args == *y.Args)
				})
			}) {
				t.Errorf("Mismatches = %+v, want %+v", rep.Mismatches, tc.mismatches)
			}
		})
	}
}

// TestReadMembers: the group read from the library names a communicator's
// members only when the ranks on it agree and it holds every rank seen on
// it.
func TestReadMembers(t *testing.T) {
	half := agg.Comm{ID: 3, Size: 2}
	in := func(members ...[]int) []Rank {
		return job(4, func(i int) Rank {
			if i < len(members) {
				c := coll("MPI_Allreduce", half, 0, 5)
				c.Members = members[i]
				return Rank{In: c}
			}
			return Rank{}
		})
	}
	for _, tt := range []struct {
		name  string
		ranks []Rank
		want  []int
	}{
		{"one rank's read", in([]int{2, 0}), []int{0, 2}},
		{"ranks agree", in([]int{0, 1}, []int{1, 0}), []int{0, 1}},
		{"ranks disagree: the ranks seen", in([]int{0, 2}, []int{1, 3}), []int{0, 1}},
		{"a read without a rank seen on it", in([]int{2, 3}), []int{0}},
		{"nothing read", in(nil), []int{0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDiag(tt.ranks, 0)
			if got := d.membersOf(keyOf(half, 0)); !slices.Equal(got, tt.want) {
				t.Errorf("membersOf = %v, want %v", got, tt.want)
			}
		})
	}
}
