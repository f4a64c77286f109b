package traceview

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/trace/loops"
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
	for _, tc := range []struct {
		name string
		opt  Options
		want []string
	}{
		{"grouped", Options{}, []string{
			"rank 0:\n  thread 1 of 2:\n  (Allreduce0)[4]\n  thread 2 of 2:\n  (Recv1)[4]\nrank 1:\n  (Allreduce0)[4]\n",
			"ended: exit 1 (rank 2)\nno MPI call recorded: rank 2\n",
		}},
		{"per rank", Options{PerRank: true}, []string{
			"rank 0 (pid 1000, host h, job j): app\n  thread 7:\n  (Allreduce0)[4]\n  thread 8:\n  (Recv1)[4]\n",
			"rank 2 (pid 1002, host h, job j): no MPI call recorded, exit 1",
		}},
		{"one rank", Options{Rank: "1", Detail: High}, []string{
			"rank 1 (pid 1001, host h, job j): app\n  (CPU0: 100 ns+Allreduce0: 10 ns)[4]: 440 ns\n  4 calls; 40 ns in MPI, 400 ns computing\n",
		}},
	} {
		var out bytes.Buffer
		if err := Show(&out, &b.t, tc.opt); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, w, out.String())
			}
		}
		if tc.opt.Rank != "" && strings.Contains(out.String(), "rank 0") {
			t.Errorf("%s: other ranks shown:\n%s", tc.name, out.String())
		}
	}
}

// TestShowGroups: each distinct structure is printed once, with the ranks
// that share it.
func TestShowGroups(t *testing.T) {
	roles := func(n int, role func(r int) int) *tracefile.Trace {
		b := newBuilder()
		for r := range n {
			ri := b.rank(strconv.Itoa(r))
			for range 3 + role(r) {
				b.call(ri, int32(r), "MPI_Send", "s"+strconv.Itoa(role(r)), 10, 1)
			}
		}
		return &b.t
	}
	for _, tc := range []struct {
		name string
		t    *tracefile.Trace
		want []string // each must appear exactly once
	}{
		{"SPMD", roles(4, func(int) int { return 0 }), []string{"ranks 0-3, all with the same structure (SPMD):\n  (Send0)[3]\n"}},
		{"one rank", roles(1, func(int) int { return 0 }), []string{"rank 0:\n  (Send0)[3]\n"}},
		{"roles", roles(5, func(r int) int { return []int{0, 1, 0, 1, 2}[r] }), []string{
			"ranks 0,2:\n  (Send0)[3]\n", "ranks 1,3:\n  (Send1)[4]\n", "rank 4:\n  (Send2)[5]\n"}},
	} {
		var out bytes.Buffer
		if err := Show(&out, tc.t, Options{}); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if n := strings.Count(out.String(), w); n != 1 {
				t.Errorf("%s: %q appears %d times:\n%s", tc.name, w, n, out.String())
			}
		}
		if strings.Count(out.String(), "(Send") != len(tc.want) {
			t.Errorf("%s: a structure printed twice:\n%s", tc.name, out.String())
		}
	}
}

func TestCheckRank(t *testing.T) {
	b := newBuilder()
	for _, r := range []string{"0", "1", "2", "3", "?"} {
		b.rank(r)
	}
	for rank, want := range map[string]string{
		"2": "", "?": "",
		"7":  "rank 7 is not in this trace: give a rank in 0-3,?",
		"-1": "rank -1 is not in this trace: give a rank in 0-3,?",
	} {
		err := CheckRank(&b.t, rank)
		if (err == nil) != (want == "") || (err != nil && err.Error() != want) {
			t.Errorf("CheckRank(%s) = %v, want %q", rank, err, want)
		}
	}
	if err := CheckRank(&newBuilder().t, "0"); err == nil || !strings.Contains(err.Error(), "holds no rank") {
		t.Errorf("empty trace: %v", err)
	}
}

func TestMicros(t *testing.T) {
	for _, tc := range []struct {
		us   float64
		want string
	}{
		{0, "0 ns"}, {0.85, "850 ns"}, {12.34, "12.3 µs"}, {999.9, "999.9 µs"}, {4100, "4.1 ms"},
		{2e6, "2.0 s"}, {3725e6, "3725.0 s"}, {-12.3, "-12.3 µs"},
	} {
		if got := Micros(tc.us); got != tc.want {
			t.Errorf("Micros(%v) = %q, want %q", tc.us, got, tc.want)
		}
	}
}

func TestShowDamaged(t *testing.T) {
	b := newBuilder()
	var out bytes.Buffer
	de := &tracefile.DamageError{Written: 823, Damage: []tracefile.Damage{{Start: 40, End: 900, Chunk: 1, Cause: "crc mismatch"}}}
	if err := Show(&out, &b.t, Options{Damage: de}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "0 ranks, 0 of 823 MPI calls") || strings.Contains(out.String(), "started under mpiprobe trace") {
		t.Errorf("damaged trace:\n%s", out.String())
	}
}

func TestShowJSON(t *testing.T) {
	b := newBuilder()
	r0, r1 := b.rank("0"), b.rank("1")
	for _, r := range []int{r0, r1} {
		b.call(r, 1, "MPI_Init", "init", 1000, 5)
		for range 3 {
			b.call(r, 1, "MPI_Allreduce", "a", 2000, 7)
		}
	}
	b.t.Ends = []tracefile.RankEnd{{Rank: r1, End: "exit 0", Lost: 2}}
	de := &tracefile.DamageError{Events: 8, Chunks: 2, Written: 10, Size: 999,
		Damage: []tracefile.Damage{{Start: 100, End: 200, Chunk: 3, Cause: "crc mismatch"}}}
	var out bytes.Buffer
	if err := ShowJSON(&out, &b.t, Options{Rank: "1", Detail: High, Damage: de}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"schema_version": 1,`, `"kind": "trace_show",`, `"calls_written": 10,`, `"lost_call_count": 2,`, `"start_byte": 100,`} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("no %s in\n%s", w, out.String())
		}
	}
	var doc struct {
		SchemaVersion int `json:"schema_version"`
		Calls         int `json:"call_count"`
		Damage        struct {
			Unreadable []struct{ Start, End, Chunk int } `json:"unreadable"`
		} `json:"damage"`
		CallSites []struct {
			Site  int      `json:"site"`
			Calls []string `json:"calls"`
			Count int      `json:"count"`
			File  string   `json:"file"`
			Line  int      `json:"line"`
		} `json:"call_sites"`
		Structures []struct {
			Ranks   []int `json:"ranks"`
			Threads []struct {
				Text string            `json:"text"`
				Tree []json.RawMessage `json:"tree"`
			} `json:"threads"`
		} `json:"structures"`
		Ranks []struct {
			Rank      *int    `json:"rank"`
			Calls     int     `json:"call_count"`
			MPI       float64 `json:"mpi_seconds"`
			Structure *int    `json:"structure"`
		} `json:"ranks"`
		RankDetail []struct {
			Rank    *int `json:"rank"`
			Threads []struct {
				Text string `json:"text"`
			} `json:"threads"`
		} `json:"rank_detail"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SchemaVersion != 1 || doc.Calls != 8 || len(doc.Damage.Unreadable) != 1 || doc.Damage.Unreadable[0].Chunk != 3 {
		t.Errorf("doc %+v", doc)
	}
	if len(doc.CallSites) != 2 || doc.CallSites[1].Count != 6 || doc.CallSites[1].Calls[0] != "MPI_Allreduce" || doc.CallSites[1].Line != 1 {
		t.Errorf("call sites %+v", doc.CallSites)
	}
	if len(doc.Structures) != 1 || !slices.Equal(doc.Structures[0].Ranks, []int{0, 1}) ||
		doc.Structures[0].Threads[0].Text != "Init0 (Allreduce1)[3]" ||
		compact(doc.Structures[0].Threads[0].Tree[1]) != `{"iterations":3,"body":[{"call":"MPI_Allreduce","site":1,"executions":3}],"executions":1}` {
		t.Errorf("structures %+v", doc.Structures)
	}
	if len(doc.Ranks) != 2 || *doc.Ranks[1].Rank != 1 || doc.Ranks[1].Calls != 4 ||
		math.Abs(doc.Ranks[1].MPI-26e-9) > 1e-15 || doc.Ranks[1].Structure == nil || *doc.Ranks[1].Structure != 0 {
		t.Errorf("ranks %+v", doc.Ranks)
	}
	if len(doc.RankDetail) != 1 || *doc.RankDetail[0].Rank != 1 || !strings.Contains(doc.RankDetail[0].Threads[0].Text, "CPU1: 2.0 µs") {
		t.Errorf("rank detail %+v", doc.RankDetail)
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

func compact(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return err.Error()
	}
	return b.String()
}

// TestShowJSONCountsEveryRank checks the per-rank figures of many ranks,
// several of them with two threads, in every rank's detail too: each rank
// has its own counts, not those of the rank the JSON lists last.
func TestShowJSONCountsEveryRank(t *testing.T) {
	b := newBuilder()
	const n = 9
	for i := range n {
		r := b.rank(strconv.Itoa(i))
		for range i + 1 {
			b.call(r, 1, "MPI_Barrier", "barrier", 1000, 10)
		}
		if i%2 == 0 {
			b.call(r, 2, "MPI_Send", "send", 3000, 20)
		}
	}
	var out bytes.Buffer
	if err := ShowJSON(&out, &b.t, Options{PerRank: true, Detail: High}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Ranks      []jsonRank     `json:"ranks"`
		RankDetail []jsonRankFull `json:"rank_detail"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Ranks) != n || len(doc.RankDetail) != n {
		t.Fatalf("%d ranks, %d rank details, want %d", len(doc.Ranks), len(doc.RankDetail), n)
	}
	for i, r := range doc.Ranks {
		calls, threads, mpi, compute := i+1, 1, float64(i+1)*10e-9, float64(i+1)*1000e-9
		if i%2 == 0 {
			calls, threads, mpi, compute = calls+1, 2, mpi+20e-9, compute+3000e-9
		}
		if r.Rank == nil || *r.Rank != i || r.Calls != calls || r.Threads != threads ||
			math.Abs(r.MPI-mpi) > 1e-15 || math.Abs(r.Compute-compute) > 1e-12 {
			t.Errorf("ranks[%d] = %+v, want rank %d, %d calls, %d threads, %g s MPI, %g s compute", i, r, i, calls, threads, mpi, compute)
		}
		d := doc.RankDetail[i]
		if d.Rank == nil || *d.Rank != i || len(d.Threads) != threads {
			t.Errorf("rank_detail[%d] = %+v, want rank %d with %d threads", i, d, i, threads)
		}
	}
}

// TestAnalyzeLoopsInPhase: loops start where the program's loops do, with
// the calls before and after them that go through the same call sites
// (NPB FT's transform before its loop, MG's set-up exchange) left outside,
// at low and high detail, and the expansion is the recorded sequence.
func TestAnalyzeLoopsInPhase(t *testing.T) {
	type call struct{ name, site, fn string }
	exchange := []call{{"MPI_Irecv", "irecv lo", "comm3"}, {"MPI_Irecv", "irecv hi", "comm3"},
		{"MPI_Send", "send hi", "comm3"}, {"MPI_Send", "send lo", "comm3"}, {"MPI_Waitall", "wait", "comm3"}}
	norm := call{"MPI_Allreduce", "norm", "main"}
	for _, tc := range []struct {
		name               string
		before, body, post []call
		iters              int
		want, high         string
	}{
		{"FT", []call{{"MPI_Bcast", "setup", "main"}, {"MPI_Alltoall", "transpose", "transpose"}},
			[]call{{"MPI_Alltoall", "transpose", "transpose"}, {"MPI_Reduce", "checksum", "checksum"}},
			[]call{{"MPI_Barrier", "end", "main"}}, 6,
			"Bcast0 Alltoall1 (Alltoall1+Reduce2)[6] Barrier3",
			"(CPU1: 100 ns+Alltoall1: 10 ns+CPU2: 100 ns+Reduce2: 10 ns)[6]: 1.3 µs"},
		{"MG", exchange, append(slices.Clone(exchange), norm), []call{{"MPI_Allreduce", "final norm", "main"}}, 20,
			"Irecv0 Irecv1 Send2 Send3 Waitall4 (Irecv0+Irecv1+Send2+Send3+Waitall4+Allreduce5)[20] Allreduce6",
			"+Allreduce5: 10 ns)[20]: 13.2 µs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			r := b.rank("0")
			fnOf := map[string]string{}
			add := func(cs []call) {
				for _, c := range cs {
					b.call(r, 1, c.name, c.site, 100, 10)
					fnOf[c.site] = c.fn
				}
			}
			add(tc.before)
			for range tc.iters {
				add(tc.body)
			}
			add(tc.post)
			for site, i := range b.sites {
				b.t.Sites[i].Function = fnOf[site]
			}
			a := Analyze(&b.t)
			if got := a.Structure(a.Streams[0], Low); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if high := a.Structure(a.Streams[0], High); !strings.Contains(high, tc.high) {
				t.Errorf("high detail lacks %q: %s", tc.high, high)
			}
			var calls []string
			for _, sym := range loops.Expand(a.Streams[0].Nodes) {
				if !a.IsCompute(sym) {
					calls = append(calls, a.Name(sym))
				}
			}
			if len(calls) != len(b.t.Events) {
				t.Errorf("expansion has %d calls, the trace %d", len(calls), len(b.t.Events))
			}
			for i, e := range b.t.Events {
				if want := shortCall(b.t.Calls[e.Call]) + strconv.Itoa(a.SiteNum[e.Site]); i < len(calls) && calls[i] != want {
					t.Fatalf("call %d expands as %s, recorded %s", i, calls[i], want)
				}
			}
		})
	}
}
