package status

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/status/hang"
)

func TestWrite(t *testing.T) {
	world := &agg.Comm{ID: 0, Size: 3, Name: "WORLD"}
	r := Result{
		Host:   "node1",
		Window: time.Second,
		Ranks: []Rank{
			{Rank: 0, PID: 100, Job: "7", Threads: []Thread{
				{TID: 100, Call: "MPI_Barrier", Comm: world, Seq: 3, Since: 12 * time.Second, AtLeast: true, Site: "main+0x1e (app.c:32)"},
				{TID: 101, Call: "MPI_Recv", Comm: &agg.Comm{ID: 4, Size: 2}, CommName: "halo\x1b[2J", Since: 1500 * time.Millisecond,
					Note: "no frame pointer"},
			}},
			{Rank: 1, PID: 101, Job: "7"},
			{Rank: 2, PID: 102, Job: "7", Ended: "exited during status"},
		},
		Report: hang.Report{Verdict: "rank 0 waits"},
		Notes:  []string{"two\nlines"},
	}
	var buf bytes.Buffer
	if err := Write(&buf, r, false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"Job 7 on node1 — 3 ranks; no history: each thread watched for 1.0 s\n\n┌──",
		"│ RANK │ PID │",
		"│ 0    │ 100 │ MPI_Barrier #3 (thread 100) │ WORLD (size 3)",
		"│ ≥ 12.0 s │ main+0x1e (app.c:32)",
		`│      │     │ MPI_Recv (thread 101)       │ comm 4 (size 2) "halo\x1b[2J" │    1.5 s │ ? (no frame pointer)`,
		"│ 1    │ 101 │ computing ",
		"│ 2    │ 102 │ (exited during status) ",
		"\nnote: two lines\n\nVerdict: rank 0 waits\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.ContainsRune(out, '\x1b') {
		t.Error("output holds an escape character")
	}
}

// TestWriteJSON: schema 1, snake_case, the thread that stands for a rank
// in its row, integers as integers, empty lists as [].
func TestWriteJSON(t *testing.T) {
	world := &agg.Comm{ID: 0, Size: 2, Name: "WORLD"}
	r := Result{
		Host:   "node1",
		Window: 500 * time.Millisecond,
		Ranks: []Rank{
			{Rank: 0, PID: 100, Host: "node1", Threads: []Thread{
				{TID: 100, Call: "MPI_Reduce", Comm: world, Since: 2 * time.Second, AtLeast: true, Site: "main (x.c:19)"},
				{TID: 101, Call: "MPI_Recv", Comm: world, Moving: true},
			}},
			{Rank: 1, PID: 101, Host: "node1", Unreadable: "its stack could not be unwound"},
			{Rank: -1, PID: 102, Host: "node1"}, // no launcher environment: rank unknown
		},
		Report: hang.Report{Verdict: "v", Suspects: []int{1}, Lead: []int{0},
			Absent: []hang.Absence{{Rank: 1, Call: "MPI_Reduce", Comm: *world, Waiting: []int{0}, State: "unknown"}}},
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		`"schema_version": 1,`, `"verdict": "v",`, `"window_seconds": 0.5,`,
		`"rank": 0,`, `"pid": 100,`, `"call": "MPI_Reduce",`, `"site": "main (x.c:19)",`,
		`"since_seconds": 2,`, `"at_least": true,`, `"ended": "",`,
		`"unreadable": "its stack could not be unwound",`,
		`"suspects": [
    1
  ],`, `"mismatches": [],`, `"cycles": [],`, `"divergent": []`,
		`"state": "unknown"`, `"rank": null,
      "pid": 102,`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("JSON lacks %s:\n%s", want, out)
		}
	}
	var buf2 bytes.Buffer
	if err := Write(&buf2, r, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf2.String(), "│ 1    │ 101 │ unknown") {
		t.Errorf("an unreadable rank is not shown as unknown:\n%s", buf2.String())
	}
}
