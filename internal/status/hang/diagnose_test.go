package hang

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
)

type verdictCase struct {
	name    string
	ranks   []Rank
	minWait time.Duration
	verdict string
	waiting []int
	odd     []int
}

func runVerdictCases(t *testing.T, cases []verdictCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			minWait := tc.minWait
			if minWait == 0 {
				minWait = 5 * time.Second
			}
			rep := Diagnose(tc.ranks, minWait)
			if rep.Verdict != tc.verdict {
				t.Errorf("verdict\n got %q\nwant %q", rep.Verdict, tc.verdict)
			}
			if !slices.Equal(rep.Waiting, tc.waiting) {
				t.Errorf("Waiting = %v, want %v", rep.Waiting, tc.waiting)
			}
			if !slices.Equal(rep.Odd, tc.odd) {
				t.Errorf("Odd = %v, want %v", rep.Odd, tc.odd)
			}
			if rep.Threshold != minWait {
				t.Errorf("Threshold = %v, want %v", rep.Threshold, minWait)
			}
		})
	}
}

// Rules 1 and 2: the largest group blocked in one collective, and the other
// members of its communicator.
func TestDiagnoseCollectiveGroup(t *testing.T) {
	comm3 := agg.Comm{ID: 3, Size: 4}
	w4, w6, w10 := world(4), world(6), world(10)
	runVerdictCases(t, []verdictCase{
		{
			name:    "brief example",
			ranks:   hungAllreduce(8),
			verdict: "ranks 0-6 wait in MPI_Allreduce #42 on WORLD (size 8) for 12.3 s; rank 7 has made 41 calls and is in MPI_Recv from rank 3; deadlock: ranks 0-7 cannot move (1 of 8 waits inferred)",
			waiting: []int{0, 1, 2, 3, 4, 5, 6},
			odd:     []int{7},
		},
		{
			name: "one rank waits, the other has no history",
			ranks: []Rank{
				{Rank: 0, In: coll("MPI_Barrier", world(2), 3, 6), Counts: counts(world(2), "MPI_Barrier", 3)},
				{Rank: 1},
			},
			verdict: "rank 0 waits in MPI_Barrier #3 on WORLD (size 2) for 6.0 s; rank 1 is computing",
			waiting: []int{0},
			odd:     []int{1},
		},
		{
			name: "tie goes to the group with the lowest rank; recent entry",
			ranks: []Rank{
				{Rank: 0, In: coll("MPI_Bcast", w6, 1, 7)},
				{Rank: 1, In: coll("MPI_Barrier", w6, 1, 8)},
				{Rank: 2, In: coll("MPI_Barrier", w6, 1, 8)},
				{Rank: 3},
				{Rank: 4, In: coll("MPI_Bcast", w6, 1, 0.1)},
				{Rank: 5, In: coll("MPI_Bcast", w6, 1, 9)},
			},
			verdict: "mismatch on WORLD (size 6) for 7.0 s: ranks 0,5 in MPI_Bcast #1, ranks 1-2 in MPI_Barrier #1; rank 3 is computing; rank 4 is in MPI_Bcast #1 on WORLD (size 6)",
			waiting: nil,
			odd:     nil,
		},
		{
			name: "different Seq are different calls",
			ranks: job(4, func(i int) Rank {
				if i == 3 {
					return Rank{In: coll("MPI_Allreduce", w4, 9, 30), Counts: counts(w4, "MPI_Allreduce", 9)}
				}
				return Rank{In: coll("MPI_Allreduce", w4, 10, 30), Counts: counts(w4, "MPI_Allreduce", 10)}
			}),
			verdict: "mismatch on WORLD (size 4) for 30.0 s: ranks 0-2 in MPI_Allreduce #10, rank 3 in MPI_Allreduce #9; counts diverge: rank 3 made 9 MPI_Allreduce on WORLD, the others 10",
			waiting: nil,
			odd:     nil,
		},
		{
			name: "Seq taken from the history when the call has none",
			ranks: job(4, func(i int) Rank {
				return Rank{In: coll("MPI_Allreduce", w4, 0, 10), Counts: counts(w4, "MPI_Allreduce", 42)}
			}),
			verdict: "ranks 0-3 wait in MPI_Allreduce #42 on WORLD (size 4) for 10.0 s; all 4 ranks of WORLD are in this call",
			waiting: []int{0, 1, 2, 3},
		},
		{
			name: "common call site",
			ranks: job(2, func(i int) Rank {
				c := coll("MPI_Barrier", world(2), 0, 10)
				c.Site = "main+0x1e4 (app.c:32)"
				return Rank{In: c}
			}),
			verdict: "ranks 0-1 wait in MPI_Barrier on WORLD (size 2) for 10.0 s at main+0x1e4 (app.c:32); all 2 ranks of WORLD are in this call",
			waiting: []int{0, 1},
		},
		{
			name: "odd ranks with identical descriptions are grouped",
			ranks: job(10, func(i int) Rank {
				if i == 7 || i == 9 {
					return Rank{Counts: counts(w10, "MPI_Allreduce", 41)}
				}
				return Rank{In: coll("MPI_Allreduce", w10, 42, 12.3), Counts: counts(w10, "MPI_Allreduce", 42)}
			}),
			verdict: "ranks 0-6,8 wait in MPI_Allreduce #42 on WORLD (size 10) for 12.3 s; ranks 7,9 have made 41 calls and are computing",
			waiting: []int{0, 1, 2, 3, 4, 5, 6, 8},
			odd:     []int{7, 9},
		},
		{
			name: "odd states: any source with site, send, other collective",
			ranks: job(6, func(i int) Rank {
				c3 := agg.Comm{ID: 3, Size: 2}
				switch i {
				case 3:
					c := p2pOn("MPI_Recv", w6, -2, 20)
					c.Site = "main+0x1e4 (app.c:32)"
					return Rank{In: c, Counts: counts(w6, "MPI_Allreduce", 1)}
				case 4:
					return Rank{In: p2pOn("MPI_Ssend", w6, 0, 20)}
				case 5:
					return Rank{In: coll("MPI_Barrier", c3, 41, 20), Counts: counts(c3, "MPI_Barrier", 41)}
				}
				return Rank{In: coll("MPI_Allreduce", w6, 2, 12), Counts: counts(w6, "MPI_Allreduce", 2)}
			}),
			verdict: "ranks 0-2 wait in MPI_Allreduce #2 on WORLD (size 6) for 12.0 s; rank 3 has made 1 call and is in MPI_Recv from any source at main+0x1e4 (app.c:32); rank 4 is in MPI_Ssend to rank 0; rank 5 has made 0 calls and is in MPI_Barrier #41 on comm 3 (size 2); rank 5 waits in MPI_Barrier #41 on comm 3 (size 2) for 20.0 s; 1 of 2 ranks of comm 3 (size 2) is not identified; deadlock: ranks 0-2,4 cannot move (1 of 4 waits inferred)",
			waiting: []int{0, 1, 2},
			odd:     []int{3, 4, 5},
		},
		{
			name: "more odd descriptions than shown",
			ranks: job(8, func(i int) Rank {
				if i >= 3 {
					return Rank{In: p2p("MPI_Recv", i-3, 1)}
				}
				return Rank{In: coll("MPI_Barrier", world8, 0, 12)}
			}),
			verdict: "ranks 0-2 wait in MPI_Barrier on WORLD (size 8) for 12.0 s; rank 3 is in MPI_Recv from rank 0; rank 4 is in MPI_Recv from rank 1; rank 5 is in MPI_Recv from rank 2; 2 more ranks of WORLD are in other states",
			waiting: []int{0, 1, 2},
			odd:     []int{3, 4, 5, 6, 7},
		},
		{
			name: "ranks of WORLD on another node are counted, not invented",
			ranks: job(4, func(i int) Rank {
				return Rank{In: coll("MPI_Allreduce", world8, 5, 10), Counts: counts(world8, "MPI_Allreduce", 5)}
			}),
			verdict: "ranks 0-3 wait in MPI_Allreduce #5 on WORLD (size 8) for 10.0 s; 4 of 8 ranks of WORLD are not observed here (ranks 4-7)",
			waiting: []int{0, 1, 2, 3},
		},
		{
			name: "one rank of WORLD not observed",
			ranks: job(7, func(i int) Rank {
				return Rank{In: coll("MPI_Allreduce", world8, 5, 10)}
			}),
			verdict: "ranks 0-6 wait in MPI_Allreduce #5 on WORLD (size 8) for 10.0 s; 1 of 8 ranks of WORLD is not observed here (rank 7)",
			waiting: []int{0, 1, 2, 3, 4, 5, 6},
		},
		{
			name: "sub-communicator as large as WORLD: every rank is a member",
			ranks: []Rank{
				{Rank: 0, In: coll("MPI_Bcast", comm3, 2, 6), Counts: counts(comm3, "MPI_Bcast", 2)},
				{Rank: 1, In: coll("MPI_Bcast", comm3, 2, 7), Counts: counts(comm3, "MPI_Bcast", 2)},
				{Rank: 2, Counts: counts(comm3, "MPI_Bcast", 1)},
				{Rank: 3},
			},
			verdict: "ranks 0-1 wait in MPI_Bcast #2 on comm 3 (size 4) for 6.0 s; rank 2 has made 1 call and is computing; rank 3 is computing",
			waiting: []int{0, 1},
			odd:     []int{2, 3},
		},
		{
			name: "sub-communicator on part of WORLD",
			ranks: []Rank{
				{Rank: 0, In: coll("MPI_Bcast", comm3, 2, 6), Counts: counts(comm3, "MPI_Bcast", 2, world8, "MPI_Barrier", 1)},
				{Rank: 1, In: coll("MPI_Bcast", comm3, 2, 7), Counts: counts(comm3, "MPI_Bcast", 2, world8, "MPI_Barrier", 1)},
				{Rank: 2, In: coll("MPI_Bcast", comm3, 2, 7), Counts: counts(comm3, "MPI_Bcast", 2, world8, "MPI_Barrier", 1)},
				{Rank: 3, In: coll("MPI_Bcast", comm3, 2, 7), Counts: counts(comm3, "MPI_Bcast", 2, world8, "MPI_Barrier", 1)},
			},
			verdict: "ranks 0-3 wait in MPI_Bcast #2 on comm 3 (size 4) for 6.0 s; all 4 ranks of comm 3 (size 4) are in this call; 4 of 8 ranks of WORLD are not observed here (ranks 4-7)",
			waiting: []int{0, 1, 2, 3},
		},
		{
			name: "SELF is private to each rank",
			ranks: []Rank{
				{Rank: 0, In: coll("MPI_Barrier", self, 0, 6)},
				{Rank: 1, In: coll("MPI_Barrier", self, 0, 6)},
			},
			verdict: "rank 0 waits in MPI_Barrier on SELF (size 1) for 6.0 s; rank 1 waits in MPI_Barrier on SELF (size 1) for 6.0 s",
			waiting: []int{0},
		},
		{
			name: "point-to-point calls on a communicator are not collectives",
			ranks: job(8, func(i int) Rank {
				if i == 0 {
					return Rank{}
				}
				return Rank{In: p2p("MPI_Recv", 0, 9)}
			}),
			verdict: "ranks 1-7 are in MPI_Recv from rank 0 for 9.0 s; rank 0 is computing",
		},
		{
			name: "WORLD reported with different sizes is one communicator",
			ranks: []Rank{
				{Rank: 0, In: coll("MPI_Barrier", world(3), 3, 6), Counts: counts(agg.Comm{Name: "WORLD"}, "MPI_Barrier", 3)},
				{Rank: 1, In: coll("MPI_Barrier", world(3), 3, 6), Counts: counts(agg.Comm{Name: "WORLD"}, "MPI_Barrier", 3)},
				{Rank: 2, Counts: counts(agg.Comm{ID: 0x44000000, Name: "WORLD", Local: true}, "MPI_Barrier", 2)},
			},
			verdict: "ranks 0-1 wait in MPI_Barrier #3 on WORLD (size 3) for 6.0 s; rank 2 has made 2 calls and is computing",
			waiting: []int{0, 1},
			odd:     []int{2},
		},
		{
			name: "an unknown call numbered by the collector is a collective",
			ranks: job(2, func(i int) Rank {
				return Rank{In: coll("MPIX_Allreduce_enqueue", world(2), 3, 9)}
			}),
			verdict: "ranks 0-1 wait in MPIX_Allreduce_enqueue #3 on WORLD (size 2) for 9.0 s; all 2 ranks of WORLD are in this call",
			waiting: []int{0, 1},
		},
	})
}

// Rule 2 with ranks that have ended.
func TestDiagnoseEnded(t *testing.T) {
	runVerdictCases(t, []verdictCase{
		{
			name: "a member was killed",
			ranks: job(8, func(i int) Rank {
				if i == 7 {
					// In is stale: an ended rank is in no call.
					return Rank{Ended: "killed by SIGKILL", In: coll("MPI_Allreduce", world8, 42, 20), Counts: counts(world8, "MPI_Allreduce", 41)}
				}
				return Rank{In: coll("MPI_Allreduce", world8, 42, 12.3), Counts: counts(world8, "MPI_Allreduce", 42)}
			}),
			verdict: "ranks 0-6 wait in MPI_Allreduce #42 on WORLD (size 8) for 12.3 s; rank 7 has made 41 calls and ended (killed by SIGKILL)",
			waiting: []int{0, 1, 2, 3, 4, 5, 6},
			odd:     []int{7},
		},
		{
			name: "ranks that ended normally, without history",
			ranks: job(4, func(i int) Rank {
				if i >= 2 {
					return Rank{Ended: "exit 0"}
				}
				return Rank{In: coll("MPI_Finalize", world(4), 0, 60)}
			}),
			verdict: "ranks 0-1 finished (in MPI_Finalize); ranks 2-3 ended (exit 0)",
			waiting: nil,
			odd:     nil,
		},
		{
			name: "all ranks ended",
			ranks: job(4, func(i int) Rank {
				if i == 3 {
					return Rank{Ended: "killed by SIGKILL"}
				}
				return Rank{Ended: "exit 0"}
			}),
			verdict: "all 4 observed ranks have ended: ranks 0-2 (exit 0), rank 3 (killed by SIGKILL)",
		},
		{
			name: "all ended, with diverging final counts",
			ranks: job(4, func(i int) Rank {
				n := 10
				if i == 3 {
					return Rank{Ended: "killed by SIGKILL", Counts: counts(world(4), "MPI_Barrier", 7)}
				}
				return Rank{Ended: "exit 0", Counts: counts(world(4), "MPI_Barrier", n)}
			}),
			verdict: "all 4 observed ranks have ended: ranks 0-2 (exit 0), rank 3 (killed by SIGKILL); counts diverge: rank 3 made 7 MPI_Barrier on WORLD, the others 10",
		},
		{
			name:    "no ranks",
			verdict: "no rank is observed",
		},
	})
}

// Rule 3: communicators known only by their rank-local handle.
func TestDiagnoseLocalHandles(t *testing.T) {
	runVerdictCases(t, []verdictCase{
		{
			name: "not comparable",
			ranks: job(8, func(i int) Rank {
				if i == 7 {
					return Rank{In: &Call{Name: "MPI_Recv", Peer: 3, Since: sec(20)}}
				}
				h := agg.Comm{ID: 0x7f1200 + uint64(i)*0x100, Size: 8, Local: true}
				return Rank{In: coll("MPI_Allreduce", h, 42, 12.3+float64(i))}
			}),
			verdict: "ranks 0-6 are in MPI_Allreduce (communicator not comparable: its layout is not known for this build; the ranks' notes say why) for 12.3 s; rank 7 is in MPI_Recv from rank 3",
		},
		{
			name: "equal local handles are still not compared",
			ranks: job(3, func(i int) Rank {
				h := agg.Comm{ID: 0x7f12, Size: 4, Local: true}
				if i == 2 {
					return Rank{In: coll("MPI_Bcast", h, 1, 1)}
				}
				return Rank{In: coll("MPI_Bcast", h, 1, 12)}
			}),
			verdict: "ranks 0-1 are in MPI_Bcast (communicator not comparable: its layout is not known for this build; the ranks' notes say why) for 12.0 s; rank 2 is in MPI_Bcast #1 on comm 0x7f12 (size 4, local handle)",
		},
		{
			name: "named WORLD stays comparable with a local handle",
			ranks: job(2, func(i int) Rank {
				return Rank{In: coll("MPI_Barrier", agg.Comm{ID: uint64(0x1000 + i), Size: 2, Name: "WORLD", Local: true}, 0, 12)}
			}),
			verdict: "ranks 0-1 wait in MPI_Barrier on WORLD (size 2) for 12.0 s; all 2 ranks of WORLD are in this call",
			waiting: []int{0, 1},
		},
		{
			name: "local set and WORLD size",
			ranks: job(2, func(i int) Rank {
				h := agg.Comm{ID: 0x10, Size: 2, Local: true}
				return Rank{In: coll("MPI_Allreduce", h, 0, 12), Counts: counts(world(4), "MPI_Init", 1)}
			}),
			verdict: "ranks 0-1 are in MPI_Allreduce (communicator not comparable: its layout is not known for this build; the ranks' notes say why) for 12.0 s; 2 of 4 ranks of WORLD are not observed here (ranks 2-3)",
		},
	})
}

// Rule 4 and the minWait boundary.
func TestDiagnoseProgress(t *testing.T) {
	computing := job(4, func(i int) Rank {
		if i%2 == 0 {
			return Rank{In: coll("MPI_Allreduce", world(4), 3, 4.9), Counts: counts(world(4), "MPI_Allreduce", 3)}
		}
		return Rank{Counts: counts(world(4), "MPI_Allreduce", 2)}
	})
	at := func(since time.Duration) []Rank {
		return job(2, func(i int) Rank {
			c := coll("MPI_Barrier", world(2), 1, 0)
			c.Since = since
			return Rank{In: c}
		})
	}
	runVerdictCases(t, []verdictCase{
		{
			name:    "nobody waits long enough",
			ranks:   computing,
			verdict: "no rank has been inside an MPI call for 5.0 s or more: the job is making progress",
		},
		{
			name:    "exactly minWait is waiting",
			ranks:   at(5 * time.Second),
			verdict: "ranks 0-1 wait in MPI_Barrier #1 on WORLD (size 2) for 5.0 s; all 2 ranks of WORLD are in this call",
			waiting: []int{0, 1},
		},
		{
			name:    "just under minWait is progress",
			ranks:   at(5*time.Second - time.Nanosecond),
			verdict: "no rank has been inside an MPI call for 5.0 s or more: the job is making progress",
		},
		{
			name:    "other threshold",
			ranks:   at(time.Second),
			minWait: 2500 * time.Millisecond,
			verdict: "no rank has been inside an MPI call for 2.5 s or more: the job is making progress",
		},
		{
			name: "progress with an ended rank and unobserved ranks",
			ranks: []Rank{
				{Rank: 0, In: coll("MPI_Barrier", world8, 1, 0.5)},
				{Rank: 1, Ended: "killed by SIGSEGV"},
			},
			verdict: "no rank has been inside an MPI call for 5.0 s or more: the job is making progress; rank 1 ended (killed by SIGSEGV); 6 of 8 ranks of WORLD are not observed here (ranks 2-7)",
		},
	})
	// Counts diverge (a lag of one), but the verdict does not say so while
	// the job runs; the report still lists them.
	rep := Diagnose(computing, 5*time.Second)
	want := []Divergence{
		{Rank: 1, Comm: world(4), Call: "MPI_Allreduce", Count: 2, Others: 3},
		{Rank: 3, Comm: world(4), Call: "MPI_Allreduce", Count: 2, Others: 3},
	}
	if !slices.Equal(rep.Divergent, want) {
		t.Errorf("Divergent = %+v, want %+v", rep.Divergent, want)
	}
}

// Rule 5: point-to-point only, and cycles.
func TestDiagnosePointToPoint(t *testing.T) {
	recv := func(peer int, since float64) *Call { return &Call{Name: "MPI_Recv", Peer: peer, Since: sec(since)} }
	runVerdictCases(t, []verdictCase{
		{
			name:    "brief example",
			ranks:   []Rank{{Rank: 0}, {Rank: 1, In: recv(0, 9)}},
			verdict: "rank 1 is in MPI_Recv from rank 0 for 9.0 s; rank 0 is computing",
		},
		{
			name:    "two ranks wait on each other",
			ranks:   []Rank{{Rank: 0, In: recv(1, 9)}, {Rank: 1, In: &Call{Name: "MPI_Send", Peer: 0, Since: sec(9.5)}}},
			verdict: "ranks 0 and 1 wait on each other; rank 0 is in MPI_Recv from rank 1 for 9.0 s; rank 1 is in MPI_Send to rank 0 for 9.5 s",
		},
		{
			name: "a cycle of three and a rank waiting on itself",
			ranks: []Rank{
				{Rank: 0, In: recv(2, 9)}, {Rank: 1, In: recv(0, 9)}, {Rank: 2, In: recv(1, 9)},
				{Rank: 3, In: recv(3, 9)},
			},
			verdict: "ranks 0 -> 2 -> 1 -> 0 wait in a cycle; rank 3 waits on itself; rank 0 is in MPI_Recv from rank 2 for 9.0 s; rank 1 is in MPI_Recv from rank 0 for 9.0 s; rank 2 is in MPI_Recv from rank 1 for 9.0 s; 1 more rank is blocked in other calls",
		},
		{
			name: "waiting on a rank that waits on a cycle is not a cycle",
			ranks: []Rank{
				{Rank: 0, In: recv(1, 9)}, {Rank: 1, In: recv(2, 9)}, {Rank: 2, In: recv(1, 9)},
			},
			verdict: "ranks 1 and 2 wait on each other; ranks 0,2 are in MPI_Recv from rank 1 for 9.0 s; rank 1 is in MPI_Recv from rank 2 for 9.0 s; deadlock: ranks 0-2 cannot move (waits inferred)",
		},
		{
			name: "peers: not observed, busy, ended; any source",
			ranks: []Rank{
				{Rank: 0, In: recv(9, 9)},
				{Rank: 1, In: recv(2, 9)},
				{Rank: 2, In: coll("MPI_Bcast", world8, 4, 0.2)},
				{Rank: 3, In: recv(4, 9)},
				{Rank: 4, Ended: "exit 1"},
				{Rank: 5, In: recv(-2, 7)},
			},
			verdict: "rank 0 is in MPI_Recv from rank 9 for 9.0 s; rank 1 is in MPI_Recv from rank 2 for 9.0 s; rank 3 is in MPI_Recv from rank 4 for 9.0 s; 1 more rank is blocked in other calls; rank 2 is in MPI_Bcast #4 on WORLD (size 8); rank 4 ended (exit 1); rank 9 is not observed here; 2 of 8 ranks of WORLD are not observed here (ranks 6-7)",
		},
		{
			name: "identical blocked ranks are grouped, with the shortest time",
			ranks: job(4, func(i int) Rank {
				if i == 0 {
					return Rank{}
				}
				return Rank{In: recv(0, 10-float64(i))}
			}),
			verdict: "ranks 1-3 are in MPI_Recv from rank 0 for 7.0 s; rank 0 is computing",
		},
		{
			name: "a collective without a communicator cannot be grouped",
			ranks: job(2, func(i int) Rank {
				return Rank{In: &Call{Name: "MPI_Barrier", Peer: -1, Since: sec(9)}}
			}),
			verdict: "ranks 0-1 are in MPI_Barrier (communicator unknown) for 9.0 s",
		},
		{
			name: "cycles are named after a collective verdict too",
			ranks: job(4, func(i int) Rank {
				c := agg.Comm{ID: 5, Size: 2}
				if i >= 2 {
					return Rank{In: recv(5-i, 30)}
				}
				return Rank{In: coll("MPI_Bcast", c, 0, 30), Counts: counts(c, "MPI_Bcast", 1)}
			}),
			verdict: "ranks 0-1 wait in MPI_Bcast #1 on comm 5 (size 2) for 30.0 s; all 2 ranks of comm 5 (size 2) are in this call; ranks 2 and 3 wait on each other; rank 2 is in MPI_Recv from rank 3 for 30.0 s; rank 3 is in MPI_Recv from rank 2 for 30.0 s",
			waiting: []int{0, 1},
		},
	})
}

// Split communicators: the halves share the context id.
func TestDiagnoseSplit(t *testing.T) {
	small, large := agg.Comm{ID: 5, Size: 3}, agg.Comm{ID: 5, Size: 5}
	half := agg.Comm{ID: 5, Size: 4}
	runVerdictCases(t, []verdictCase{
		{
			name: "different sizes tell the halves apart",
			ranks: job(8, func(i int) Rank {
				switch {
				case i < 3:
					return Rank{In: coll("MPI_Allreduce", small, 7, 10), Counts: counts(small, "MPI_Allreduce", 7)}
				case i == 7:
					return Rank{Counts: counts(large, "MPI_Allreduce", 6)}
				}
				return Rank{In: coll("MPI_Allreduce", large, 7, 10), Counts: counts(large, "MPI_Allreduce", 7)}
			}),
			verdict: "ranks 3-6 wait in MPI_Allreduce #7 on comm 5 (size 5) for 10.0 s; rank 7 has made 6 calls and is computing; ranks 0-2 wait in MPI_Allreduce #7 on comm 5 (size 3) for 10.0 s; all 3 ranks of comm 5 (size 3) are in this call",
			waiting: []int{3, 4, 5, 6},
			odd:     []int{7},
		},
		{
			// Even and odd ranks form two halves of size 4 with the
			// same id. Their histories differ (only the even half
			// made a Bcast), so they are not merged into one group
			// of 8, and the verdict does not claim a common call.
			name: "same size, histories show two halves",
			ranks: job(8, func(i int) Rank {
				if i%2 == 0 {
					return Rank{In: coll("MPI_Allreduce", half, 7, 10), Counts: counts(half, "MPI_Allreduce", 7, half, "MPI_Bcast", 1)}
				}
				return Rank{In: coll("MPI_Allreduce", half, 7, 11), Counts: counts(half, "MPI_Allreduce", 7)}
			}),
			verdict: "ranks 0,2,4,6 are in MPI_Allreduce #7 on comm 5 (size 4) for 10.0 s (8 ranks use comm 5 (size 4): several communicators share its id, so which ranks wait together is not known); ranks 1,3,5,7 are in MPI_Allreduce #7 on comm 5 (size 4) for 11.0 s (8 ranks use comm 5 (size 4): several communicators share its id, so which ranks wait together is not known)",
		},
		{
			name: "same size, identical histories",
			ranks: job(8, func(i int) Rank {
				return Rank{In: coll("MPI_Allreduce", half, 7, 10), Counts: counts(half, "MPI_Allreduce", 7)}
			}),
			verdict: "ranks 0-7 are in MPI_Allreduce #7 on comm 5 (size 4) for 10.0 s (8 ranks use comm 5 (size 4): several communicators share its id, so which ranks wait together is not known)",
		},
		{
			name: "same size, one half hung, the other computing",
			ranks: job(8, func(i int) Rank {
				if i < 4 {
					return Rank{In: coll("MPI_Barrier", half, 3, 10), Counts: counts(half, "MPI_Barrier", 3)}
				}
				return Rank{Counts: counts(half, "MPI_Barrier", 2)}
			}),
			verdict: "ranks 0-3 are in MPI_Barrier #3 on comm 5 (size 4) for 10.0 s (8 ranks use comm 5 (size 4): several communicators share its id, so which ranks wait together is not known); ranks 4-7 are computing",
		},
	})
	// No divergence is computed on a shared id: the halves' different
	// counts are not a sign of trouble.
	rep := Diagnose(job(8, func(i int) Rank {
		if i < 4 {
			return Rank{Counts: counts(half, "MPI_Barrier", 3)}
		}
		return Rank{Counts: counts(half, "MPI_Barrier", 2)}
	}), time.Second)
	if len(rep.Divergent) != 0 {
		t.Errorf("Divergent = %+v on a shared id", rep.Divergent)
	}
}

// Rule 6.
func TestDiagnoseDivergence(t *testing.T) {
	w := world(8)
	extra := hungAllreduce(8)
	extra[2].Counts[w]["MPI_Bcast"] = 1
	extra[5].Counts[w]["MPI_Bcast"] = 1
	many := hungAllreduce(8)
	for i, name := range []string{"MPI_Gather", "MPI_Scatter", "MPI_Scan", "MPI_Exscan", "MPI_Alltoall"} {
		many[i].Counts[w][name] = 1
	}
	runVerdictCases(t, []verdictCase{
		{
			name:    "other collectives diverge",
			ranks:   extra,
			verdict: "ranks 0-6 wait in MPI_Allreduce #42 on WORLD (size 8) for 12.3 s; rank 7 has made 41 calls and is in MPI_Recv from rank 3; counts diverge: ranks 2,5 made 1 MPI_Bcast on WORLD, the others 2; deadlock: ranks 0-7 cannot move (1 of 8 waits inferred)",
			waiting: []int{0, 1, 2, 3, 4, 5, 6},
			odd:     []int{7},
		},
		{
			name:    "only the first three",
			ranks:   many,
			verdict: "ranks 0-6 wait in MPI_Allreduce #42 on WORLD (size 8) for 12.3 s; rank 7 has made 41 calls and is in MPI_Recv from rank 3; counts diverge: rank 4 made 1 MPI_Alltoall on WORLD, the others 0; rank 3 made 1 MPI_Exscan on WORLD, the others 0; rank 0 made 1 MPI_Gather on WORLD, the others 0; and 2 more; deadlock: ranks 0-7 cannot move (1 of 8 waits inferred)",
			waiting: []int{0, 1, 2, 3, 4, 5, 6},
			odd:     []int{7},
		},
	})

	rep := Diagnose(hungAllreduce(8), 5*time.Second)
	want := []Divergence{{Rank: 7, Comm: w, Call: "MPI_Allreduce", Count: 41, Others: 42}}
	if !slices.Equal(rep.Divergent, want) {
		t.Errorf("Divergent = %+v, want %+v", rep.Divergent, want)
	}

	// Two members, a tie: the larger count is the others'.
	c := agg.Comm{ID: 9, Size: 2}
	rep = Diagnose([]Rank{
		{Rank: 0, Counts: counts(c, "MPI_Bcast", 41)},
		{Rank: 1, Counts: counts(c, "MPI_Bcast", 42)},
	}, time.Second)
	want = []Divergence{{Rank: 0, Comm: c, Call: "MPI_Bcast", Count: 41, Others: 42}}
	if !slices.Equal(rep.Divergent, want) {
		t.Errorf("tie: Divergent = %+v, want %+v", rep.Divergent, want)
	}

	// A member whose history lacks the collective made 0 of them; a rank
	// without history is never flagged; one known count is not enough.
	rep = Diagnose([]Rank{
		{Rank: 0, Counts: counts(w, "MPI_Barrier", 3)},
		{Rank: 1, Counts: counts(w, "MPI_Barrier", 3)},
		{Rank: 2, Counts: map[agg.Comm]map[string]uint64{}},
		{Rank: 3},
		{Rank: 4, Counts: counts(c, "MPI_Bcast", 1)},
	}, time.Second)
	want = []Divergence{
		{Rank: 2, Comm: w, Call: "MPI_Barrier", Count: 0, Others: 3},
		{Rank: 4, Comm: w, Call: "MPI_Barrier", Count: 0, Others: 3},
	}
	if !slices.Equal(rep.Divergent, want) {
		t.Errorf("zero counts: Divergent = %+v, want %+v", rep.Divergent, want)
	}
}

// Probes attached after the hang: no history at all.
func TestDiagnoseNoHistory(t *testing.T) {
	noHist := hungAllreduce(8)
	for i := range noHist {
		noHist[i].Counts = nil
		if i < 7 {
			noHist[i].In.Seq = 0
		}
	}
	partly := hungAllreduce(8)
	partly[7].Counts = nil
	runVerdictCases(t, []verdictCase{
		{
			name:    "no history anywhere",
			ranks:   noHist,
			verdict: "ranks 0-6 wait in MPI_Allreduce on WORLD (size 8) for 12.3 s; rank 7 is in MPI_Recv from rank 3; deadlock: ranks 0-7 cannot move (1 of 8 waits inferred)",
			waiting: []int{0, 1, 2, 3, 4, 5, 6},
			odd:     []int{7},
		},
		{
			name:    "the odd rank has no history",
			ranks:   partly,
			verdict: "ranks 0-6 wait in MPI_Allreduce #42 on WORLD (size 8) for 12.3 s; rank 7 is in MPI_Recv from rank 3; deadlock: ranks 0-7 cannot move (1 of 8 waits inferred)",
			waiting: []int{0, 1, 2, 3, 4, 5, 6},
			odd:     []int{7},
		},
	})
	for _, ranks := range [][]Rank{noHist, partly} {
		if rep := Diagnose(ranks, 5*time.Second); len(rep.Divergent) != 0 {
			t.Errorf("Divergent = %+v without history", rep.Divergent)
		}
	}
}

// 512 ranks: the verdict stays one short line.
func TestDiagnose512(t *testing.T) {
	const n = 512
	w := world(n)
	oneLate := job(n, func(i int) Rank {
		if i == 300 {
			return Rank{Counts: counts(w, "MPI_Allreduce", 41)}
		}
		return Rank{In: coll("MPI_Allreduce", w, 42, 12.3), Counts: counts(w, "MPI_Allreduce", 42)}
	})
	halves := job(n, func(i int) Rank {
		if i%2 == 1 {
			return Rank{In: &Call{Name: "MPI_Recv", Peer: i - 1, Since: sec(30)}, Counts: counts(w, "MPI_Allreduce", 41)}
		}
		return Rank{In: coll("MPI_Allreduce", w, 42, 12.3), Counts: counts(w, "MPI_Allreduce", 42)}
	})
	ring := job(n, func(i int) Rank {
		return Rank{In: &Call{Name: "MPI_Send", Peer: (i + 1) % n, Since: sec(30)}}
	})
	lagging := job(n, func(i int) Rank {
		r := Rank{In: coll("MPI_Barrier", w, 0, 12), Counts: counts(w, "MPI_Barrier", 9)}
		for j, name := range []string{"MPI_Bcast", "MPI_Gather", "MPI_Scatter", "MPI_Scan", "MPI_Reduce"} {
			r.Counts[w][name] = 5
			if i%(j+2) == 0 {
				r.Counts[w][name] = 4
			}
		}
		return r
	})
	runVerdictCases(t, []verdictCase{
		{
			name:    "one rank late",
			ranks:   oneLate,
			verdict: "ranks 0-299,301-511 wait in MPI_Allreduce #42 on WORLD (size 512) for 12.3 s; rank 300 has made 41 calls and is computing",
			waiting: slices.DeleteFunc(seq(n), func(i int) bool { return i == 300 }),
			odd:     []int{300},
		},
		{
			name:  "every other rank elsewhere",
			ranks: halves,
			// The divergence clause gives the counts of the ranks
			// the odd descriptions had no room for.
			verdict: "ranks 0,2,4,6,8,10,12,...,510 (256 in all) wait in MPI_Allreduce #42 on WORLD (size 512) for 12.3 s; rank 1 has made 41 calls and is in MPI_Recv from rank 0; rank 3 has made 41 calls and is in MPI_Recv from rank 2; rank 5 has made 41 calls and is in MPI_Recv from rank 4; 253 more ranks of WORLD are in other states; counts diverge: ranks 7,9,11,13,15,17,...,511 (253 in all) made 41 MPI_Allreduce on WORLD, the others 42; deadlock: ranks 0-511 cannot move (256 of 512 waits inferred)",
			waiting: slices.DeleteFunc(seq(n), func(i int) bool { return i%2 == 1 }),
			odd:     slices.DeleteFunc(seq(n), func(i int) bool { return i%2 == 0 }),
		},
		{
			name:    "a ring of blocking sends",
			ranks:   ring,
			verdict: "ranks 0-511 wait in a cycle of 512; rank 0 is in MPI_Send to rank 1 for 30.0 s; rank 1 is in MPI_Send to rank 2 for 30.0 s; rank 2 is in MPI_Send to rank 3 for 30.0 s; 509 more ranks are blocked in other calls",
		},
		{
			name:    "many divergences",
			ranks:   lagging,
			verdict: "ranks 0-511 wait in MPI_Barrier #9 on WORLD (size 512) for 12.0 s; all 512 ranks of WORLD are in this call; counts diverge: ranks 0,2,4,6,8,10,12,...,510 (256 in all) made 4 MPI_Bcast on WORLD, the others 5; ranks 0,3,6,9,12,15,18,...,510 (171 in all) made 4 MPI_Gather on WORLD, the others 5; ranks 0,6,12,18,24,30,...,510 (86 in all) made 4 MPI_Reduce on WORLD, the others 5; and 2 more",
			waiting: seq(n),
		},
	})
	for _, ranks := range [][]Rank{oneLate, halves, ring, lagging} {
		if v := Diagnose(ranks, 5*time.Second).Verdict; len(v) > 500 || strings.ContainsAny(v, "\r\n") {
			t.Errorf("verdict of %d bytes is not one short line: %q", len(v), v)
		}
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// Odd input: duplicates and negative ranks, strings with line breaks.
func TestDiagnoseOddInput(t *testing.T) {
	runVerdictCases(t, []verdictCase{
		{
			name: "first entry of a rank wins; negative ranks ignored",
			ranks: []Rank{
				{Rank: 1, In: &Call{Name: "MPI_Recv", Peer: 0, Since: sec(9)}},
				{Rank: -1, In: coll("MPI_Barrier", world(2), 0, 99)},
				{Rank: 0},
				{Rank: 1},
			},
			verdict: "rank 1 is in MPI_Recv from rank 0 for 9.0 s; rank 0 is computing",
		},
		{
			name: "line breaks in caller strings",
			ranks: []Rank{
				{Rank: 0, In: &Call{Name: "MPI_Recv", Peer: 1, Since: sec(9), Site: "a\nb"}},
				{Rank: 1, Ended: "killed\r\nby SIGKILL"},
			},
			verdict: "rank 0 is in MPI_Recv from rank 1 at a b for 9.0 s; rank 1 ended (killed  by SIGKILL)",
		},
	})
}

// A lower bound on the time inside (no history: the call was already in
// progress when status began watching) is said as such.
func TestDiagnoseAtLeast(t *testing.T) {
	lower := func(c *Call) *Call { c.AtLeast = true; return c }
	w3 := world(3)
	runVerdictCases(t, []verdictCase{
		{
			name: "collective group",
			ranks: []Rank{
				{Rank: 0, In: lower(coll("MPI_Barrier", w3, 0, 6))},
				{Rank: 1, In: coll("MPI_Barrier", w3, 0, 9)},
				{Rank: 2},
			},
			verdict: "ranks 0-1 wait in MPI_Barrier on WORLD (size 3) for at least 6.0 s; rank 2 is computing",
			waiting: []int{0, 1},
			odd:     []int{2},
		},
		{
			name: "local handles",
			ranks: []Rank{
				{Rank: 0, In: lower(coll("MPI_Barrier", agg.Comm{ID: 0x7f00, Size: 2, Local: true}, 0, 6))},
				{Rank: 1, In: lower(coll("MPI_Barrier", agg.Comm{ID: 0x7f08, Size: 2, Local: true}, 0, 6))},
			},
			verdict: "ranks 0-1 are in MPI_Barrier (communicator not comparable: its layout is not known for this build; the ranks' notes say why) for at least 6.0 s",
		},
		{
			name: "point to point",
			ranks: []Rank{
				{Rank: 0, In: lower(p2pOn("MPI_Recv", world(2), 1, 7))},
				{Rank: 1},
			},
			verdict: "rank 0 is in MPI_Recv from rank 1 for at least 7.0 s; rank 1 is computing",
		},
	})
}
