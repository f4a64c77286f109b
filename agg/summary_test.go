package agg

import (
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/identity"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func proc(pid int, job, rank string) Proc {
	return Proc{PID: pid, Comm: "app", Identity: identity.Identity{Host: "n1", Job: job, Rank: rank, Size: "4"}}
}

func catalog(event, _ string, _ uint64) (EventInfo, bool) {
	switch event {
	case "ob1.pending":
		return EventInfo{Message: "send queued as pending", Advice: "raise the free list"}, true
	case "ob1.rndv":
		return EventInfo{Message: "rendezvous fallback", Advice: ""}, true
	}
	return EventInfo{}, false
}

// shape is a Summary reduced to what ordering tests look at.
type shape map[string][]string // job id -> "rank/pid" in order

func shapeOf(s Summary) (order []string, sh shape) {
	sh = shape{}
	for _, j := range s.Jobs {
		order = append(order, j.ID)
		for _, r := range j.Ranks {
			sh[j.ID] = append(sh[j.ID], r.Rank+"/"+strconv.Itoa(r.PID))
		}
	}
	return order, sh
}

func TestBuildGrouping(t *testing.T) {
	tests := []struct {
		name      string
		procs     []Proc
		samples   []Sample
		wantJobs  []string
		wantShape shape
	}{
		{
			name:      "jobs by id, unknown last, ranks numeric then pid",
			procs:     []Proc{proc(30, "200", "10"), proc(31, "200", "2"), proc(10, "?", "0"), proc(11, "100", "1"), proc(12, "100", "0"), proc(13, "100", "?"), proc(5, "100", "1")},
			wantJobs:  []string{"100", "200", "?"},
			wantShape: shape{"100": {"0/12", "1/5", "1/11", "?/13"}, "200": {"2/31", "10/30"}, "?": {"0/10"}},
		},
		{
			name:      "numeric job ids before others, empty identity is unknown",
			procs:     []Proc{proc(1, "job-b", "0"), proc(2, "9", "0"), proc(3, "10", "0"), proc(4, "", ""), proc(5, "job-a", "0")},
			wantJobs:  []string{"9", "10", "job-a", "job-b", "?"},
			wantShape: shape{"9": {"0/2"}, "10": {"0/3"}, "job-a": {"0/5"}, "job-b": {"0/1"}, "?": {"?/4"}},
		},
		{
			name:      "orphan samples join the unknown job",
			procs:     []Proc{proc(1, "7", "0"), proc(2, "?", "3")},
			samples:   []Sample{{PID: 99, Event: "x", Count: 1}, {PID: 50, Event: "x", Count: 1}, {PID: 1, Event: "x", Count: 1}},
			wantJobs:  []string{"7", "?"},
			wantShape: shape{"7": {"0/1"}, "?": {"3/2", "?/50", "?/99"}},
		},
		{
			name:      "duplicate pid keeps the first proc",
			procs:     []Proc{proc(1, "7", "0"), proc(1, "8", "5")},
			wantJobs:  []string{"7"},
			wantShape: shape{"7": {"0/1"}},
		},
		{
			name: "nothing traced",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Build("n1", at(0), at(60), tc.procs, tc.samples, catalog, nil)
			jobs, sh := shapeOf(s)
			if !reflect.DeepEqual(jobs, tc.wantJobs) {
				t.Errorf("jobs = %q, want %q", jobs, tc.wantJobs)
			}
			if len(sh) == 0 && len(tc.wantShape) == 0 {
				return
			}
			if !reflect.DeepEqual(sh, tc.wantShape) {
				t.Errorf("ranks = %q, want %q", sh, tc.wantShape)
			}
		})
	}
}

func TestBuildRanks(t *testing.T) {
	killed := End{Kind: Signaled, Signal: 9, At: at(30)}
	tests := []struct {
		name    string
		procs   []Proc
		samples []Sample
		pid     int
		want    Rank
	}{
		{
			name:  "proc without samples has zero events",
			procs: []Proc{proc(1, "7", "0")},
			pid:   1,
			want:  Rank{Rank: "0", PID: 1, Comm: "app", Host: "n1", Events: []EventTotal{}},
		},
		{
			name:  "repeated samples merge: max count, earliest first, latest last",
			procs: []Proc{proc(1, "7", "0")},
			samples: []Sample{
				{PID: 1, Event: "ob1.pending", Count: 5, First: at(3), Last: at(10)},
				{PID: 1, Event: "ob1.pending", Count: 9, First: at(3), Last: at(20)},
				{PID: 1, Event: "ob1.pending", Count: 7, First: at(2), Last: at(15)},
				{PID: 1, Event: "ob1.pending", Count: 1},
			},
			pid: 1,
			want: Rank{Rank: "0", PID: 1, Comm: "app", Host: "n1", Events: []EventTotal{
				{Event: "ob1.pending", Count: 9, First: at(2), Last: at(20), Message: "send queued as pending", Advice: "raise the free list"},
			}},
		},
		{
			name:  "killed rank keeps its counts and end",
			procs: []Proc{{PID: 4, Comm: "app", Identity: identity.Identity{Host: "n2", Job: "7", Rank: "3"}, End: killed}},
			samples: []Sample{
				{PID: 4, Event: "ob1.rndv", Count: 2, First: at(1), Last: at(2)},
				{PID: 4, Event: "ob1.pending", Count: 2, First: at(1), Last: at(2)},
				{PID: 4, Event: "zz.unknown", Count: 3, First: at(1), Last: at(2)},
			},
			pid: 4,
			want: Rank{Rank: "3", PID: 4, Comm: "app", Host: "n2", End: killed, Events: []EventTotal{
				{Event: "zz.unknown", Count: 3, First: at(1), Last: at(2), Message: "zz.unknown"},
				{Event: "ob1.pending", Count: 2, First: at(1), Last: at(2), Message: "send queued as pending", Advice: "raise the free list"},
				{Event: "ob1.rndv", Count: 2, First: at(1), Last: at(2), Message: "rendezvous fallback"},
			}},
		},
		{
			name:    "orphan sample keeps its pid and counts",
			samples: []Sample{{PID: 77, Event: "ob1.rndv", Count: 4, First: at(5), Last: at(6)}},
			pid:     77,
			want: Rank{Rank: "?", PID: 77, Comm: "?", Host: "n1", End: End{Kind: Vanished}, Events: []EventTotal{
				{Event: "ob1.rndv", Count: 4, First: at(5), Last: at(6), Message: "rendezvous fallback"},
			}},
		},
		{
			name:  "unknown identity host falls back to the tracer's host",
			procs: []Proc{{PID: 8, Identity: identity.Identity{Host: "?", Job: "7", Rank: "1"}}},
			pid:   8,
			want:  Rank{Rank: "1", PID: 8, Comm: "?", Host: "n1", Events: []EventTotal{}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Build("n1", at(0), at(60), tc.procs, tc.samples, catalog, nil)
			var got *Rank
			for _, j := range s.Jobs {
				for i := range j.Ranks {
					if j.Ranks[i].PID == tc.pid {
						got = &j.Ranks[i]
					}
				}
			}
			if got == nil {
				t.Fatalf("pid %d missing from %+v", tc.pid, s)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("rank =\n%+v\nwant\n%+v", *got, tc.want)
			}
		})
	}
}

func TestBuildNilInfoAndDrops(t *testing.T) {
	drops := []Drop{{What: "a", Count: 0}, {What: "b", Count: 3, Raise: "--max-procs"}}
	s := Build("n1", at(0), at(1), nil, []Sample{{PID: 1, Event: "e", Count: 1}}, nil, drops)
	if got := s.Jobs[0].Ranks[0].Events[0]; got.Message != "e" || got.Advice != "" {
		t.Errorf("event with nil info = %+v, want message = id", got)
	}
	if want := []Drop{{What: "b", Count: 3, Raise: "--max-procs"}}; !reflect.DeepEqual(s.Dropped, want) {
		t.Errorf("Dropped = %+v, want %+v", s.Dropped, want)
	}
	if s.Host != "n1" || !s.Start.Equal(at(0)) || !s.End.Equal(at(1)) {
		t.Errorf("header = %q %v %v", s.Host, s.Start, s.End)
	}
}

func TestTotals(t *testing.T) {
	procs := []Proc{proc(1, "7", "0"), proc(2, "7", "1"), proc(3, "8", "0")}
	samples := []Sample{
		{PID: 1, Event: "ob1.pending", Count: 10, First: at(5), Last: at(9)},
		{PID: 2, Event: "ob1.pending", Count: 5, First: at(2), Last: at(7)},
		{PID: 3, Event: "ob1.pending", Count: 1, First: at(6), Last: at(30)},
		{PID: 3, Event: "ob1.rndv", Count: 16},
		{PID: 99, Event: "aa", Count: 16, Last: at(1)},
	}
	got := Build("n1", at(0), at(60), procs, samples, catalog, nil).Totals()
	want := []EventTotal{
		{Event: "aa", Count: 16, Last: at(1), Message: "aa"},
		{Event: "ob1.pending", Count: 16, First: at(2), Last: at(30), Message: "send queued as pending", Advice: "raise the free list"},
		{Event: "ob1.rndv", Count: 16, Message: "rendezvous fallback"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Totals =\n%+v\nwant\n%+v", got, want)
	}
	if got := (Summary{}).Totals(); len(got) != 0 {
		t.Errorf("empty Totals = %+v", got)
	}
}

func TestCompareIDs(t *testing.T) {
	in := []string{"b", "10", "?", "2", "02", "a", "1"}
	want := []string{"1", "02", "2", "10", "?", "a", "b"}
	got := append([]string(nil), in...)
	slices.SortFunc(got, compareIDs)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order = %q, want %q", got, want)
	}
}
