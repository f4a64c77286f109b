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
