package traceview

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/trace/tracefile"
)

// builder makes traces for the tests: calls and sites by name.
type builder struct {
	t     tracefile.Trace
	calls map[string]int
	sites map[string]int
	now   map[[2]int]int64 // (rank, tid) -> time
}

func newBuilder() *builder {
	return &builder{calls: map[string]int{}, sites: map[string]int{}, now: map[[2]int]int64{},
		t: tracefile.Trace{Header: tracefile.Header{Host: "h", Start: time.Unix(0, 0), Command: []string{"app"}}, Complete: true}}
}

func (b *builder) rank(r string) int {
	b.t.Ranks = append(b.t.Ranks, tracefile.Rank{PID: 1000 + len(b.t.Ranks), Host: "h", Job: "j", Rank: r, Exe: "/bin/app"})
	return len(b.t.Ranks) - 1
}

// call appends a call of rank on thread tid at a site named line, after
// `gap` ns of compute, lasting `d` ns.
func (b *builder) call(rank int, tid int32, call, line string, gap, d int64) {
	c, ok := b.calls[call]
	if !ok {
		c = len(b.t.Calls)
		b.calls[call] = c
		b.t.Calls = append(b.t.Calls, call)
	}
	s, ok := b.sites[line]
	if !ok {
		s = len(b.t.Sites)
		b.sites[line] = s
		b.t.Sites = append(b.t.Sites, tracefile.Site{Object: "/bin/app", Offset: uint64(0x1000 + s), Function: "main", File: "app.c", Line: len(b.t.Sites)})
	}
	k := [2]int{rank, int(tid)}
	at := b.now[k] + gap
	b.t.Events = append(b.t.Events, tracefile.Event{Rank: rank, TID: tid, Call: c, Site: s, Enter: at, Exit: at + d,
		Peer: tracefile.NoValue, Root: tracefile.NoValue, Count: tracefile.NoValue})
	b.now[k] = at + d
}

func TestAnalyzeNumbersSitesAcrossRanks(t *testing.T) {
	b := newBuilder()
	// Rank order is numeric and independent of the order ranks were added.
	r10, r2 := b.rank("10"), b.rank("2")
	for _, r := range []int{r10, r2} {
		b.call(r, 1, "MPI_Init", "init", 0, 5)
	}
	b.call(r10, 1, "MPI_Send", "send", 1, 1) // rank 10 only
	for range 3 {
		b.call(r2, 1, "MPI_Barrier", "barrier", 1000, 1)
	}
	b.call(r10, 1, "MPI_Barrier", "barrier", 1000, 1)
	a := Analyze(&b.t)
	got := map[string]string{}
	for _, s := range a.Streams {
		got[a.Trace.Ranks[s.Rank].Rank] = a.Structure(s, Low)
	}
	// Rank 2 comes first: init 0, barrier 1; rank 10's send is site 2.
	want := map[string]string{"2": "Init0 (Barrier1)[3]", "10": "Init0 Send2 Barrier1"}
	for r, w := range want {
		if got[r] != w {
			t.Errorf("rank %s: %q, want %q", r, got[r], w)
		}
	}
	if a.Streams[0].Rank != r2 {
		t.Errorf("first stream is rank index %d, want rank 2's", a.Streams[0].Rank)
	}
}

func TestShowThreadsAndSilentRanks(t *testing.T) {
	b := newBuilder()
	r0, r1, _ := b.rank("0"), b.rank("1"), b.rank("2")
	for range 4 {
		b.call(r0, 7, "MPI_Allreduce", "a", 100, 10)
		b.call(r0, 8, "MPI_Recv", "r", 50, 10)
		b.call(r1, 9, "MPI_Allreduce", "a", 100, 10)
	}
	b.t.Ends = []tracefile.RankEnd{{Rank: 2, End: "exit 1"}}
	var out bytes.Buffer
	if err := Show(&out, &b.t, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"rank 0 (pid 1000, host h, job j): app\n  thread 7:\n  (Allreduce0)[4]\n  thread 8:\n  (Recv1)[4]\n",
		"rank 2 (pid 1002, host h, job j): no MPI call recorded, exit 1",
		"all 2 ranks (0-1) have the same structure (SPMD)",
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
	out.Reset()
	if err := Show(&out, &b.t, Options{Rank: "5"}); err != nil || !strings.Contains(out.String(), "rank 5 is not in this trace") {
		t.Errorf("--rank 5: %v\n%s", err, out.String())
	}
}

func TestParseDetail(t *testing.T) {
	for in, want := range map[string]Detail{"low": Low, "high": High} {
		if d, err := ParseDetail(in); err != nil || d != want {
			t.Errorf("ParseDetail(%q) = %v, %v", in, d, err)
		}
	}
	if _, err := ParseDetail("full"); err == nil {
		t.Error("ParseDetail accepted \"full\"")
	}
}

// BenchmarkAnalyze1M cuts and compresses a trace of 10^6 calls: one rank
// running 10^4 iterations of a nested loop of 100 calls (4 sites).
func BenchmarkAnalyze1M(b *testing.B) {
	bd := newBuilder()
	r := bd.rank("0")
	for range 10_000 {
		for j := range 33 {
			bd.call(r, 1, "MPI_Send", "s", 100, 10)
			bd.call(r, 1, "MPI_Recv", "r", 100, 10)
			if j%11 == 0 {
				bd.call(r, 1, "MPI_Allreduce", "a", 1000, 10)
			}
		}
		bd.call(r, 1, "MPI_Barrier", "b", 100, 10)
	}
	b.ReportMetric(float64(len(bd.t.Events)), "calls")
	b.ResetTimer()
	for b.Loop() {
		a := Analyze(&bd.t)
		if s := a.Structure(a.Streams[0], Low); len(s) > 200 {
			b.Fatalf("structure not compressed: %.200s", s)
		}
	}
}

func TestShowEmptyTrace(t *testing.T) {
	b := newBuilder()
	var out bytes.Buffer
	if err := Show(&out, &b.t, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "0 ranks, 0 MPI calls") || !strings.Contains(out.String(), "no MPI call was recorded") {
		t.Errorf("empty trace:\n%s", out.String())
	}
}
