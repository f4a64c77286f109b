package agent

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/jobstore"
	"github.com/mpiprobe/mpiprobe/internal/report"
	"github.com/mpiprobe/mpiprobe/thresholds"
)

func TestNodeListOf(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
		from string
		bad  bool
	}{
		{env: map[string]string{"OMPI_COMM_WORLD_RANK": "0"}},
		{env: map[string]string{"SLURM_JOB_NODELIST": "n[1-4]", "SLURM_STEP_NODELIST": "n[2-3]"}, want: "n[2-3]", from: "SLURM_STEP_NODELIST"},
		{env: map[string]string{"SLURM_JOB_NODELIST": "n[1-2],gpu1"}, want: "n[1-2],gpu1", from: "SLURM_JOB_NODELIST"},
		{env: map[string]string{"SLURM_STEP_NODELIST": "", "SLURM_JOB_NODELIST": "n1"}, want: "n1", from: "SLURM_JOB_NODELIST"},
		{env: map[string]string{"SLURM_STEP_NODELIST": "n[1-"}, from: "SLURM_STEP_NODELIST", bad: true},
	} {
		list, from, err := nodeListOf(tc.env)
		if list != tc.want || from != tc.from || (err != nil) != tc.bad {
			t.Errorf("nodeListOf(%v) = %q, %q, %v; want %q, %q, bad %v", tc.env, list, from, err, tc.want, tc.from, tc.bad)
		}
	}
}

// TestSavePart: the part is written under the node's and job's name and
// reads back; a shared directory that cannot take it is logged once, the
// next success once more, and a job without an id writes no part.
func TestSavePart(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	a := &agent{cfg: Config{Host: "n1", SharedDir: filepath.Join(dir, "missing"), Clock: thresholds.SystemClock{},
		Log: slog.New(slog.NewTextHandler(&log, nil))}}
	j := &jobState{Key: "7.0", NodeList: "n[1-2]", NodeListFrom: "SLURM_STEP_NODELIST"}
	sum := agg.Summary{Host: "n1", Jobs: []agg.Job{{ID: "7.0", Ranks: []agg.Rank{{Rank: "0", PID: 10, Host: "n1", End: agg.End{Kind: agg.Running}}}}}}
	a.savePart(j, sum)
	a.savePart(j, sum)
	if n := strings.Count(log.String(), "not written to the shared directory"); n != 1 || !strings.Contains(log.String(), "no such file or directory") {
		t.Errorf("%d failure lines, want 1 naming the cause:\n%s", n, log.String())
	}
	if err := os.Mkdir(a.cfg.SharedDir, 0o755); err != nil {
		t.Fatal(err)
	}
	j.Finished = time.Now()
	a.savePart(j, sum)
	if !strings.Contains(log.String(), "after an earlier failure") {
		t.Errorf("no line for the write after the failure:\n%s", log.String())
	}
	sh := jobstore.Shared{Dir: a.cfg.SharedDir}
	data, err := os.ReadFile(sh.PartPath("7.0", "n1"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := report.ReadPart(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if p.Node != "n1" || p.Job != "7.0" || !p.Final || p.NodeList != j.NodeList || len(p.Summary.Jobs[0].Ranks) != 1 {
		t.Errorf("part read back: %+v", p)
	}

	// A periodic write while the job runs: not final.
	j.Finished = time.Time{}
	a.savePart(j, sum)
	if data, err = os.ReadFile(sh.PartPath("7.0", "n1")); err != nil {
		t.Fatal(err)
	}
	if p, err = report.ReadPart(bytes.NewReader(data)); err != nil || p.Final {
		t.Errorf("part of a running job: final %v, %v", p.Final, err)
	}

	a.savePart(&jobState{Key: "pid-42", Finished: time.Now()}, agg.Summary{Host: "n1", Jobs: []agg.Job{{ID: "?"}}})
	if jobs, _ := sh.Jobs(); !slices.Equal(jobs, []string{"7.0"}) {
		t.Errorf("jobs in the shared dir: %q, want only 7.0", jobs)
	}
}
