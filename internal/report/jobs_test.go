package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/jobstore"
)

func TestEnded(t *testing.T) {
	r := func(e agg.End) agg.Rank { return agg.Rank{End: e} }
	for _, tc := range []struct {
		name  string
		ranks []agg.Rank
		want  string
	}{
		{"none", nil, "-"},
		{"one", []agg.Rank{r(agg.End{Kind: agg.Exited})}, "1 exited"},
		{"every kind, ordered by kind then code or signal", []agg.Rank{
			r(agg.End{Kind: agg.Signaled, Signal: 11}), r(agg.End{Kind: agg.Exited, Code: 2}), r(agg.End{Kind: agg.Vanished}),
			r(agg.End{Kind: agg.Exited}), r(agg.End{}), r(agg.End{Kind: agg.Signaled, Signal: 9}), r(agg.End{Kind: agg.Exited, Code: 1}),
			r(agg.End{Kind: agg.Exited}), r(agg.End{Kind: agg.EndKind(42)}),
		}, "1 running, 2 exited, 1 exited with 1, 1 exited with 2, 1 killed by SIGKILL, 1 killed by SIGSEGV, 2 status unknown"},
	} {
		if got := Ended(tc.ranks); got != tc.want {
			t.Errorf("%s: Ended = %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func TestWriteJobsQuotes(t *testing.T) {
	rows := []JobRow{
		{Job: "evil\x1b[2J\nrank=0", File: "/s/jobs/x.json", State: "unreadable", Error: "bad\nline"},
		{Job: "12@0", State: "finished", Ranks: 1, Ended: "1 exited", Events: 1234},
	}
	var buf bytes.Buffer
	if err := WriteJobs(&buf, rows); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{`│ "evil\x1b[2J\nrank=0" │ unreadable │`, "│ 12@0 ", "│  1,234 │",
		`  "evil\x1b[2J\nrank=0": /s/jobs/x.json: bad line` + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsRune(out, '\x1b') {
		t.Errorf("output holds an escape character:\n%s", out)
	}
}

// A job id stored under a hashed name is found by its id.
func TestLoadJobByHashedID(t *testing.T) {
	store := jobstore.Store{Dir: t.TempDir()}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, agg.Summary{Host: "n1"}); err != nil {
		t.Fatal(err)
	}
	const id = "pid-4242" // a user's job id, not the unidentified process 4242
	if err := store.Save(jobstore.Key(id), buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadJob(store, id); err != nil {
		t.Errorf("LoadJob(%q): %v", id, err)
	}
	if _, _, err := LoadJob(store, "pid-4243"); err == nil {
		t.Error("LoadJob of a job never stored: no error")
	}
}
