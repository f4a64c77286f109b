package dist_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/jobstore"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/internal/report"
)

// epilog is the Slurm epilog script, from the repository root.
const epilog = "dist/slurm/epilog-mpiprobe.sh"

// TestEpilogShellcheck runs shellcheck on the epilog (POSIX sh).
func TestEpilogShellcheck(t *testing.T) {
	if _, err := exec.LookPath("shellcheck"); err != nil {
		mpitest.Require(t, "shellcheck (Debian package shellcheck)")
	}
	out, err := exec.Command("shellcheck", "--shell=sh", filepath.Join(mpitest.RepoRoot(t), epilog)).CombinedOutput()
	if err != nil {
		t.Errorf("shellcheck %s: %v\n%s", epilog, err, out)
	}
}

// savePart writes node's part of job (a Slurm step) with one rank per
// count, as an agent writes it.
func savePart(t *testing.T, sh jobstore.Shared, job, node, nodeList string, first int, counts ...uint64) {
	t.Helper()
	now := time.Now()
	var procs []agg.Proc
	var samples []agg.Sample
	for i, c := range counts {
		pid := 100 + first + i
		procs = append(procs, agg.Proc{PID: pid, Comm: "app", End: agg.End{Kind: agg.Exited, At: now},
			Identity: identity.Identity{Host: node, Job: job, Rank: strconv.Itoa(first + i)}})
		samples = append(samples, agg.Sample{PID: uint32(pid), Event: "ob1.send_pending.new", Count: c, First: now, Last: now})
	}
	var buf bytes.Buffer
	err := report.WritePart(&buf, report.Part{Node: node, Job: job, Written: now, Final: true, NodeList: nodeList, NodeListFrom: "SLURM_STEP_NODELIST",
		Summary: agg.Build(node, now, now, procs, samples, nil, nil)})
	if err == nil {
		err = sh.SavePart(job, node, buf.Bytes())
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestEpilog runs the epilog as slurmctld would at the end of a job
// (EpilogSlurmctld: no PATH, the job's variables) over a shared directory
// where two of the job's three nodes wrote their parts of its step 0, and
// another job's part sits: the merged summary is stored next to the
// parts, with the two nodes' ranks and counts, the third node missing.
// Run again (Epilog on the job's other nodes), it leaves it alone; for a
// job that ran no MPI it stores nothing; without a job id it says so. It
// always exits 0: an epilog that fails drains the node.
func TestEpilog(t *testing.T) {
	bin := mpitest.BuildMpiprobe(t)
	script := filepath.Join(mpitest.RepoRoot(t), epilog)
	sh := jobstore.Shared{Dir: t.TempDir()}
	savePart(t, sh, "4242.0", "n1", "n[1-3]", 0, 10, 20)
	savePart(t, sh, "4242.0", "n2", "n[1-3]", 2, 30)
	savePart(t, sh, "4243.0", "n1", "n1", 0, 999)

	run := func(env ...string) (string, time.Duration) {
		t.Helper()
		cmd := exec.Command("/bin/sh", script)
		cmd.Env = append([]string{"SLURM_CLUSTER_NAME=c1", "SLURM_JOB_USER=alice", "SLURM_SCRIPT_CONTEXT=epilog_slurmctld",
			"MPIPROBE=" + bin, "MPIPROBE_SHARED_DIR=" + sh.Dir, "MPIPROBE_WAIT=1s", "MPIPROBE_GRACE=1",
			"MPIPROBE_EPILOG_CONF=" + filepath.Join(sh.Dir, "no-such-conf")}, env...)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("epilog %v: %v (an epilog must exit 0)\n%s", env, err, out)
		}
		return string(out), time.Since(start)
	}

	out, _ := run("SLURM_JOB_ID=4242", "SLURM_JOB_NODELIST=n[1-3]")
	summary := filepath.Join(sh.JobDir("4242"), jobstore.SummaryName)
	data, err := os.ReadFile(summary)
	if err != nil {
		t.Fatalf("no merged summary: %v; epilog said:\n%s", err, out)
	}
	var doc struct {
		Kind string
		Jobs []struct {
			Job   string
			Ranks []struct {
				Host   string
				Events []struct{ Count uint64 }
			}
		}
		Shared struct {
			Partial bool
			Missing []string `json:"missing_nodes"`
		}
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var hosts []string
	var total uint64
	for _, j := range doc.Jobs {
		for _, r := range j.Ranks {
			hosts = append(hosts, r.Host)
			for _, e := range r.Events {
				total += e.Count
			}
		}
	}
	if doc.Kind != "summary" || len(doc.Jobs) != 1 || doc.Jobs[0].Job != "4242.0" || !slices.Equal(hosts, []string{"n1", "n1", "n2"}) ||
		total != 60 || !doc.Shared.Partial || !slices.Equal(doc.Shared.Missing, []string{"n3"}) {
		t.Errorf("merged summary: %+v; want job 4242.0's 3 ranks on n1, n1, n2 with 60 queued sends, n3 missing", doc)
	}

	fi, _ := os.Stat(summary)
	if out, _ := run("SLURM_JOB_ID=4242", "SLURMD_NODENAME=n2", "SLURM_SCRIPT_CONTEXT=epilog_slurmd"); out != "" {
		t.Errorf("a second epilog of the job said %q", out)
	}
	if again, _ := os.Stat(summary); !again.ModTime().Equal(fi.ModTime()) {
		t.Error("a second epilog of the job wrote the summary again")
	}

	if out, took := run("SLURM_JOB_ID=4244"); out != "" || took > 10*time.Second {
		t.Errorf("a job without parts: epilog said %q in %v, want nothing within its grace", out, took)
	}
	if _, err := os.Stat(sh.JobDir("4244")); err == nil {
		t.Error("a job without parts got a directory")
	}
	if out, _ := run(); !strings.Contains(out, "SLURM_JOB_ID is not set") || strings.Count(out, "\n") != 1 {
		t.Errorf("no job id: epilog said %q, want one line", out)
	}
}
