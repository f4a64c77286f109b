package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/identity"
)

// layered describes events for the table tests: an event's layer is its id
// up to the first dot ("pml.a" is in layer pml), except that "none.*" events
// have no layer and "unknown.*" ones are not in the catalog. Events with a
// detail have advice naming it.
func layered(e, d string, _ uint64) (agg.EventInfo, bool) {
	layer, _, _ := strings.Cut(e, ".")
	switch layer {
	case "unknown":
		return agg.EventInfo{}, false
	case "none":
		layer = ""
	}
	info := agg.EventInfo{Layer: layer, Message: "what " + e + " means"}
	if d != "" {
		info.Advice = "mind " + d
	}
	return info, true
}

// proc is a process of a test job.
type proc struct {
	rank string
	pid  int
	end  agg.End
}

// numbered is n running processes, ranks 0..n-1 with pids 100+rank.
func numbered(n int) []proc {
	ps := make([]proc, n)
	for i := range ps {
		ps[i] = proc{rank: strconv.Itoa(i), pid: 100 + i}
	}
	return ps
}

// hit is a sample of the process with pid 100+i, first hit at 10·i ms and
// last at 1000+10·i ms.
func hit(i int, event, detail string, count, peak uint64) agg.Sample {
	return agg.Sample{PID: uint32(100 + i), Event: event, Detail: detail, Count: count, Peak: peak,
		First: at(10 * i), Last: at(1000 + 10*i)}
}

// jobTable renders job 1 on n1 of ps and samples, described by layered.
func jobTable(t *testing.T, ps []proc, samples []agg.Sample) string {
	t.Helper()
	var procs []agg.Proc
	for _, p := range ps {
		procs = append(procs, agg.Proc{PID: p.pid, Comm: "app", End: p.end,
			Identity: identity.Identity{Host: "n1", Job: "1", Rank: p.rank}})
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, agg.Build("n1", t0, at(60000), procs, samples, layered, nil)); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// oneBlock parses out, which must hold one job.
func oneBlock(t *testing.T, out string) (block, []string) {
	t.Helper()
	blocks, tail := parseTable(t, out)
	if len(blocks) != 1 {
		t.Fatalf("%d jobs, want 1:\n%s", len(blocks), out)
	}
	return blocks[0], tail
}

// eventsHeader is the header cells of the first table in out.
func eventsHeader(out string) []string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "│") {
			return strings.Fields(strings.ReplaceAll(line, "│", " "))
		}
	}
	return nil
}

func TestRankSet(t *testing.T) {
	seq := func(lo, hi int) []member {
		var ms []member
		for r := lo; r <= hi; r++ {
			ms = append(ms, member{rank: strconv.Itoa(r), pid: 1000 + r})
		}
		return ms
	}
	tests := []struct {
		name string
		in   []member
		want string
	}{
		{"none", nil, ""},
		{"single", []member{{"5", 1}}, "5"},
		{"0-63", seq(0, 63), "0-63"},
		{"gaps", []member{{"7", 1}, {"0", 2}, {"5", 3}, {"2", 4}, {"6", 5}}, "0,2,5-7"},
		{"pair is a run", []member{{"3", 1}, {"4", 2}}, "3-4"},
		{"numeric not textual order", append(seq(9, 11), member{"100", 1}), "9-11,100"},
		{"same rank twice", []member{{"1", 10}, {"1", 11}, {"2", 12}}, "1-2"},
		{"non-numeric by pid, after the numbers",
			[]member{{identity.Unknown, 900}, {"3", 1}, {"x", 12}, {identity.Unknown, 15}, {"2", 2}}, "2-3,pid 12,pid 15,pid 900"},
		{"only non-numeric", []member{{identity.Unknown, 6666}}, "pid 6666"},
		{"not canonical numbers", []member{{"07", 70}, {"-1", 71}, {"+2", 72}, {"1", 73}}, "1,pid 70,pid 71,pid 72"},
	}
	for _, tc := range tests {
		if got := rankSet(tc.in); got != tc.want {
			t.Errorf("%s: rankSet = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestPIDList(t *testing.T) {
	seq := func(lo, hi int) []int {
		var ps []int
		for p := lo; p <= hi; p++ {
			ps = append(ps, p)
		}
		return ps
	}
	tests := []struct {
		name string
		in   []int
		want string
	}{
		{"none", nil, ""},
		{"single", []int{42}, "42"},
		{"one run", seq(5000, 5063), "5000-5063"},
		{"two runs", append(seq(5000, 5039), seq(5041, 5063)...), "5000-5039,5041-5063"},
		{"rank order, runs only upwards", []int{100, 101, 201, 200}, "100-101,201,200"},
		{"8 items are all shown", []int{1, 3, 5, 7, 9, 11, 13, 15}, "1,3,5,7,9,11,13,15"},
		{"8 runs are all shown", []int{1, 2, 4, 5, 7, 8, 10, 11, 13, 14, 16, 17, 19, 20, 22, 23}, "1-2,4-5,7-8,10-11,13-14,16-17,19-20,22-23"},
		{"after 8 items, the pids left out are counted",
			[]int{10, 12, 14, 16, 18, 20, 22, 24, 26, 30, 31, 32}, "10,12,14,16,18,20,22,24 … (+4 more)"},
	}
	for _, tc := range tests {
		if got := pidList(tc.in); got != tc.want {
			t.Errorf("%s: pidList = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestEventsTable(t *testing.T) {
	const (
		c0, c1, c2 = "12:00:00.000", "12:00:00.010", "12:00:00.020"
		l0, l1, l2 = "12:00:01.000", "12:00:01.010", "12:00:01.020"
	)
	plain := []string{"LAYER", "RANKS", "EVENT", "COUNT", "FIRST", "LAST", "ADVICE"}
	tests := []struct {
		name    string
		procs   []proc
		samples []agg.Sample
		header  []string
		rows    [][]string
		perRank bool
		notes   []string // checked when set
	}{
		{
			name:  "layer order, LAYER once per layer, events without a layer under -",
			procs: numbered(1),
			samples: []agg.Sample{
				hit(0, "errors.x", "", 1, 0), hit(0, "pml.b", "", 5, 0), hit(0, "pml.a", "", 9, 0),
				hit(0, "zzz.q", "", 3, 0), hit(0, "none.n", "", 7, 0), hit(0, "btl.t", "", 2, 0),
				hit(0, "aaa.w", "", 4, 0), hit(0, "unknown.u", "", 6, 0), hit(0, "ucx.v", "", 1, 0),
				hit(0, "pal.p", "", 1, 0),
			},
			header: plain,
			rows: [][]string{
				{"pml", "0", "pml.a", "9", c0, l0, "[1]"},
				{"", "0", "pml.b", "5", c0, l0, "[2]"},
				{"btl", "0", "btl.t", "2", c0, l0, "[3]"},
				{"pal", "0", "pal.p", "1", c0, l0, "[4]"},
				{"ucx", "0", "ucx.v", "1", c0, l0, "[5]"},
				{"errors", "0", "errors.x", "1", c0, l0, "[6]"},
				{"aaa", "0", "aaa.w", "4", c0, l0, "[7]"},
				{"zzz", "0", "zzz.q", "3", c0, l0, "[8]"},
				{"-", "0", "none.n", "7", c0, l0, "[9]"},
				{"", "0", "unknown.u", "6", c0, l0, "[10]"},
			},
			notes: []string{
				"[1] pml.a: what pml.a means", "[2] pml.b: what pml.b means", "[3] btl.t: what btl.t means",
				"[4] pal.p: what pal.p means", "[5] ucx.v: what ucx.v means", "[6] errors.x: what errors.x means",
				"[7] aaa.w: what aaa.w means", "[8] zzz.q: what zzz.q means", "[9] none.n: what none.n means",
				"[10] unknown.u (not in the event catalog)",
			},
		},
		{
			name:  "DETAIL only when used; a note per (event, detail)",
			procs: numbered(2),
			samples: []agg.Sample{
				hit(0, "pml.f", "class A", 3, 0), hit(1, "pml.f", "class A", 3, 0),
				hit(0, "pml.f", "class B", 1, 0), hit(1, "btl.t", "", 2, 0),
			},
			header: []string{"LAYER", "RANKS", "EVENT", "DETAIL", "COUNT", "FIRST", "LAST", "ADVICE"},
			rows: [][]string{
				{"pml", "0-1", "pml.f", "class A", "3", c0, l1, "[1]"},
				{"", "0", "pml.f", "class B", "1", c0, l0, "[2]"},
				{"btl", "1", "btl.t", "", "2", c1, l1, "[3]"},
			},
			perRank: true,
			notes: []string{
				perRankLine,
				"[1] pml.f (class A): what pml.f means", "    Advice: mind class A",
				"[2] pml.f (class B): what pml.f means", "    Advice: mind class B",
				"[3] btl.t: what btl.t means",
			},
		},
		{
			name:  "PEAK only when used; a different peak is a different row",
			procs: numbered(3),
			samples: []agg.Sample{
				hit(0, "pal.g", "", 2, 4096), hit(2, "pal.g", "", 2, 4096), hit(1, "pal.g", "", 2, 8192),
				hit(0, "ucx.h", "", 1, 0),
			},
			header: []string{"LAYER", "RANKS", "EVENT", "COUNT", "PEAK", "FIRST", "LAST", "ADVICE"},
			rows: [][]string{
				{"pal", "0,2", "pal.g", "2", "4,096", c0, l2, "[1]"},
				{"", "1", "pal.g", "2", "8,192", c1, l1, "[1]"},
				{"ucx", "0", "ucx.h", "1", "-", c0, l0, "[2]"},
			},
			perRank: true,
		},
		{
			name:  "equal counts share a row, by count then lowest rank; ranks without events last",
			procs: numbered(7),
			samples: []agg.Sample{
				hit(0, "pml.s", "", 5, 0), hit(1, "pml.s", "", 9, 0), hit(2, "pml.s", "", 5, 0),
				hit(3, "pml.s", "", 9, 0), hit(4, "pml.s", "", 1, 0), hit(4, "none.z", "", 50, 0),
			},
			header: plain,
			rows: [][]string{
				{"pml", "1,3", "pml.s", "9", c1, "12:00:01.030", "[1]"},
				{"", "0,2", "pml.s", "5", c0, l2, "[1]"},
				{"", "4", "pml.s", "1", "12:00:00.040", "12:00:01.040", "[1]"},
				{"-", "4", "none.z", "50", "12:00:00.040", "12:00:01.040", "[2]"},
				{"-", "5-6", "-", "0", "-", "-", ""},
			},
			perRank: true,
		},
		{
			name:  "one rank per row: no per-rank line",
			procs: numbered(2),
			samples: []agg.Sample{
				hit(0, "pml.s", "", 5, 0), hit(1, "pml.s", "", 6, 0),
			},
			header: plain,
			rows: [][]string{
				{"pml", "1", "pml.s", "6", c1, l1, "[1]"},
				{"", "0", "pml.s", "5", c0, l0, "[1]"},
			},
			notes: []string{"[1] pml.s: what pml.s means"},
		},
		{
			name:    "no events at all",
			procs:   numbered(3),
			header:  plain,
			rows:    [][]string{{"-", "0-2", "-", "0", "-", "-", ""}},
			perRank: true,
			notes:   []string{perRankLine},
		},
		{
			name:  "ranks that are not numbers",
			procs: []proc{{"1", 101, agg.End{}}, {"", 900, agg.End{}}, {"0", 100, agg.End{}}},
			samples: []agg.Sample{
				hit(0, "btl.t", "", 4, 0), hit(1, "btl.t", "", 4, 0), hit(800, "btl.t", "", 4, 0),
			},
			header:  plain,
			rows:    [][]string{{"btl", "0-1,pid 900", "btl.t", "4", c0, "12:00:09.000", "[1]"}},
			perRank: true,
		},
		{
			name:  "same count, different peaks: lowest rank first, ranks that are not numbers by pid",
			procs: []proc{{"", 907, agg.End{}}, {"x", 903, agg.End{}}},
			samples: []agg.Sample{
				hit(807, "btl.t", "", 2, 1), hit(803, "btl.t", "", 2, 5),
			},
			header: []string{"LAYER", "RANKS", "EVENT", "COUNT", "PEAK", "FIRST", "LAST", "ADVICE"},
			rows: [][]string{
				{"btl", "pid 903", "btl.t", "2", "5", "12:00:08.030", "12:00:09.030", "[1]"},
				{"", "pid 907", "btl.t", "2", "1", "12:00:08.070", "12:00:09.070", "[1]"},
			},
		},
		{
			name:  "8 rows of one event are kept",
			procs: numbered(9),
			samples: func() []agg.Sample {
				var ss []agg.Sample
				for i := range 9 {
					ss = append(ss, hit(i, "btl.t", "", uint64(min(i, 7)+1), 0))
				}
				return ss
			}(),
			header: plain,
			rows: [][]string{
				{"btl", "7-8", "btl.t", "8", "12:00:00.070", "12:00:01.080", "[1]"},
				{"", "6", "btl.t", "7", "12:00:00.060", "12:00:01.060", "[1]"},
				{"", "5", "btl.t", "6", "12:00:00.050", "12:00:01.050", "[1]"},
				{"", "4", "btl.t", "5", "12:00:00.040", "12:00:01.040", "[1]"},
				{"", "3", "btl.t", "4", "12:00:00.030", "12:00:01.030", "[1]"},
				{"", "2", "btl.t", "3", c2, l2, "[1]"},
				{"", "1", "btl.t", "2", c1, l1, "[1]"},
				{"", "0", "btl.t", "1", c0, l0, "[1]"},
			},
			perRank: true,
		},
		{
			// Ranks 8 and 9 share a row: 9 rows, and the sum counts both.
			name:  "9 rows of one event become a summary row",
			procs: numbered(10),
			samples: func() []agg.Sample {
				var ss []agg.Sample
				for i := range 10 {
					ss = append(ss, hit(i, "btl.t", "", uint64(min(i, 8)+1)*1000, uint64(10*min(i, 8))))
				}
				return append(ss, hit(0, "pml.s", "", 1, 0))
			}(),
			header: []string{"LAYER", "RANKS", "EVENT", "COUNT", "PEAK", "FIRST", "LAST", "ADVICE"},
			rows: [][]string{
				{"pml", "0", "pml.s", "1", "-", c0, l0, "[1]"},
				{"btl", "0-9", "btl.t", "1,000–9,000 per rank, sum 54,000", "80", c0, "12:00:01.090", "[2]"},
			},
			perRank: true,
		},
		{
			name:  "summary row of equal counts with different peaks",
			procs: numbered(9),
			samples: func() []agg.Sample {
				var ss []agg.Sample
				for i := range 9 {
					ss = append(ss, hit(i, "pal.g", "c", 7, uint64(i+1)))
				}
				return ss
			}(),
			header: []string{"LAYER", "RANKS", "EVENT", "DETAIL", "COUNT", "PEAK", "FIRST", "LAST", "ADVICE"},
			rows: [][]string{
				{"pal", "0-8", "pal.g", "c", "7 per rank, sum 63", "9", c0, "12:00:01.080", "[1]"},
			},
			perRank: true,
			notes:   []string{perRankLine, "[1] pal.g (c): what pal.g means", "    Advice: mind c"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := jobTable(t, tc.procs, tc.samples)
			b, _ := oneBlock(t, out)
			if got := eventsHeader(out); !reflect.DeepEqual(got, tc.header) {
				t.Errorf("header = %q, want %q", got, tc.header)
			}
			if !reflect.DeepEqual(b.events, tc.rows) {
				t.Errorf("rows =\n%q\nwant\n%q\n%s", b.events, tc.rows, out)
			}
			if got := strings.Contains(out, "┘\n"+perRankLine+"\n┌"); got != tc.perRank {
				t.Errorf("per-rank line under the events table: %v, want %v\n%s", got, tc.perRank, out)
			}
			if tc.notes != nil && !reflect.DeepEqual(b.notes, tc.notes) {
				t.Errorf("notes =\n%s\nwant\n%s", strings.Join(b.notes, "\n"), strings.Join(tc.notes, "\n"))
			}
		})
	}
}

// TestEventsTable64x20 checks a job of 64 ranks and 20 events in five
// layers: each event takes exactly one row for ranks 0-63, whether all
// ranks counted the same or each counted differently.
func TestEventsTable64x20(t *testing.T) {
	layers := []string{"pml", "btl", "pal", "ucx", "errors"}
	event := func(e int) string { return fmt.Sprintf("%s.ev%02d", layers[e%5], e) }
	tests := []struct {
		name  string
		count func(r, e int) uint64
		// want is the COUNT cell of event e; top is that of event 15,
		// spelled out.
		want func(e int) string
		top  string
	}{
		{
			name:  "identical counts",
			count: func(_, e int) uint64 { return uint64(1000 * (e + 1)) },
			want:  func(e int) string { return thousands(uint64(1000 * (e + 1))) },
			top:   "16,000",
		},
		{
			name:  "all counts different",
			count: func(r, e int) uint64 { return uint64(37 * (e + 1) * (r + 1)) },
			want: func(e int) string {
				lo := uint64(37 * (e + 1))
				return thousands(lo) + "–" + thousands(64*lo) + " per rank, sum " + thousands(2080*lo)
			},
			top: "592–37,888 per rank, sum 1,231,360",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var samples []agg.Sample
			for r := range 64 {
				for e := range 20 {
					samples = append(samples, hit(r, event(e), "", tc.count(r, e), 0))
				}
			}
			out := jobTable(t, numbered(64), samples)

			// Count the events table's lines: header and 20 rows.
			tbl, _, _ := strings.Cut(out[strings.Index(out, "┌"):], "└")
			if n := strings.Count(tbl, "\n│"); n != 21 {
				t.Errorf("events table has %d lines with cells, want 21 (header and 20 rows):\n%s", n, out)
			}
			b, _ := oneBlock(t, out)
			// Layers in order; within one, the larger totals (later
			// events) first; LAYER on a layer's first row only.
			var want [][]string
			for l, layer := range layers {
				for e := 15 + l; e >= 0; e -= 5 {
					cell := ""
					if e == 15+l {
						cell = layer
					}
					want = append(want, []string{cell, "0-63", event(e), tc.want(e), "12:00:00.000", "12:00:01.630",
						"[" + strconv.Itoa(len(want)+1) + "]"})
				}
			}
			if !reflect.DeepEqual(b.events, want) {
				t.Errorf("rows =\n%q\nwant\n%q", b.events, want)
			}
			if len(b.events) > 0 && b.events[0][3] != tc.top {
				t.Errorf("first row's COUNT = %q, want %q", b.events[0][3], tc.top)
			}
			if !strings.Contains(out, "\n"+perRankLine+"\n") {
				t.Errorf("per-rank line missing")
			}
			if want := [][]string{{"0-63", "100-163", "running"}}; !reflect.DeepEqual(b.procs, want) {
				t.Errorf("processes = %q, want %q", b.procs, want)
			}
			for _, line := range strings.Split(out, "\n") {
				if w := utf8.RuneCountInString(line); w > 120 {
					t.Errorf("line of %d columns: %q", w, line)
				}
			}
		})
	}
}

func TestProcessesTable(t *testing.T) {
	exit0 := agg.End{Kind: agg.Exited}
	kill := agg.End{Kind: agg.Signaled, Signal: 9}
	tests := []struct {
		name  string
		procs []proc
		want  [][]string
	}{
		{
			name: "63 ranks exited 0, rank 40 killed",
			procs: func() []proc {
				ps := numbered(64)
				for i := range ps {
					ps[i].pid = 5000 + i
					ps[i].end = exit0
				}
				ps[40].end = kill
				return ps
			}(),
			want: [][]string{
				{"0-39,41-63", "5000-5039,5041-5063", "exit 0"},
				{"40", "5040", "killed by SIGKILL"},
			},
		},
		{
			name:  "pids in rank order",
			procs: []proc{{"3", 200, exit0}, {"0", 100, exit0}, {"2", 201, exit0}, {"1", 101, exit0}},
			want:  [][]string{{"0-3", "100-101,201,200", "exit 0"}},
		},
		{
			name: "rows by lowest rank; ranks that are not numbers last",
			procs: []proc{
				{"0", 10, agg.End{}}, {"1", 11, exit0}, {"2", 12, agg.End{}}, {"", 7, agg.End{}},
				{"x", 3, agg.End{Kind: agg.Exited, Code: 1}}, {"3", 13, exit0},
			},
			want: [][]string{
				{"0,2,pid 7", "10,12,7", "running"},
				{"1,3", "11,13", "exit 0"},
				{"pid 3", "3", "exit 1"},
			},
		},
		{
			name: "ranks that are not numbers in pid order",
			procs: []proc{
				{"", 7, agg.End{}}, {"x", 3, agg.End{}}, {"0", 5, agg.End{}},
			},
			want: [][]string{{"0,pid 3,pid 7", "5,3,7", "running"}},
		},
		{
			name: "after 8 pid items the rest is counted",
			procs: func() []proc {
				ps := numbered(12)
				for i, p := range []int{10, 12, 14, 16, 18, 20, 22, 24, 26, 30, 31, 32} {
					ps[i].pid, ps[i].end = p, exit0
				}
				return ps
			}(),
			want: [][]string{{"0-11", "10,12,14,16,18,20,22,24 … (+4 more)", "exit 0"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := oneBlock(t, jobTable(t, tc.procs, nil))
			if !reflect.DeepEqual(b.procs, tc.want) {
				t.Errorf("processes =\n%q\nwant\n%q", b.procs, tc.want)
			}
		})
	}
}

func TestTotalsShowDetail(t *testing.T) {
	out := jobTable(t, numbered(2), []agg.Sample{
		hit(0, "pml.f", "class A", 3, 0), hit(1, "pml.f", "class A", 4, 0),
		hit(0, "pml.f", "class B", 1, 0), hit(1, "btl.t", "", 2, 0), hit(0, "unknown.u", "", 1, 0),
	})
	_, tail := oneBlock(t, out)
	want := []string{
		"Totals over all ranks:",
		"  7  pml.f (class A)  what pml.f means",
		"  2  btl.t            what btl.t means",
		"  1  pml.f (class B)  what pml.f means",
		"  1  unknown.u",
	}
	if !reflect.DeepEqual(tail, want) {
		t.Errorf("tail =\n%s\nwant\n%s", strings.Join(tail, "\n"), strings.Join(want, "\n"))
	}
}

// TestHostileDetail: an instance name read from the traced process with
// an escape sequence, a newline, a carriage return, a bidi override and an
// invalid byte is escaped in the events table, the totals and the notes,
// and kept (invalid byte as U+FFFD) in the JSON summary, which has no raw
// control character either.
func TestHostileDetail(t *testing.T) {
	const hostile = "cls\n\x1b[31mINJECTED\r\u202e\xff"
	const shown = `cls\n\x1b[31mINJECTED\r\u202e\xff`
	ps := []agg.Proc{{PID: 100, Comm: "app", Identity: identity.Identity{Host: "n1", Job: "1", Rank: "0"}}}
	s := agg.Build("n1", t0, at(60000), ps, []agg.Sample{hit(0, "pml.f", hostile, 3, 0)}, layered, nil)
	noControl := func(what, out string) {
		t.Helper()
		for _, r := range out {
			if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)) {
				t.Errorf("%s: raw %U:\n%q", what, r, out)
				return
			}
		}
		if !utf8.ValidString(out) || strings.Contains(out, "\nINJECTED") {
			t.Errorf("%s: invalid UTF-8 or an injected line:\n%q", what, out)
		}
	}

	var buf bytes.Buffer
	if err := WriteTable(&buf, s); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	noControl("table", out)
	for _, want := range []string{
		"│ " + shown + " │",                            // DETAIL cell
		"  3  pml.f (" + shown + ")  what pml.f means", // totals
		"[1] pml.f (" + shown + "): what pml.f means",  // note
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}

	buf.Reset()
	if err := WriteJSON(&buf, s); err != nil {
		t.Fatal(err)
	}
	noControl("JSON", buf.String())
	var doc jsonSummary
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if got, want := doc.Jobs[0].Ranks[0].Events[0].Detail, strings.ToValidUTF8(hostile, "\uFFFD"); got != want {
		t.Errorf("JSON detail %q, want %q", got, want)
	}
}
