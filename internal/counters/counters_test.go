package counters

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/probes"
)

// epoch is the wall-clock time of BPF timestamp 0 in these tests.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func wall(ns uint64) time.Time { return epoch.Add(time.Duration(ns)) }

// testCatalog has one event with one instance per process and one whose
// instances are named by the detail and the name the BPF side read.
func testCatalog() probes.Catalog {
	return probes.Catalog{Events: []probes.Event{
		{ID: "ob1.send_pending", Message: "send queued as pending", Layer: "pml", Advice: "raise the free list"},
		{ID: "pal.free_list.at_max", Message: "free list at its maximum", Layer: "pal",
			Detail: func(detail uint64, name string) string { return fmt.Sprintf("%s#%d", name, detail) }},
	}}
}

// named returns a Name function that counts its calls in *calls.
func named(name string, calls *int) func() string {
	return func() string { *calls++; return name }
}

func TestUpdate(t *testing.T) {
	type step struct {
		r         Reading
		want      Observation // zero when the reading must be ignored
		ignored   bool
		sample    agg.Sample
		nameCalls int // total Name calls after this step
	}
	var calls int
	tests := []struct {
		name  string
		steps []step
	}{
		{"one instance per process", []step{{
			r:      Reading{PID: 10, Event: 0, Count: 3, FirstNs: 5, LastNs: 900},
			want:   Observation{Key: Key{PID: 10, Event: "ob1.send_pending"}, Index: 0, Count: 3},
			sample: agg.Sample{PID: 10, Event: "ob1.send_pending", Count: 3, First: wall(5), Last: wall(900)},
		}}},
		{"detail name read once, when the counter appears", []step{
			{
				r:         Reading{PID: 11, Event: 1, Detail: 7, Count: 1, Peak: 64, FirstNs: 10, LastNs: 10, Name: named("frag_t", &calls)},
				want:      Observation{Key: Key{PID: 11, Event: "pal.free_list.at_max", Detail: 7}, Index: 1, Count: 1},
				sample:    agg.Sample{PID: 11, Event: "pal.free_list.at_max", Detail: "frag_t#7", Count: 1, Peak: 64, First: wall(10), Last: wall(10)},
				nameCalls: 1,
			},
			{
				// The same counter later: its name is not read again, even if the buffer now holds another.
				r:         Reading{PID: 11, Event: 1, Detail: 7, Count: 4, Peak: 128, FirstNs: 10, LastNs: 2000, Name: named("other_t", &calls)},
				want:      Observation{Key: Key{PID: 11, Event: "pal.free_list.at_max", Detail: 7}, Index: 1, Count: 4},
				sample:    agg.Sample{PID: 11, Event: "pal.free_list.at_max", Detail: "frag_t#7", Count: 4, Peak: 128, First: wall(10), Last: wall(2000)},
				nameCalls: 1,
			},
			{
				// Another instance of the event is another counter, named on its own.
				r:         Reading{PID: 11, Event: 1, Detail: 8, Count: 1, FirstNs: 30, LastNs: 30, Name: named("req_t", &calls)},
				want:      Observation{Key: Key{PID: 11, Event: "pal.free_list.at_max", Detail: 8}, Index: 1, Count: 1},
				sample:    agg.Sample{PID: 11, Event: "pal.free_list.at_max", Detail: "req_t#8", Count: 1, First: wall(30), Last: wall(30)},
				nameCalls: 2,
			},
		}},
		{"no name from the kernel", []step{{
			r:      Reading{PID: 12, Event: 1, Detail: 3, Count: 2, FirstNs: 1, LastNs: 2},
			want:   Observation{Key: Key{PID: 12, Event: "pal.free_list.at_max", Detail: 3}, Index: 1, Count: 2},
			sample: agg.Sample{PID: 12, Event: "pal.free_list.at_max", Detail: "#3", Count: 2, First: wall(1), Last: wall(2)},
		}}},
		{"event beyond the catalog ignored", []step{{
			r:       Reading{PID: 13, Event: 2, Count: 9, Name: named("x", &calls)},
			ignored: true,
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls = 0
			s := New(testCatalog(), wall)
			for i, st := range tt.steps {
				got, ok := s.Update(st.r)
				if ok == st.ignored {
					t.Fatalf("step %d: Update ok = %v, want %v", i, ok, !st.ignored)
				}
				if st.ignored {
					if keys := s.Keys(nil); len(keys) != 0 {
						t.Errorf("step %d: an ignored reading left counters %v", i, keys)
					}
					if calls != 0 {
						t.Errorf("step %d: an ignored reading's name was read", i)
					}
					continue
				}
				if got != st.want {
					t.Errorf("step %d: Update = %+v, want %+v", i, got, st.want)
				}
				sm, ok := s.Sample(st.want.Key)
				if !ok || sm != st.sample {
					t.Errorf("step %d: Sample = %+v, %v; want %+v", i, sm, ok, st.sample)
				}
				if calls != st.nameCalls {
					t.Errorf("step %d: Name read %d times, want %d", i, calls, st.nameCalls)
				}
			}
		})
	}
}

func TestKeysForgetSummary(t *testing.T) {
	s := New(testCatalog(), wall)
	for _, r := range []Reading{
		{PID: 20, Event: 1, Detail: 2, Count: 1, FirstNs: 1, LastNs: 1},
		{PID: 10, Event: 0, Count: 5, FirstNs: 2, LastNs: 3},
		{PID: 20, Event: 0, Count: 7, FirstNs: 4, LastNs: 9},
		{PID: 20, Event: 1, Detail: 1, Count: 2, FirstNs: 1, LastNs: 6},
	} {
		if _, ok := s.Update(r); !ok {
			t.Fatalf("Update(%+v) ignored", r)
		}
	}
	of20 := func(pid uint32) bool { return pid == 20 }
	want := []Key{{PID: 20, Event: "ob1.send_pending"}, {PID: 20, Event: "pal.free_list.at_max", Detail: 1}, {PID: 20, Event: "pal.free_list.at_max", Detail: 2}}
	if got := s.Keys(of20); !slices.Equal(got, want) {
		t.Errorf("Keys(pid 20) = %v, want %v", got, want)
	}
	if got := s.Keys(nil); len(got) != 4 || got[0].PID != 10 {
		t.Errorf("Keys(nil) = %v, want all four, pid 10 first", got)
	}

	start, end := epoch, epoch.Add(time.Minute)
	procs := []agg.Proc{{PID: 20}}
	sum := s.Summary("node1", start, end, procs, of20, nil)
	if len(sum.Jobs) != 1 || len(sum.Jobs[0].Ranks) != 1 {
		t.Fatalf("Summary has %d jobs, want one with one rank: %+v", len(sum.Jobs), sum)
	}
	events := sum.Jobs[0].Ranks[0].Events
	if len(events) != 3 {
		t.Fatalf("rank has %d events, want the 3 counters of pid 20: %+v", len(events), events)
	}
	found := false
	for _, e := range sum.Totals() {
		if e.Event != "ob1.send_pending" {
			continue
		}
		found = true
		if e.Message != "send queued as pending" || e.Advice != "raise the free list" || e.Count != 7 {
			t.Errorf("total %+v: want the catalog's message and advice and pid 20's count 7", e)
		}
	}
	if !found {
		t.Error("no total of ob1.send_pending in the summary")
	}

	s.Forget(s.Keys(of20))
	if got := s.Keys(nil); len(got) != 1 || got[0].PID != 10 {
		t.Errorf("after Forget, Keys = %v, want pid 10's only", got)
	}
}

func TestDescribe(t *testing.T) {
	d := Describe(testCatalog())
	if info, ok := d("ob1.send_pending", "", 0); !ok || info != (agg.EventInfo{Layer: "pml", Message: "send queued as pending", Advice: "raise the free list"}) {
		t.Errorf("Describe(ob1.send_pending) = %+v, %v", info, ok)
	}
	if _, ok := d("no.such", "", 0); ok {
		t.Error("Describe knows an event the catalog lacks")
	}
}
