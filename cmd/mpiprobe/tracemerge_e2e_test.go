package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/internal/trace/chrometrace/chromecheck"
)

// gatedTrace runs testdata/loops.c (iters iterations) as a 4-rank job whose
// ranks wait at a gate before MPI_Init, records it with one `mpiprobe trace
// -p` session per group of ranks (groups[i] lists indices into the job's
// pids; files[i] is its output), opens the gate once every session is
// tracing, and waits for the job and the sessions to end.
func gatedTrace(t *testing.T, bin string, impl mpitest.Impl, prog string, iters int, files []string, groups [][]int) {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "gate")
	job := mpitest.StartJob(t, impl.Command(4, nil, prog, strconv.Itoa(iters), "2", gate), prog, 4, "libmpi")
	var sessions []*exec.Cmd
	for i, g := range groups {
		args := []string{"trace", "-v", "-o", files[i]}
		for _, r := range g {
			args = append(args, "-p", strconv.Itoa(job.Ranks[r]))
		}
		sessions = append(sessions, exec.Command(bin, args...))
	}
	traceGated(t, sessions, gate, job)
}

// traceGated starts the trace sessions, waits until each traces, opens
// the gate the job's ranks wait for (loops.c's gate file), and waits for
// the job and the sessions, which must lose no call.
func traceGated(t *testing.T, sessions []*exec.Cmd, gate string, job *mpitest.Job) {
	t.Helper()
	var outs []*mpitest.Buffer
	for _, s := range sessions {
		out := &mpitest.Buffer{}
		s.Stdout, s.Stderr = out, out
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Process.Kill() })
		outs = append(outs, out)
	}
	deadline := time.Now().Add(60 * time.Second)
	for i, out := range outs {
		for !strings.Contains(out.String(), "tracing") {
			if time.Now().After(deadline) {
				t.Fatalf("session %d (%s) is not tracing after 60 s:\n%s", i, sessions[i], out.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	job.Wait(t)
	for i, s := range sessions {
		if err := s.Wait(); err != nil || strings.Contains(outs[i].String(), "LOST") {
			t.Fatalf("session %d (%s): %v\n%s", i, s, err, outs[i].String())
		}
	}
}

// showJSON runs `trace show --json` on files and returns each rank's host
// and call count by MPI rank.
func showJSON(t *testing.T, bin string, files ...string) map[string][2]string {
	t.Helper()
	code, out, stderr := runOutput(t, bin, nil, append([]string{"trace", "show", "--json"}, files...)...)
	if code != 0 {
		t.Fatalf("trace show --json %v: exit %d: %s", files, code, stderr)
	}
	var doc struct {
		Ranks []struct {
			Rank  *int   `json:"rank"`
			Host  string `json:"host"`
			Calls int    `json:"call_count"`
		} `json:"ranks"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string][2]string{}
	for _, r := range doc.Ranks {
		if r.Rank == nil {
			t.Fatalf("a rank of unknown number in %v:\n%s", files, out)
		}
		k := strconv.Itoa(*r.Rank)
		if _, dup := got[k]; dup {
			t.Errorf("rank %s twice in %v", k, files)
		}
		got[k] = [2]string{r.Host, strconv.Itoa(r.Calls)}
	}
	return got
}

// TestTraceNodesMerge: `trace show A B` of two sessions that each traced
// two ranks of a 4-rank job shows, rank by rank, the loop structure and call
// counts that one session tracing all four ranks of the same deterministic
// job shows, and groups the ranks as one job (SPMD); `trace export` of A and
// B makes one valid timeline of four processes; a file of another job is
// refused in one line. The two sessions stand for two nodes of one job, on
// one machine: every rank shares the host name and one clock, so the
// alignment by wall clock is checked only for consistency here; the
// simulated cluster (internal/mpitest's SimCluster) is where the true
// multi-node test belongs. Under Open MPI and MPICH.
func TestTraceNodesMerge(t *testing.T) {
	for _, impl := range []mpitest.Impl{mpitest.OpenMPI(), mpitest.MPICH()} {
		t.Run(impl.Name, func(t *testing.T) { traceNodesMerge(t, impl) })
	}
}

func traceNodesMerge(t *testing.T, impl mpitest.Impl) {
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	prog := mpitest.Build(t, impl, "loops")
	const iters = 7
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.trace")
	a, b := filepath.Join(dir, "a.trace"), filepath.Join(dir, "b.trace")
	gatedTrace(t, bin, impl, prog, iters, []string{whole}, [][]int{{0, 1, 2, 3}})
	gatedTrace(t, bin, impl, prog, iters, []string{a, b}, [][]int{{0, 1}, {2, 3}})

	want, got := show(t, bin, whole), show(t, bin, a, b)
	for _, r := range []string{"0", "1", "2", "3"} {
		if want.structure[r] == "" || got.structure[r] != want.structure[r] {
			t.Errorf("rank %s: %q from a.trace and b.trace, want %q from one session\nmerged:\n%s\nwhole:\n%s",
				r, got.structure[r], want.structure[r], got.text, want.text)
		}
	}
	checkLoopsTrace(t, got, iters)
	t.Logf("trace show a.trace b.trace:\n%s", got.text)
	if w := "ranks 0-3, all with the same structure (SPMD):\n  " + want.structure["0"] + "\n"; !strings.Contains(got.text, w) {
		t.Errorf("merged ranks not grouped as one SPMD job:\n%s", got.text)
	}
	wantCalls, gotCalls := showJSON(t, bin, whole), showJSON(t, bin, a, b)
	if len(gotCalls) != 4 || len(wantCalls) != 4 {
		t.Errorf("ranks %v from a.trace and b.trace, %v from one session: want 4", gotCalls, wantCalls)
	}
	host, _ := os.Hostname()
	for r, w := range wantCalls {
		if g := gotCalls[r]; g != w || g[0] != host {
			t.Errorf("rank %s: host and calls %v, want %v (host %s)", r, g, w, host)
		}
	}

	out := filepath.Join(dir, "job.json")
	if code, _, stderr := runOutput(t, bin, nil, "trace", "export", "--format", "chrome", "-o", out, a, b); code != 0 {
		t.Fatalf("export a b: exit %d: %s", code, stderr)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := chromecheck.Check(f)
	if err != nil {
		t.Fatalf("timeline of a and b breaks the Trace Event Format: %v", err)
	}
	if st.Processes != 4 || st.Names["MPI_Allreduce"] != 4*iters || st.Names["MPI_Init"] != 4 {
		t.Errorf("timeline of a and b holds %+v, want 4 ranks of %d allreduces", st, iters)
	}

	// The whole-job session traced another run: another job.
	for _, args := range [][]string{{"show", a, whole}, {"export", "-o", filepath.Join(dir, "x.json"), a, whole}} {
		code, stdout, stderr := runOutput(t, bin, nil, append([]string{"trace"}, args...)...)
		msg := strings.TrimSuffix(stderr, "\n")
		t.Logf("trace %s with another job's file: %s", args[0], msg)
		if code == 0 || stdout != "" || strings.Count(msg, "\n") > 0 ||
			!strings.Contains(msg, whole+" holds job ") || !strings.Contains(msg, a+" job ") {
			t.Errorf("trace %v: exit %d, stdout %q, stderr %q: want one line naming both files and their jobs", args, code, stdout, stderr)
		}
	}
	// One node's file twice.
	code, _, stderr := runOutput(t, bin, nil, "trace", "show", a, a)
	if code == 0 || !strings.Contains(stderr, "is in both "+a+" and "+a) {
		t.Errorf("show a a: exit %d, %q: want a rank in both files", code, stderr)
	}
}
