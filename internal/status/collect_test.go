package status

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/collstate"
	"github.com/mpiprobe/mpiprobe/internal/status/hang"
)

func TestHangRank(t *testing.T) {
	world := agg.Comm{ID: 0, Size: 4, Name: "WORLD"}
	split := agg.Comm{ID: 3, Size: 2}
	tests := []struct {
		name string
		rank Rank
		want hang.Rank
	}{
		{
			name: "computing",
			rank: Rank{Rank: 1, PID: 101, Host: "n1"},
			want: hang.Rank{Rank: 1, PID: 101, Host: "n1"},
		},
		{
			name: "ended",
			rank: Rank{Rank: 2, PID: 102, Host: "n1", Ended: "exited during status"},
			want: hang.Rank{Rank: 2, PID: 102, Host: "n1", Ended: "exited during status"},
		},
		{
			name: "one thread",
			rank: Rank{Rank: 0, PID: 100, Host: "n1", Threads: []Thread{
				{TID: 100, Call: "MPI_Allreduce", Comm: &world, Seq: 7, Since: 3 * time.Second, Site: "main+0x10 (a.c:3)"},
			}},
			want: hang.Rank{Rank: 0, PID: 100, Host: "n1", In: &hang.Call{
				Name: "MPI_Allreduce", Comm: &world, Seq: 7, Peer: -1, Since: 3 * time.Second, Site: "main+0x10 (a.c:3)"}},
		},
		{
			name: "the longest thread stands for the rank",
			rank: Rank{Rank: 0, PID: 100, Threads: []Thread{
				{TID: 100, Call: "MPI_Barrier", Since: time.Second, AtLeast: true},
				{TID: 101, Call: "MPI_Wait", Via: "MPI_Wait", Comm: &split, Since: 5 * time.Second, AtLeast: true, Site: "worker+0x4"},
				{TID: 102, Call: "MPI_Recv", Since: 2 * time.Second},
			}},
			want: hang.Rank{Rank: 0, PID: 100, Threaded: true, In: &hang.Call{
				Name: "MPI_Wait", Comm: &split, Peer: -1, Since: 5 * time.Second, AtLeast: true, Site: "worker+0x4"}},
		},
		{
			name: "equal times: the first thread",
			rank: Rank{Rank: 0, PID: 100, Threads: []Thread{
				{TID: 100, Call: "MPI_Barrier", Since: time.Second},
				{TID: 101, Call: "MPI_Bcast", Since: time.Second},
			}},
			want: hang.Rank{Rank: 0, PID: 100, Threaded: true, In: &hang.Call{Name: "MPI_Barrier", Peer: -1, Since: time.Second}},
		},
		{
			name: "a moving thread has no time inside",
			rank: Rank{Rank: 0, PID: 100, Threads: []Thread{
				{TID: 100, Call: "MPI_Test", Moving: true, Since: 4 * time.Second, AtLeast: true},
			}},
			want: hang.Rank{Rank: 0, PID: 100, In: &hang.Call{Name: "MPI_Test", Peer: -1, AtLeast: true}},
		},
		{
			name: "moving threads only",
			rank: Rank{Rank: 0, PID: 100, Threads: []Thread{
				{TID: 100, Call: "MPI_Test", Moving: true},
				{TID: 101, Call: "MPI_Iprobe", Moving: true},
			}},
			want: hang.Rank{Rank: 0, PID: 100, Threaded: true, In: &hang.Call{Name: "MPI_Test", Peer: -1}},
		},
		{
			name: "counts merged per communicator",
			rank: Rank{Rank: 3, PID: 103, Counts: []CommCount{
				{Comm: world, Calls: map[string]uint64{"MPI_Barrier": 2, "MPI_Bcast": 1}},
				{Comm: split, Calls: map[string]uint64{"MPI_Allreduce": 9}},
				{Comm: world, Calls: map[string]uint64{"MPI_Barrier": 3, "MPI_Allreduce": 4}},
			}},
			want: hang.Rank{Rank: 3, PID: 103, Counts: map[agg.Comm]map[string]uint64{
				world: {"MPI_Barrier": 5, "MPI_Bcast": 1, "MPI_Allreduce": 4},
				split: {"MPI_Allreduce": 9},
			}},
		},
		{
			name: "empty history",
			rank: Rank{Rank: 3, PID: 103, Counts: []CommCount{}},
			want: hang.Rank{Rank: 3, PID: 103, Counts: map[agg.Comm]map[string]uint64{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := hangRank(tt.rank)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("hangRank = %s, want %s", describeRank(got), describeRank(tt.want))
			}
		})
	}
}

func describeRank(r hang.Rank) string {
	s := fmt.Sprintf("{Rank %d PID %d Host %q Ended %q Counts %v", r.Rank, r.PID, r.Host, r.Ended, r.Counts)
	if r.Counts == nil {
		s += " (nil)"
	}
	if r.In != nil {
		s += fmt.Sprintf(" In %+v", *r.In)
		if r.In.Comm != nil {
			s += fmt.Sprintf(" on %+v", *r.In.Comm)
		}
	}
	return s + "}"
}

func TestCounts(t *testing.T) {
	world := agg.Comm{ID: 0, Size: 4, Name: "WORLD"}
	es := []collstate.Entry{
		{PID: 1, Comm: world, Stats: []collstate.Stat{{Name: "MPI_Barrier", Calls: 2}, {Name: "MPI_Ibcast", Calls: 1, Pending: 1}}},
		{PID: 1, Comm: agg.Comm{ID: 9, Size: 2}},
	}
	got := counts(es)
	want := []CommCount{
		{Comm: world, Calls: map[string]uint64{"MPI_Barrier": 2, "MPI_Ibcast": 1}},
		{Comm: agg.Comm{ID: 9, Size: 2}, Calls: map[string]uint64{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("counts = %+v, want %+v", got, want)
	}
	if got := counts(nil); got != nil {
		t.Errorf("counts(nil) = %+v, want nil", got)
	}
}

func TestCompleting(t *testing.T) {
	world := agg.Comm{ID: 0, Size: 4, Name: "WORLD"}
	split := agg.Comm{ID: 3, Size: 2}
	ibcast := collstate.Stat{Name: "MPI_Ibcast", Calls: 3, Pending: 1, PendingSince: 1000}
	iallreduce := collstate.Stat{Name: "MPI_Iallreduce", Calls: 1, Pending: 1, PendingSince: 2000}
	barrier := collstate.Stat{Name: "MPI_Barrier", Calls: 5}
	done := collstate.Stat{Name: "MPI_Ireduce", Calls: 2, Completed: 2}
	one := []collstate.Entry{
		{PID: 1, Comm: world, Stats: []collstate.Stat{barrier, ibcast}},
		{PID: 1, Comm: split, Stats: []collstate.Stat{done}},
	}
	two := []collstate.Entry{
		{PID: 1, Comm: world, Stats: []collstate.Stat{ibcast}},
		{PID: 1, Comm: split, Stats: []collstate.Stat{iallreduce}},
	}
	twoOnOne := []collstate.Entry{
		{PID: 1, Comm: world, Stats: []collstate.Stat{ibcast, iallreduce}},
	}
	twice := []collstate.Entry{
		{PID: 1, Comm: world, Stats: []collstate.Stat{{Name: "MPI_Ibcast", Calls: 2, Pending: 2}}},
	}
	none := []collstate.Entry{
		{PID: 1, Comm: world, Stats: []collstate.Stat{barrier, done}},
	}
	tests := []struct {
		name      string
		hist      []collstate.Entry
		call      string
		wantComm  agg.Comm
		wantStat  collstate.Stat
		wantFound bool
	}{
		{"MPI_Wait for the only pending collective", one, "MPI_Wait", world, ibcast, true},
		{"MPI_Test", one, "MPI_Test", world, ibcast, true},
		{"MPI_Waitall", one, "MPI_Waitall", world, ibcast, true},
		{"MPI_Testall", one, "MPI_Testall", world, ibcast, true},
		{"MPI_Waitany", one, "MPI_Waitany", world, ibcast, true},
		{"MPI_Testany", one, "MPI_Testany", world, ibcast, true},
		{"MPI_Waitsome", one, "MPI_Waitsome", world, ibcast, true},
		{"MPI_Testsome", one, "MPI_Testsome", world, ibcast, true},
		{"not a completion call", one, "MPI_Barrier", agg.Comm{}, collstate.Stat{}, false},
		{"point-to-point receive", one, "MPI_Recv", agg.Comm{}, collstate.Stat{}, false},
		{"two pending on two communicators", two, "MPI_Wait", agg.Comm{}, collstate.Stat{}, false},
		{"two pending on one communicator", twoOnOne, "MPI_Waitall", agg.Comm{}, collstate.Stat{}, false},
		{"two requests of one collective count once", twice, "MPI_Wait", world, twice[0].Stats[0], true},
		{"nothing pending", none, "MPI_Wait", agg.Comm{}, collstate.Stat{}, false},
		{"no history", nil, "MPI_Wait", agg.Comm{}, collstate.Stat{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, st, ok := completing(tt.hist, Thread{TID: 1, Call: tt.call})
			if ok != tt.wantFound {
				t.Fatalf("completing(%s) found = %v, want %v", tt.call, ok, tt.wantFound)
			}
			if !ok {
				return
			}
			if e.Comm != tt.wantComm || st != tt.wantStat {
				t.Errorf("completing(%s) = %+v, %+v, want %+v, %+v", tt.call, e.Comm, st, tt.wantComm, tt.wantStat)
			}
		})
	}
}

func TestInFlight(t *testing.T) {
	world := agg.Comm{ID: 0, Size: 4, Name: "WORLD"}
	rowA := agg.Comm{ID: 3, Size: 2}
	rowB := agg.Comm{ID: 3, Size: 3} // the other half of a split: same id
	col := agg.Comm{ID: 5, Size: 2}
	inWorld := collstate.Stat{Name: "MPI_Allreduce", Calls: 4, Inside: 1, Since: 100}
	inRowA := collstate.Stat{Name: "MPI_Allreduce", Calls: 7, Inside: 1, Since: 200}
	inRowB := collstate.Stat{Name: "MPI_Allreduce", Calls: 8, Inside: 1, Since: 300}
	doneCol := collstate.Stat{Name: "MPI_Allreduce", Calls: 9}
	barrier := collstate.Stat{Name: "MPI_Barrier", Calls: 2, Inside: 1, Since: 50}

	single := []collstate.Entry{
		{PID: 1, Comm: world, Stats: []collstate.Stat{barrier}},
		{PID: 1, Comm: rowA, Stats: []collstate.Stat{inRowA}},
		{PID: 1, Comm: col, Stats: []collstate.Stat{doneCol}},
	}
	several := []collstate.Entry{
		{PID: 1, Comm: world, Stats: []collstate.Stat{inWorld}},
		{PID: 1, Comm: rowA, Stats: []collstate.Stat{inRowA}},
		{PID: 1, Comm: rowB, Stats: []collstate.Stat{inRowB}},
		{PID: 1, Comm: col, Stats: []collstate.Stat{doneCol}},
	}
	ptr := func(c agg.Comm) *agg.Comm { return &c }
	tests := []struct {
		name      string
		hist      []collstate.Entry
		th        Thread
		wantComm  agg.Comm
		wantStat  collstate.Stat
		wantFound bool
	}{
		{"the only one inside, communicator unknown", single, Thread{Call: "MPI_Allreduce"}, rowA, inRowA, true},
		{"the only one inside, communicator known", single, Thread{Call: "MPI_Allreduce", Comm: ptr(rowA)}, rowA, inRowA, true},
		{"another collective", single, Thread{Call: "MPI_Barrier"}, world, barrier, true},
		{"nothing inside under this name", single, Thread{Call: "MPI_Bcast"}, agg.Comm{}, collstate.Stat{}, false},
		{"several inside, communicator unknown", several, Thread{Call: "MPI_Allreduce"}, agg.Comm{}, collstate.Stat{}, false},
		{"several inside, the stack's communicator", several, Thread{Call: "MPI_Allreduce", Comm: ptr(world)}, world, inWorld, true},
		{"several inside, same id: the size tells", several, Thread{Call: "MPI_Allreduce", Comm: ptr(rowB)}, rowB, inRowB, true},
		{"several inside, communicator not among them", several, Thread{Call: "MPI_Allreduce", Comm: ptr(col)}, agg.Comm{}, collstate.Stat{}, false},
		{"no history", nil, Thread{Call: "MPI_Allreduce"}, agg.Comm{}, collstate.Stat{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, st, ok := inFlight(tt.hist, tt.th)
			if ok != tt.wantFound {
				t.Fatalf("inFlight(%s) found = %v (%+v, %+v), want %v", tt.th.Call, ok, e.Comm, st, tt.wantFound)
			}
			if !ok {
				return
			}
			if e.Comm != tt.wantComm || st != tt.wantStat {
				t.Errorf("inFlight(%s) = %+v, %+v, want %+v, %+v", tt.th.Call, e.Comm, st, tt.wantComm, tt.wantStat)
			}
		})
	}
}

// TestMPICHMembers reads the rank maps MPICH ch4 gives communicators:
// WORLD's halves of a split by parity (stride 2 from 0 and from 1), a
// reordered one (a lookup table), a block-strided one, and those it
// cannot map to WORLD.
