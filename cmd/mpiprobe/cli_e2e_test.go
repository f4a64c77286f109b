package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// TestExitStatusPassthrough: mpiprobe -- COMMAND exits with the command's
// status, 128+N when signal N killed it, as strace, time and perf do.
func TestExitStatusPassthrough(t *testing.T) {
	mpitest.RequireE2E(t)
	bin := mpitest.BuildMpiprobe(t)
	tests := []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"kill -KILL $$", 137},
		{"kill -TERM $$", 143},
	}
	for _, tc := range tests {
		code, _, stderr := runOutput(t, bin, nil, "--", "sh", "-c", tc.script)
		if code != tc.want {
			t.Errorf("mpiprobe -- sh -c %q: exit %d, want %d\nstderr:\n%s", tc.script, code, tc.want, stderr)
		}
		if strings.Contains(stderr, "mpiprobe: ") {
			t.Errorf("sh -c %q: mpiprobe reported an error of its own:\n%s", tc.script, stderr)
		}
	}
}

// TestSignalForwarded sends SIGINT to mpiprobe while it runs a 2-rank job:
// the signal goes to the job's process group, mpiprobe waits for the job,
// writes the summary, whose ranks say which signal killed them (not
// "running"), and exits 130.
func TestSignalForwarded(t *testing.T) {
	for _, impl := range []mpitest.Impl{mpitest.OpenMPI(), mpitest.MPICH()} {
		t.Run(impl.Name, func(t *testing.T) {
			mpitest.RequireE2E(t, impl)
			bin := mpitest.BuildMpiprobe(t)
			flood := mpitest.Build(t, impl, "flood")
			out := filepath.Join(t.TempDir(), "sum.json")
			// The ranks pause 60 s after MPI_Init: only the signal ends them.
			argv := append([]string{"--json", "-o", out, "--"}, impl.Command(2, nil, flood, "-n", "10", "-p", "60000")...)
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin, argv...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill() }()
			ranks, err := mpitest.WaitRanksFor(30*time.Second, flood, 2, "libmpi")
			if err != nil {
				t.Fatalf("%v\nstderr:\n%s", err, stderr.String())
			}
			time.Sleep(500 * time.Millisecond) // mpiprobe has seen them start
			start := time.Now()
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(45 * time.Second):
				t.Fatalf("mpiprobe still runs 45 s after SIGINT\nstderr:\n%s", stderr.String())
			}
			t.Logf("mpiprobe ended %v after SIGINT", time.Since(start).Round(time.Millisecond))
			if code := cmd.ProcessState.ExitCode(); code != 130 {
				t.Errorf("exit %d after SIGINT, want 130\nstderr:\n%s", code, stderr.String())
			}
			// The ranks have ended (a zombie waiting for its new parent
			// to reap it has ended too); allow the kernel a moment.
			for _, pid := range ranks {
				deadline := time.Now().Add(2 * time.Second)
				for running(pid) && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
				if running(pid) {
					t.Errorf("rank pid %d still runs after mpiprobe ended", pid)
				}
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("no summary in -o file: %v\nstderr:\n%s", err, stderr.String())
			}
			var s summary
			if err := json.Unmarshal(data, &s); err != nil {
				t.Fatalf("-o file is not JSON: %v\n%s", err, data)
			}
			n := 0
			for _, j := range s.Jobs {
				for _, r := range j.Ranks {
					n++
					if r.End.State != "signaled" || r.End.Signal == nil || !strings.HasPrefix(r.End.Text, "killed by SIG") {
						t.Errorf("rank %s pid %d ended %+v, want killed by a signal", r.Rank, r.PID, r.End)
					}
				}
			}
			if n != 2 {
				t.Errorf("%d ranks in the summary, want 2:\n%s", n, data)
			}
			if strings.Contains(stdout.String(), `"jobs"`) { // the launcher's own output may be there
				t.Errorf("the summary went to stdout despite -o:\n%s", stdout.String())
			}
		})
	}
}

// TestOutputFile: -o FILE holds the summary, text or JSON, and stdout the
// command's output only; with --json and no -o, stdout is the JSON alone
// and the command's output goes to stderr.
func TestOutputFile(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	flood := mpitest.Build(t, impl, "flood")
	job := strings.Join(impl.Command(2, nil, flood, "-n", "10"), " ")
	script := "echo hello-from-the-app; exec " + job
	dir := t.TempDir()

	text := filepath.Join(dir, "sum.txt")
	code, stdout, stderr := runOutput(t, bin, nil, "-o", text, "--", "sh", "-c", script)
	got, _ := os.ReadFile(text)
	if code != 0 || !strings.Contains(string(got), "— 2 ranks") || strings.Contains(stdout, "— 2 ranks") || !strings.Contains(stdout, "hello-from-the-app") {
		t.Errorf("-o text: exit %d\nfile:\n%s\nstdout:\n%s\nstderr:\n%s", code, got, stdout, stderr)
	}

	if fi, err := os.Stat(text); err != nil || fi.Mode().Perm() != outputMode {
		t.Errorf("-o %s: mode %v (%v), want %v: a summary holds the job's command lines", text, fi.Mode().Perm(), err, os.FileMode(outputMode))
	}

	js := filepath.Join(dir, "sum.json")
	code, stdout, stderr = runOutput(t, bin, nil, "--json", "-o", js, "--", "sh", "-c", script)
	got, _ = os.ReadFile(js)
	var s summary
	if err := json.Unmarshal(got, &s); code != 0 || err != nil || len(s.Jobs) != 1 || len(s.Jobs[0].Ranks) != 2 || !strings.Contains(stdout, "hello-from-the-app") {
		t.Errorf("--json -o: exit %d, decode %v\nfile:\n%s\nstdout:\n%s\nstderr:\n%s", code, err, got, stdout, stderr)
	}

	res := runMpiprobe(t, bin, "--", "sh", "-c", script) // stdout must parse as JSON alone
	if !strings.Contains(res.stderr, "hello-from-the-app") || len(res.sum.Jobs) != 1 {
		t.Errorf("--json: the command's output is not on stderr, or no job:\nstdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	}

	missing := filepath.Join(dir, "no", "such", "dir", "x")
	code, _, stderr = runOutput(t, bin, nil, "-o", missing, "--", "true")
	if code != 1 || !strings.Contains(stderr, "-o: create "+missing+": no such file or directory") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("-o into a missing directory: exit %d, stderr %q", code, stderr)
	}
}

// TestQuietAndVerbose: a run logs nothing below a warning by default (no
// INFO line amid the command's output and the summary), its progress with
// -v, and with -q neither logs nor C/T warnings: the summary alone.
func TestQuietAndVerbose(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	flood := mpitest.Build(t, impl, "flood")
	job := impl.Command(2, floodMCA(true), flood, "-n", strconv.Itoa(floodMessages), "-d", "0", "-r", "1")
	for _, tc := range []struct {
		flag        string
		logs, warns bool
	}{{"", false, true}, {"-v", true, true}, {"-q", false, false}} {
		args := []string{"-C", "1", "-T", "1ms", "--interval", "100ms"}
		if tc.flag != "" {
			args = append(args, tc.flag)
		}
		res := runMpiprobe(t, bin, append(append(args, "--"), job...)...)
		if logs := strings.Contains(res.stderr, "level=INFO msg=tracing"); logs != tc.logs {
			t.Errorf("mpiprobe %s: logs progress %v, want %v\nstderr:\n%s", tc.flag, logs, tc.logs, res.stderr)
		}
		if !tc.logs && (strings.Contains(res.stderr, "level=INFO") || strings.Contains(res.stderr, "level=DEBUG")) {
			t.Errorf("mpiprobe %s: logs below a warning:\n%s", tc.flag, res.stderr)
		}
		if warns := len(parseWarnings(t, res.stderr)) > 0; warns != tc.warns {
			t.Errorf("mpiprobe %s: C/T warnings %v, want %v\nstderr:\n%s", tc.flag, warns, tc.warns, res.stderr)
		}
		if len(res.sum.Jobs) != 1 {
			t.Errorf("mpiprobe %s: %d jobs in the summary, want 1", tc.flag, len(res.sum.Jobs))
		}
	}
}

// pausedFlood builds mpiprobe and starts a 2-rank Open MPI flood whose
// ranks pause 60 s after MPI_Init.
func pausedFlood(t *testing.T) (bin string, job *mpitest.Job) {
	t.Helper()
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	bin = mpitest.BuildMpiprobe(t)
	flood := mpitest.Build(t, impl, "flood")
	return bin, mpitest.StartJob(t, impl.Command(2, nil, flood, "-n", "10", "-p", "60000"), flood, 2, "libmpi")
}

// TestDuration: --duration stops a -p session after that time, with the
// summary of ranks that still run; the ranks are left running.
func TestDuration(t *testing.T) {
	bin, job := pausedFlood(t)
	start := time.Now()
	res := runMpiprobe(t, bin, "--duration", "2s", "-p", strconv.Itoa(job.Ranks[0]), "-p", strconv.Itoa(job.Ranks[1]))
	took := time.Since(start)
	if took < 2*time.Second || took > 30*time.Second {
		t.Errorf("mpiprobe --duration 2s took %v", took.Round(time.Millisecond))
	}
	n := 0
	for _, j := range res.sum.Jobs {
		for _, r := range j.Ranks {
			n++
			if r.End.State != "running" {
				t.Errorf("rank %s pid %d ended %+v, want running: --duration stops mpiprobe, not the job", r.Rank, r.PID, r.End)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d ranks in the summary, want 2\nstderr:\n%s", n, res.stderr)
	}
	for _, pid := range job.Ranks {
		if !running(pid) {
			t.Errorf("rank pid %d ended with mpiprobe --duration", pid)
		}
	}
}

// psJSON is mpiprobe ps --json.
type psJSON struct {
	TracedKnown bool `json:"traced_known"`
	Jobs        []struct {
		Job       string `json:"job"`
		Launcher  string `json:"launcher"`
		Processes []struct {
			PID      int         `json:"pid"`
			Host     string      `json:"host"`
			Rank     jsonRankNum `json:"rank"`
			User     string      `json:"user"`
			MPI      string      `json:"mpi"`
			Library  string      `json:"library"`
			TracedBy []struct {
				Kind string `json:"kind"`
				PID  int    `json:"pid"`
			} `json:"traced_by"`
		} `json:"processes"`
	} `json:"jobs"`
}

// runPs runs mpiprobe ps --json and returns what it wrote, read and as is.
func runPs(t *testing.T, bin string) (psJSON, string) {
	t.Helper()
	code, stdout, stderr := runOutput(t, bin, nil, "ps", "--json")
	if code != 0 {
		t.Fatalf("ps --json: exit %d\n%s", code, stderr)
	}
	var l psJSON
	if err := json.Unmarshal([]byte(stdout), &l); err != nil {
		t.Fatalf("ps --json: %v\n%s", err, stdout)
	}
	return l, stdout
}

// TestPs runs a 2-rank Open MPI job and a 2-rank MPICH job: mpiprobe ps
// must list each under its job id (the one --job takes) with ranks 0 and
// 1 and the library, and name an mpiprobe session attached to one of them.
func TestPs(t *testing.T) {
	ompi, mpich := mpitest.OpenMPI(), mpitest.MPICH()
	mpitest.RequireE2E(t, ompi, mpich)
	bin := mpitest.BuildMpiprobe(t)
	jobs := map[string]*mpitest.Job{}
	for _, impl := range []mpitest.Impl{ompi, mpich} {
		flood := mpitest.Build(t, impl, "flood")
		lib := impl.Lib
		jobs[impl.Name] = mpitest.StartJob(t, impl.Command(2, nil, flood, "-n", "10", "-p", "60000"), flood, 2, lib)
	}
	// A session on the first Open MPI rank.
	traced := jobs["openmpi"].Ranks[0]
	var sessErr bytes.Buffer
	sess := exec.Command(bin, "-p", strconv.Itoa(traced))
	sess.Stderr = &sessErr
	if err := sess.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sess.Process.Kill(); _ = sess.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(sessErr.String(), "tracing") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}

	l, stdout := runPs(t, bin)
	if !l.TracedKnown {
		t.Errorf("ps as root cannot tell what is traced:\n%s", stdout)
	}
	for name, j := range jobs {
		wantMPI := map[string]string{"openmpi": "Open MPI", "mpich": "MPICH"}[name]
		var ranks []string
		var jobID string
		for _, pj := range l.Jobs {
			for _, p := range pj.Processes {
				for _, pid := range j.Ranks {
					if p.PID != pid {
						continue
					}
					ranks = append(ranks, string(p.Rank))
					if jobID != "" && jobID != pj.Job {
						t.Errorf("%s: ranks under two jobs %s and %s", name, jobID, pj.Job)
					}
					jobID = pj.Job
					if p.MPI != wantMPI || p.Library == "" || p.User != "root" {
						t.Errorf("%s pid %d: mpi %q library %q user %q", name, pid, p.MPI, p.Library, p.User)
					}
					tracedBy := len(p.TracedBy) == 1 && p.TracedBy[0].Kind == "session" && p.TracedBy[0].PID == sess.Process.Pid
					if (pid == traced) != tracedBy {
						t.Errorf("%s pid %d: traced by %+v (session pid %d on pid %d)", name, pid, p.TracedBy, sess.Process.Pid, traced)
					}
				}
			}
		}
		if strings.Join(ranks, ",") != "0,1" {
			t.Errorf("%s: ranks %v listed, want 0,1\n%s", name, ranks, stdout)
		}
		// The id ps shows is the one --job takes.
		if jobID != "" {
			code, out, errs := runOutput(t, bin, nil, "status", "--json", "--window", "200ms", "--job", jobID)
			if code != 0 || !strings.Contains(out, strconv.Itoa(j.Ranks[0])) {
				t.Errorf("%s: status --job %s: exit %d\n%s\n%s", name, jobID, code, out, errs)
			}
		}
	}

	code, stdout, _ := runOutput(t, bin, nil, "ps")
	if code != 0 || !strings.Contains(stdout, "session "+strconv.Itoa(sess.Process.Pid)) || !strings.Contains(stdout, "TRACED BY") {
		t.Errorf("ps: exit %d\n%s", code, stdout)
	}
}

// running reports whether pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// fill fills the file system of dir with a file, so that the next write
// there fails with ENOSPC.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for {
		if _, err := f.Write(make([]byte, 4096)); err != nil {
			return
		}
	}
}

// TestOutputFileSystemFull: a summary that cannot be written to -o is an
// error of one line naming the file and the cause, and the old file stays.
func TestOutputFileSystemFull(t *testing.T) {
	mpitest.RequireE2E(t)
	bin := mpitest.BuildMpiprobe(t)
	dir := mpitest.Tmpfs(t, "64k")
	out := filepath.Join(dir, "sum.json")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	fill(t, dir)
	code, _, stderr := runOutput(t, bin, nil, "--json", "-o", out, "--", "sh", "-c", "exit 0")
	if want := "mpiprobe: write " + out + ": no space left on device\n"; code != 1 || !strings.HasSuffix(stderr, want) || strings.Count(stderr, want) != 1 {
		t.Errorf("exit %d, stderr %q, want it to end in %q", code, stderr, want)
	}
	if got, _ := os.ReadFile(out); string(got) != "old" {
		t.Errorf("%s holds %q, want the old file", out, got)
	}
}
