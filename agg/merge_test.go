package agg

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/identity"
)

// node builds one node's summary of job 7 with the given rank -> pid.
func node(host string, start, end time.Time, pids map[string]int, drops ...Drop) Summary {
	var procs []Proc
	var samples []Sample
	for rank, pid := range pids {
		procs = append(procs, Proc{PID: pid, Comm: "app",
			Identity: identity.Identity{Host: host, Job: "7", Rank: rank},
			Startup:  Startup{Init: time.Duration(pid) * time.Millisecond}})
		samples = append(samples, Sample{PID: uint32(pid), Event: "ob1.pending", Count: uint64(pid), First: start, Last: end})
	}
	return Build(host, start, end, procs, samples, catalog, drops)
}

func TestMerge(t *testing.T) {
	n1 := node("n1", at(10), at(100), map[string]int{"0": 100, "1": 101}, Drop{What: "counters map full", Count: 3})
	n2 := node("n2", at(5), at(90), map[string]int{"2": 200, "3": 201, "10": 202},
		Drop{What: "timestamps map full", Count: 1}, Drop{What: "counters map full", Count: 4, Raise: "--max-procs"})

	got, notes, err := Merge([]Summary{n2, n1}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 0 {
		t.Errorf("notes = %q, want none", notes)
	}
	if got.Host != "n1,n2" || !got.Start.Equal(at(5)) || !got.End.Equal(at(100)) {
		t.Errorf("host %q, interval %v to %v; want n1,n2 from %v to %v", got.Host, got.Start, got.End, at(5), at(100))
	}
	order, sh := shapeOf(got)
	if want := (shape{"7": {"0/100", "1/101", "2/200", "3/201", "10/202"}}); !reflect.DeepEqual(order, []string{"7"}) || !reflect.DeepEqual(sh, want) {
		t.Errorf("jobs %q, ranks %v; want [7] and %v", order, sh, want)
	}
	wantDrops := []Drop{{What: "timestamps map full", Count: 1}, {What: "counters map full", Count: 7, Raise: "--max-procs"}}
	if !reflect.DeepEqual(got.Dropped, wantDrops) {
		t.Errorf("dropped = %+v, want %+v", got.Dropped, wantDrops)
	}
	// Ranks keep everything of theirs.
	r := got.Jobs[0].Ranks[2]
	if r.Host != "n2" || r.Startup.Init != 200*time.Millisecond || len(r.Events) != 1 || r.Events[0].Count != 200 {
		t.Errorf("rank 2 = %+v", r)
	}
	// The inputs are not changed.
	if n1.Dropped[0].Count != 3 || n2.Dropped[1].Count != 4 {
		t.Errorf("inputs changed: %+v %+v", n1.Dropped, n2.Dropped)
	}
}

func TestMergeDuplicates(t *testing.T) {
	old := node("n1", at(0), at(50), map[string]int{"0": 100, "1": 101})
	newer := node("n1", at(0), at(60), map[string]int{"0": 100, "1": 101})
	newer.Jobs[0].Ranks[1].End = End{Kind: Exited, At: at(59)}
	other := node("n2", at(0), at(55), map[string]int{"1": 300, "2": 301})

	got, notes, err := Merge([]Summary{old, other, newer, old}, "7")
	if err != nil {
		t.Fatal(err)
	}
	_, sh := shapeOf(got)
	if want := (shape{"7": {"0/100", "1/101", "1/300", "2/301"}}); !reflect.DeepEqual(sh, want) {
		t.Errorf("ranks %v, want %v", sh, want)
	}
	if e := got.Jobs[0].Ranks[1].End; e.Kind != Exited {
		t.Errorf("rank 1 on n1 kept from the older summary: end %+v", e)
	}
	if want := []string{`rank 1 appears on n1 (pid 101) and n2 (pid 300)`}; !reflect.DeepEqual(notes, want) {
		t.Errorf("notes = %q, want %q", notes, want)
	}
	if got.Host != "n1,n2" {
		t.Errorf("host = %q", got.Host)
	}
}

func TestMergeJobChoice(t *testing.T) {
	a := node("n1", at(0), at(10), map[string]int{"0": 1})
	b := node("n2", at(0), at(10), map[string]int{"0": 2})
	b.Jobs[0].ID = "8"
	both := Summary{Host: "n3", Jobs: append(append([]Job{}, a.Jobs...), b.Jobs...)}
	empty := Summary{Host: "n4"}

	tests := []struct {
		name    string
		sums    []Summary
		job     string
		wantErr string
		notes   []string
	}{
		{name: "none", wantErr: "agg: merge: no summaries"},
		{name: "two jobs", sums: []Summary{a, b}, wantErr: "agg: merge: the summaries hold 2 jobs (7, 8), not one; give --job JOBID"},
		{name: "one file with two jobs", sums: []Summary{a, both}, wantErr: "agg: merge: the summaries hold 2 jobs (7, 8), not one; give --job JOBID"},
		{name: "no job at all", sums: []Summary{empty}, wantErr: "agg: merge: the summaries hold no job"},
		{name: "one without a job", sums: []Summary{a, empty}, wantErr: "agg: merge: the summary of n4 holds no job; give --job JOBID to merge the others"},
		{name: "job nobody has", sums: []Summary{a, b}, job: "9", wantErr: "agg: merge: no summary holds job 9"},
		{name: "job given", sums: []Summary{a, b, both, empty}, job: "8",
			notes: []string{"the summary of n1 holds no ranks of job 8", "the summary of n4 holds no ranks of job 8"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, notes, err := Merge(tc.sums, tc.job)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(notes, tc.notes) {
				t.Errorf("notes = %q, want %q", notes, tc.notes)
			}
			if len(got.Jobs) != 1 || got.Jobs[0].ID != tc.job {
				t.Errorf("jobs = %+v", got.Jobs)
			}
		})
	}
}

func TestMergeHostileNames(t *testing.T) {
	a := node("n\x1b[31m", at(0), at(1), map[string]int{"0": 1})
	b := node("n2", at(0), at(1), map[string]int{"0": 2})
	_, notes, err := Merge([]Summary{a, b}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || strings.ContainsAny(notes[0], "\x1b\n") || !strings.Contains(notes[0], `"n\x1b[31m" (pid 1)`) {
		t.Errorf("notes = %q", notes)
	}
}

func TestBuildStartup(t *testing.T) {
	su := Startup{InitStart: at(1), Init: 2 * time.Second, Modex: time.Second, ModexVia: "PMIx fence", Finalize: time.Millisecond}
	p := proc(10, "1", "0")
	p.Startup = su
	s := Build("n1", at(0), at(9), []Proc{p, proc(11, "1", "1")}, []Sample{{PID: 12, Event: "x", Count: 1}}, nil, nil)
	if got := s.Jobs[0].Ranks[0].Startup; got != su {
		t.Errorf("startup = %+v, want %+v", got, su)
	}
	if !s.Jobs[0].Ranks[1].Startup.IsZero() || !s.Jobs[1].Ranks[0].Startup.IsZero() {
		t.Errorf("ranks without startup data got some: %+v", s.Jobs)
	}
	for _, z := range []Startup{{InitStart: at(0)}, {Init: 1}, {Modex: 1}, {ModexVia: "x"}, {Finalize: 1}} {
		if z.IsZero() {
			t.Errorf("%+v.IsZero() = true", z)
		}
	}
}
