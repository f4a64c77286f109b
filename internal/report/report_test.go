package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/identity"
)

// Times are in the local zone so that the table's local clock is predictable.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.Local)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

const pendingAdvice = "the BTL ran out of send fragments; raise btl_<name>_free_list_max " +
	"(e.g. --mca btl_tcp_free_list_max 1024) or reduce the number of outstanding nonblocking sends per peer"

func catalog(e, _ string, _ uint64) (agg.EventInfo, bool) {
	switch e {
	case "ob1.send_pending.new":
		return agg.EventInfo{Message: "send request queued as pending: no BTL fragment free", Advice: pendingAdvice}, true
	case "ob1.rndv.fallback":
		return agg.EventInfo{Message: "eager send fell back to rendezvous"}, true
	}
	return agg.EventInfo{}, false
}

// twoJobs is a summary with two jobs, a killed rank, a rank without events,
// an event missing from the catalog, an orphan sample and a drop.
func twoJobs() agg.Summary {
	id := func(job, rank string) identity.Identity {
		return identity.Identity{Host: "node07", Job: job, Rank: rank, Size: "3"}
	}
	procs := []agg.Proc{
		{PID: 4101, Comm: "lulesh", Identity: id("100", "0"), End: agg.End{Kind: agg.Exited, At: at(61000)}},
		{PID: 4102, Comm: "lulesh", Identity: id("100", "1"), End: agg.End{Kind: agg.Signaled, Signal: 9, At: at(30000)}},
		{PID: 4103, Comm: "lulesh", Identity: id("100", "2"), End: agg.End{Kind: agg.Exited, Code: 1, At: at(61000)}},
		{PID: 5201, Comm: "hpl", Identity: id("200", "0")},
		{PID: 5202, Comm: "hpl", Identity: id("200", "1")},
	}
	samples := []agg.Sample{
		{PID: 4101, Event: "ob1.send_pending.new", Count: 1234567, First: at(1500), Last: at(58000)},
		{PID: 4101, Event: "ob1.rndv.fallback", Count: 12, First: at(2000), Last: at(3000)},
		{PID: 4102, Event: "ob1.send_pending.new", Count: 88, First: at(1600), Last: at(9000)},
		{PID: 5202, Event: "btl.tcp.eagain", Count: 4021, First: at(100), Last: at(40000)},
		{PID: 6666, Event: "ob1.send_pending.new", Count: 3, First: at(100), Last: at(200)},
	}
	drops := []agg.Drop{{What: "per-process counters map full", Count: 1500, Raise: "--max-procs"}, {What: "timestamps map full", Count: 2}}
	return agg.Build("node07", t0, at(60000), procs, samples, catalog, drops)
}

func TestThousands(t *testing.T) {
	for n, want := range map[uint64]string{
		0: "0", 7: "7", 999: "999", 1000: "1,000", 12345: "12,345", 123456: "123,456",
		1234567: "1,234,567", 18446744073709551615: "18,446,744,073,709,551,615",
	} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestWrap(t *testing.T) {
	got := wrap("aaa bbb ccc dddddddddddd e", "> ", "  ", 10)
	want := "> aaa bbb\n  ccc\n  dddddddddddd\n  e"
	if got != want {
		t.Errorf("wrap =\n%s\nwant\n%s", got, want)
	}
}

// block is one job as rendered: its header line, the data rows of its
// events and processes tables split into trimmed cells, and the other lines
// after its header up to the next blank line.
type block struct {
	header string
	events [][]string
	procs  [][]string
	notes  []string
}

// parseTable splits WriteTable's output into job blocks and the lines that
// follow the last job. The first table after a job's header is its events
// table, the second its processes table.
func parseTable(t *testing.T, out string) (blocks []block, tail []string) {
	t.Helper()
	var cur *block
	tables, inTable, seenRule := 0, false, 0
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "Job "):
			blocks = append(blocks, block{header: line})
			cur, tables, inTable = &blocks[len(blocks)-1], 0, false
		case cur != nil && strings.HasPrefix(line, "┌"):
			tables++
			inTable, seenRule = true, 0
		case cur != nil && inTable && strings.HasPrefix(line, "├"):
			seenRule++
		case cur != nil && inTable && strings.HasPrefix(line, "└"):
			inTable = false
		case cur != nil && inTable && strings.HasPrefix(line, "│") && seenRule > 0:
			cells := strings.Split(strings.Trim(line, "│"), "│")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			switch tables {
			case 1:
				cur.events = append(cur.events, cells)
			case 2:
				cur.procs = append(cur.procs, cells)
			default:
				t.Errorf("%s: more than two tables", cur.header)
			}
		case cur != nil && !inTable && line != "":
			cur.notes = append(cur.notes, line)
		case cur != nil && !inTable && line == "":
			cur = nil
		case cur == nil && len(blocks) > 0 && line != "":
			tail = append(tail, line)
		}
	}
	return blocks, tail
}

func TestWriteTable(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTable(&buf, twoJobs()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	t.Logf("\n%s", out)

	if first := strings.SplitN(out, "\n", 2)[0]; first != "mpiprobe on node07, 12:00:00.000 to 12:01:00.000 (1m0s)" {
		t.Errorf("title = %q", first)
	}
	blocks, tail := parseTable(t, out)
	wantHeaders := []string{
		"Job 100 on node07 — 3 ranks",
		"Job 200 on node07 — 2 ranks",
		"Job ? on node07 — 1 rank (no MPI job identity)",
	}
	var headers []string
	for _, b := range blocks {
		headers = append(headers, b.header)
	}
	if !reflect.DeepEqual(headers, wantHeaders) {
		t.Fatalf("job headers = %q, want %q", headers, wantHeaders)
	}

	wantEvents := [][][]string{
		{
			{"-", "0", "ob1.send_pending.new", "1,234,567", "12:00:01.500", "12:00:58.000", "[1]"},
			{"", "1", "ob1.send_pending.new", "88", "12:00:01.600", "12:00:09.000", "[1]"},
			{"", "0", "ob1.rndv.fallback", "12", "12:00:02.000", "12:00:03.000", "[2]"},
			{"-", "2", "-", "0", "-", "-", ""},
		},
		{
			{"-", "1", "btl.tcp.eagain", "4,021", "12:00:00.100", "12:00:40.000", "[1]"},
			{"-", "0", "-", "0", "-", "-", ""},
		},
		{
			{"-", "pid 6666", "ob1.send_pending.new", "3", "12:00:00.100", "12:00:00.200", "[1]"},
		},
	}
	wantProcs := [][][]string{
		{{"0", "4101", "exit 0"}, {"1", "4102", "killed by SIGKILL"}, {"2", "4103", "exit 1"}},
		{{"0-1", "5201-5202", "running"}},
		{{"pid 6666", "6666", "exit status unknown"}},
	}
	for i, b := range blocks {
		if !reflect.DeepEqual(b.events, wantEvents[i]) {
			t.Errorf("%s: events =\n%q\nwant\n%q", b.header, b.events, wantEvents[i])
		}
		if !reflect.DeepEqual(b.procs, wantProcs[i]) {
			t.Errorf("%s: processes =\n%q\nwant\n%q", b.header, b.procs, wantProcs[i])
		}
	}
	if strings.Contains(out, "COUNT is per rank") {
		t.Errorf("every row is for one rank, yet the per-rank line is written")
	}

	notes := strings.Join(blocks[0].notes, "\n")
	for _, want := range []string{
		"[1] ob1.send_pending.new: send request queued as pending: no BTL fragment free",
		"    Advice: the BTL ran out of send fragments",
		"[2] ob1.rndv.fallback: eager send fell back to rendezvous",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("job 100 notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "[2] ob1.rndv.fallback: eager send fell back to rendezvous\n    Advice") {
		t.Errorf("event without advice got an advice line:\n%s", notes)
	}
	if got := strings.Join(blocks[1].notes, "\n"); got != "[1] btl.tcp.eagain (not in the event catalog)" {
		t.Errorf("job 200 notes = %q", got)
	}

	wantTail := []string{
		"Totals over all ranks:",
		"  1,234,658  ob1.send_pending.new  send request queued as pending: no BTL fragment free",
		"      4,021  btl.tcp.eagain",
		"         12  ob1.rndv.fallback     eager send fell back to rendezvous",
		"WARNING: 1,500 counter updates dropped (per-process counters map full): raise --max-procs; the counts above are lower bounds",
		"WARNING: 2 counter updates dropped (timestamps map full): raise the BPF map size; the counts above are lower bounds",
	}
	if !reflect.DeepEqual(tail, wantTail) {
		t.Errorf("tail =\n%s\nwant\n%s", strings.Join(tail, "\n"), strings.Join(wantTail, "\n"))
	}
}

func TestWriteTableEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTable(&buf, agg.Build("n1", time.Time{}, time.Time{}, nil, nil, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "mpiprobe on n1\n\nNo MPI processes were traced.\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
}

// TestWriteTableLargeJob checks that a 64-rank job stays readable: advice is
// written once per job, not once per row, no line grows with the advice, and
// each event takes one row.
func TestWriteTableLargeJob(t *testing.T) {
	var procs []agg.Proc
	var samples []agg.Sample
	for r := range 64 {
		pid := 1000 + r
		procs = append(procs, agg.Proc{PID: pid, Comm: "app", Identity: identity.Identity{Host: "n1", Job: "9", Rank: fmt.Sprint(r)}})
		samples = append(samples,
			agg.Sample{PID: uint32(pid), Event: "ob1.send_pending.new", Count: uint64(r * 1000), First: at(r), Last: at(r + 1000)},
			agg.Sample{PID: uint32(pid), Event: "ob1.rndv.fallback", Count: 5, First: at(r), Last: at(2000 - r)})
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, agg.Build("n1", t0, at(60000), procs, samples, catalog, nil)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if n := strings.Count(out, "Advice: the BTL ran out"); n != 1 {
		t.Errorf("advice written %d times, want once", n)
	}
	for _, line := range strings.Split(out, "\n") {
		if w := utf8.RuneCountInString(line); w > 120 {
			t.Errorf("line of %d columns: %q", w, line)
		}
	}
	blocks, _ := parseTable(t, out)
	if len(blocks) != 1 {
		t.Fatalf("got %d blocks, want 1", len(blocks))
	}
	// 64 different counts become one summary row; 64 equal ones one row.
	want := [][]string{
		{"-", "0-63", "ob1.send_pending.new", "0–63,000 per rank, sum 2,016,000", "12:00:00.000", "12:00:01.063", "[1]"},
		{"", "0-63", "ob1.rndv.fallback", "5", "12:00:00.000", "12:00:02.000", "[2]"},
	}
	if !reflect.DeepEqual(blocks[0].events, want) {
		t.Errorf("events =\n%q\nwant\n%q", blocks[0].events, want)
	}
	if !strings.Contains(out, "\n"+perRankLine+"\n") {
		t.Errorf("rows stand for 64 ranks, yet the per-rank line is missing")
	}
	if want := [][]string{{"0-63", "1000-1063", "running"}}; !reflect.DeepEqual(blocks[0].procs, want) {
		t.Errorf("processes = %q, want %q", blocks[0].procs, want)
	}
}

// fromJSON turns the decoded document back into a Summary.
func fromJSON(d jsonSummary) agg.Summary {
	s := agg.Summary{Host: strings.Join(d.Hosts, ","), Start: d.Start, End: d.End}
	for _, j := range d.Jobs {
		job := agg.Job{ID: j.Job}
		for _, r := range j.Ranks {
			end := agg.End{At: r.End.At}
			switch r.End.State {
			case "running":
				end.Kind = agg.Running
			case "exited":
				end.Kind = agg.Exited
				end.Code = *r.End.Code
			case "signaled":
				end.Kind = agg.Signaled
				end.Signal = *r.End.Signal
			case "vanished":
				end.Kind = agg.Vanished
			}
			rank := agg.Rank{Rank: rankString(r.Rank), PID: r.PID, Comm: r.Comm, Host: r.Host, End: end, Events: []agg.EventTotal{}}
			for _, e := range r.Events {
				rank.Events = append(rank.Events, agg.EventTotal(e))
			}
			job.Ranks = append(job.Ranks, rank)
		}
		s.Jobs = append(s.Jobs, job)
	}
	for _, d := range d.Dropped {
		s.Dropped = append(s.Dropped, agg.Drop(d))
	}
	return s
}

// normalize makes times comparable with reflect.DeepEqual.
func normalize(s agg.Summary) agg.Summary {
	u := func(t time.Time) time.Time {
		if t.IsZero() {
			return time.Time{}
		}
		return t.UTC()
	}
	s.Start, s.End = u(s.Start), u(s.End)
	for i := range s.Jobs {
		for k := range s.Jobs[i].Ranks {
			r := &s.Jobs[i].Ranks[k]
			r.End.At = u(r.End.At)
			for e := range r.Events {
				r.Events[e].First, r.Events[e].Last = u(r.Events[e].First), u(r.Events[e].Last)
			}
		}
	}
	return s
}

func TestWriteJSON(t *testing.T) {
	in := twoJobs()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, in); err != nil {
		t.Fatal(err)
	}
	out := buf.String()

	var doc jsonSummary
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("decode: %v\n%s", err, out)
	}
	if got, want := normalize(fromJSON(doc)), normalize(in); !reflect.DeepEqual(got, want) {
		t.Errorf("round trip =\n%+v\nwant\n%+v", got, want)
	}
	if got, want := len(doc.Totals), len(in.Totals()); got != want {
		t.Errorf("totals: %d entries, want %d", got, want)
	}

	for _, want := range []string{
		"\n  \"jobs\": [\n", // indent 2
		"{\n  \"schema_version\": 1,\n  \"kind\": \"summary\",\n  \"hosts\": [\n    \"node07\"\n  ],\n",
		`"job": "100"`, `"rank": 1,`, `"pid": 4102`, `"host": "node07"`,
		`"state": "signaled"`, `"signal": 9`, `"signal_name": "SIGKILL"`, `"text": "killed by SIGKILL"`,
		`"state": "exited"`, `"code": 0`,
		`"event": "ob1.send_pending.new"`, `"count": 1234567`,
		`"first": "` + at(1500).Format(time.RFC3339Nano) + `"`,
		`"last": "` + at(58000).Format(time.RFC3339Nano) + `"`,
		`"message": "btl.tcp.eagain"`, `"advice": ""`,
		`raise btl_<name>_free_list_max`, // not HTML-escaped
		`"events": []`,
		`"dropped": [`, `"what": "timestamps map full"`, `"raise": "--max-procs"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("json lacks %s", want)
		}
	}
	// The one null is the rank of unknown number, never "?".
	if strings.Contains(out, "0001-01-01") || strings.Count(out, "null") != 1 || !strings.Contains(out, `"rank": null,`) || strings.Contains(out, `"rank": "`) {
		t.Errorf("json has zero times, or nulls other than the unknown rank's, or a rank as a string:\n%s", out)
	}
}

func TestWriteJSONEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, agg.Summary{Host: "n1"}); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"jobs", "dropped", "totals"} {
		if l, ok := m[k].([]any); !ok || len(l) != 0 {
			t.Errorf("%s = %#v, want []", k, m[k])
		}
	}
}

var errBroken = errors.New("broken pipe")

type failWriter struct{ after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.after <= 0 {
		return 0, errBroken
	}
	f.after--
	return len(p), nil
}

func TestWriteErrors(t *testing.T) {
	s := twoJobs()
	for _, after := range []int{0, 1, 3, 10} {
		err := WriteTable(&failWriter{after: after}, s)
		if !errors.Is(err, errBroken) || !strings.HasPrefix(err.Error(), "report: ") {
			t.Errorf("WriteTable after %d writes: err = %v", after, err)
		}
	}
	if err := WriteJSON(&failWriter{}, s); !errors.Is(err, errBroken) {
		t.Errorf("WriteJSON: err = %v", err)
	}
}

// TestJSONMPIAbort: a rank that called MPI_Abort has mpi_abort with its
// error code in its end, and reads back so.
func TestJSONMPIAbort(t *testing.T) {
	end := agg.End{Kind: agg.Signaled, Signal: 9, MPIAbort: true, AbortCode: 7}
	in := agg.Summary{Host: "n1", Jobs: []agg.Job{{ID: "j", Ranks: []agg.Rank{{Rank: "0", PID: 10, End: end}}}}}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, in); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"mpi_abort": {`) || !strings.Contains(buf.String(), `"text": "MPI_Abort(7), killed by SIGKILL"`) {
		t.Errorf("json lacks mpi_abort:\n%s", buf.String())
	}
	back, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Jobs[0].Ranks[0].End; !got.MPIAbort || got.AbortCode != 7 {
		t.Errorf("read back %+v, want MPI_Abort with code 7", got)
	}
}
