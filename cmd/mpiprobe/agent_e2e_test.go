package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/probes"
)

// agentSummary is the part of a stored job summary the tests read.
type agentSummary struct {
	Jobs []struct {
		Job   string `json:"job"`
		Ranks []struct {
			Rank jsonRankNum `json:"rank"`
			PID  int         `json:"pid"`
			Comm string      `json:"comm"`
			Host string      `json:"host"`
			End  struct {
				State      string `json:"state"`
				Code       int    `json:"code"`
				SignalName string `json:"signal_name"`
				MPIAbort   *struct {
					Code *int `json:"code"`
				} `json:"mpi_abort"`
			} `json:"end"`
			Events []struct {
				Event string `json:"event"`
				Count uint64 `json:"count"`
			} `json:"events"`
			Startup struct {
				InitSeconds     float64 `json:"init_seconds"`
				ModexSeconds    float64 `json:"modex_seconds"`
				ModexVia        string  `json:"modex_via"`
				FinalizeSeconds float64 `json:"finalize_seconds"`
			} `json:"startup"`
		} `json:"ranks"`
	} `json:"jobs"`
}

func (s agentSummary) total(event string) uint64 {
	var n uint64
	for _, j := range s.Jobs {
		for _, r := range j.Ranks {
			for _, e := range r.Events {
				if e.Event == event {
					n += e.Count
				}
			}
		}
	}
	return n
}

// finishedSummaries waits until, for each job given by its ranks' pids,
// the state directory holds a summary with no running rank, and returns
// them in the same order. Other jobs on the node are ignored.
func finishedSummaries(t *testing.T, d mpitest.AgentDirs, a *mpitest.Agent, jobs ...[]int) []agentSummary {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		out := make([]agentSummary, len(jobs))
		found := 0
		files, _ := filepath.Glob(filepath.Join(d.State, "jobs", "*.json"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			var s agentSummary
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatalf("summary %s is not valid JSON (writes must be atomic): %v", f, err)
			}
			if len(s.Jobs) != 1 {
				t.Fatalf("summary %s holds %d jobs, want 1", f, len(s.Jobs))
			}
			running := false
			pids := map[int]bool{}
			for _, r := range s.Jobs[0].Ranks {
				running = running || r.End.State == "running"
				pids[r.PID] = true
			}
			for i, want := range jobs {
				if !running && pids[want[0]] {
					out[i] = s
					found++
				}
			}
		}
		if found == len(jobs) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d job summaries finished after 90 s; agent log:\n%s", found, len(jobs), a.Log(t))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// journalEntry is one datagram of the journal's native protocol.
type journalEntry map[string]string

// listenJournal binds a native-protocol journal socket and collects entries.
func listenJournal(t *testing.T) (string, func() []journalEntry) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.socket")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadBuffer(8 << 20)
	t.Cleanup(func() { conn.Close() })
	entries := make(chan journalEntry, 100000)
	go func() {
		buf := make([]byte, 1<<20)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			entries <- parseJournal(buf[:n])
		}
	}()
	return path, func() []journalEntry {
		var out []journalEntry
		for {
			select {
			case e := <-entries:
				out = append(out, e)
			default:
				return out
			}
		}
	}
}

// parseJournal decodes one datagram: NAME=value lines, or NAME, a 64-bit
// little-endian length and the value for values with newlines.
func parseJournal(b []byte) journalEntry {
	e := journalEntry{}
	for len(b) > 0 {
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			break
		}
		line := b[:nl]
		if eq := bytes.IndexByte(line, '='); eq >= 0 {
			e[string(line[:eq])] = string(line[eq+1:])
			b = b[nl+1:]
			continue
		}
		rest := b[nl+1:]
		if len(rest) < 8 {
			break
		}
		n := binary.LittleEndian.Uint64(rest)
		if uint64(len(rest)-8) < n+1 {
			break
		}
		e[string(line)] = string(rest[8 : 8+n])
		b = rest[8+n+1:]
	}
	return e
}

// TestAgentJobs runs the agent as a process with three jobs: an Open MPI
// flood that runs before the agent starts and whose sender is killed with
// SIGKILL, an MPICH job and an Open MPI flood that start after it. Each
// must get a summary with its ranks, how they ended, startup times, and for
// the last flood the exact count of queued sends. Warnings reach the
// journal socket with their fields; metrics pass promtool.
func TestAgentJobs(t *testing.T) {
	ompi, mpich := mpitest.OpenMPI(), mpitest.MPICH()
	mpitest.RequireE2E(t, ompi, mpich)
	bin := mpitest.BuildMpiprobe(t)
	// A copy of the program per Open MPI job, so that each job's ranks are
	// told apart by their executable.
	floodA, floodC := mpitest.Build(t, ompi, "flood"), mpitest.Build(t, ompi, "flood")
	floodM := mpitest.Build(t, mpich, "flood")
	d := mpitest.NewAgentDirs(t)
	socket, entries := listenJournal(t)

	// A: before the agent; long enough to be killed while it runs.
	jobA := mpitest.StartJob(t, ompi.Command(2, floodMCA(true), floodA, "-n", strconv.Itoa(floodMessages), "-d", "600", "-r", "40"), floodA, 2, "libmpi.so.40")
	ag := mpitest.StartAgent(t, bin, d, socket)
	for _, pid := range jobA.Ranks {
		if !strings.Contains(ag.Log(t), fmt.Sprintf(`msg="MPI process" pid=%d `, pid)) {
			t.Fatalf("the agent did not find rank pid %d of job A, which ran before it:\n%s", pid, ag.Log(t))
		}
	}

	// B (MPICH) and C (Open MPI) start after the agent, B concurrently with A.
	jobB := mpitest.StartJob(t, mpich.Command(2, nil, floodM, "-n", "2000", "-d", "300", "-r", "2"), floodM, 2, "libmpich")
	const roundsC = 3
	jobC := mpitest.StartJob(t, ompi.Command(2, floodMCA(true), floodC, "-n", strconv.Itoa(floodMessages), "-d", "600", "-r", strconv.Itoa(roundsC)), floodC, 2, "libmpi.so.40")
	jobB.Wait(t)
	jobC.Wait(t)

	// Metrics while A runs: its counter grows, and the page passes promtool.
	ag.WaitMetrics(t, "job A active with counts", func(page string) bool {
		return hasCounts(page, jobOf(t, jobA.Ranks[0]))
	})
	// Kill A's sender, which has sends queued.
	if err := syscall.Kill(jobA.Ranks[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	sums := finishedSummaries(t, d, ag, jobA.Ranks, jobB.Ranks, jobC.Ranks)
	a, b, c := sums[0], sums[1], sums[2]
	for name, s := range map[string]agentSummary{"A": a, "B": b, "C": c} {
		if len(s.Jobs) != 1 || len(s.Jobs[0].Ranks) != 2 {
			t.Fatalf("job %s: summary %+v, want one job with 2 ranks; all: %v", name, s, sums)
		}
	}
	killed := false
	for _, r := range a.Jobs[0].Ranks {
		if r.PID == jobA.Ranks[0] {
			killed = r.End.State == "signaled" && r.End.SignalName == "SIGKILL"
		}
	}
	if !killed || a.total("ob1.send_pending.new") == 0 {
		t.Errorf("job A: want rank killed by SIGKILL with its queued sends counted, got %+v", a.Jobs[0].Ranks)
	}
	if got, want := c.total("ob1.send_pending.new"), uint64(roundsC*(floodMessages-freeListMax)); !withinTolerance(got, want) {
		t.Errorf("job C: %d new queueings, want %d (%d rounds x (%d - %d)) within 2%%", got, want, roundsC, floodMessages, freeListMax)
	}
	for name, s := range map[string]agentSummary{"B": b, "C": c} {
		via := "PMIx fence"
		if name == "B" {
			via = "UCX address exchange"
		}
		for _, r := range s.Jobs[0].Ranks {
			st := r.Startup
			if r.End.State != "exited" || st.InitSeconds <= 0 || st.ModexSeconds <= 0 || st.ModexSeconds >= st.InitSeconds || st.ModexVia != via || st.FinalizeSeconds <= 0 {
				t.Errorf("job %s rank %s: end %+v startup %+v; want exited, 0 < modex (%s) < MPI_Init, finalize > 0", name, r.Rank, r.End, st, via)
			}
		}
	}

	// The journal got every warning with its fields, and the summaries.
	// Job C's new-queueing warnings add up to its total: the C/T rule lost
	// nothing.
	time.Sleep(500 * time.Millisecond)
	var sumC uint64
	summaries := 0
	jobC0 := c.Jobs[0].Job
	for _, e := range entries() {
		if e["PRIORITY"] == "4" && e["JOB"] == jobC0 && e["EVENT"] == "ob1.send_pending.new" {
			n, err := strconv.ParseUint(e["COUNT"], 10, 64)
			if err != nil || e["HOST"] == "" || e["RANK"] != "0" || e["PID"] == "" || !strings.Contains(e["MESSAGE"], "job="+jobC0) {
				t.Errorf("warning entry lacks fields: %v", e)
			}
			sumC += n
		}
		if e["SUMMARY_FILE"] != "" {
			summaries++
			if !strings.Contains(e["MESSAGE"], "Job "+e["JOB"]) {
				t.Errorf("summary entry's message is not the job's table: %q", e["MESSAGE"])
			}
		}
	}
	if sumC != c.total("ob1.send_pending.new") {
		t.Errorf("journal warnings of job C add up to %d, summary says %d", sumC, c.total("ob1.send_pending.new"))
	}
	if summaries < 3 {
		t.Errorf("%d job summaries in the journal, want at least 3", summaries)
	}
	page := ag.Scrape(t)
	if v, _ := mpitest.MetricValue(page, "mpiprobe_jobs_finished_total", nil); v < 3 {
		t.Errorf("mpiprobe_jobs_finished_total = %v, want at least 3", v)
	}
	// Job C's counts as its summary has them, every rank's counter of an
	// attached event present (at 0 when nothing happened), no host label
	// (the scrape's instance names the node), nothing left out.
	for _, r := range c.Jobs[0].Ranks {
		var want uint64
		for _, e := range r.Events {
			if e.Event == "ob1.send_pending.new" {
				want += e.Count
			}
		}
		v, ok := mpitest.MetricValue(page, "mpiprobe_events_total", map[string]string{"mpi_job": jobC0, "rank": string(r.Rank), "event": "ob1.send_pending.new"})
		if !ok || uint64(v) != want {
			t.Errorf("job C rank %s: mpiprobe_events_total = %v (present %v), summary says %d", r.Rank, v, ok, want)
		}
	}
	if strings.Contains(page, "host=") || strings.Contains(page, ",job=") || strings.Contains(page, "{job=") {
		t.Errorf("the page has host or job labels:\n%s", page)
	}
	for _, reason := range []string{"series_cap", "invalid"} {
		if v, ok := mpitest.MetricValue(page, "mpiprobe_metrics_series_dropped", map[string]string{"reason": reason}); !ok || v != 0 {
			t.Errorf("mpiprobe_metrics_series_dropped{reason=%q} = %v (present %v), want 0", reason, v, ok)
		}
	}
	if _, ok := mpitest.MetricValue(page, "mpiprobe_build_info", nil); !ok {
		t.Error("no mpiprobe_build_info")
	}
	ag.Stop(t, syscall.SIGTERM)
}

// TestAgentSingletons runs two MPICH singletons (no launcher, so no job
// id nor rank) under the agent: each gets its own series, told apart by
// pid, and the page stays whole.
func TestAgentSingletons(t *testing.T) {
	mpich := mpitest.MPICH()
	mpitest.RequireE2E(t, mpich)
	bin := mpitest.BuildMpiprobe(t)
	progs := []string{mpitest.Build(t, mpich, "hang"), mpitest.Build(t, mpich, "hang")}
	d := mpitest.NewAgentDirs(t)
	ag := mpitest.StartAgent(t, bin, d, "")
	var pids []string
	for _, prog := range progs {
		// One rank: it is the last, and spins after its rounds.
		job := mpitest.StartJob(t, []string{prog, "skip", "1"}, prog, 1, "libmpich")
		pids = append(pids, strconv.Itoa(job.Ranks[0]))
	}
	page := ag.WaitMetrics(t, "both singletons' MPI_Init times", func(page string) bool {
		for _, pid := range pids {
			if _, ok := mpitest.MetricValue(page, "mpiprobe_mpi_init_seconds", map[string]string{"mpi_job": "?", "rank": "?", "pid": pid}); !ok {
				return false
			}
		}
		return true
	})
	for _, pid := range pids {
		if v, ok := mpitest.MetricValue(page, "mpiprobe_events_total", map[string]string{"mpi_job": "?", "rank": "?", "pid": pid, "event": "mpi.error"}); !ok || v != 0 {
			t.Errorf("singleton %s: mpiprobe_events_total{event=\"mpi.error\"} = %v (present %v), want 0", pid, v, ok)
		}
	}
	if v, ok := mpitest.MetricValue(page, "mpiprobe_metrics_series_dropped", map[string]string{"reason": "invalid"}); !ok || v != 0 {
		t.Errorf("mpiprobe_metrics_series_dropped{reason=\"invalid\"} = %v (present %v), want 0", v, ok)
	}
	if v, _ := mpitest.MetricValue(page, "mpiprobe_ranks_active", nil); v < 2 {
		t.Errorf("mpiprobe_ranks_active = %v, want at least 2", v)
	}
	ag.Stop(t, syscall.SIGTERM)
}

// hasCounts reports whether the metrics page has queued sends of the job.
func hasCounts(page, job string) bool {
	v, ok := mpitest.MetricValue(page, "mpiprobe_events_total", map[string]string{"mpi_job": job, "event": "ob1.send_pending.new"})
	return ok && v > 0
}

// jobOf returns the job key of a running Open MPI rank, as its
// environment gives it (identity.FromEnv): PMIX_NAMESPACE, qualified by
// mpirun's contact in Open MPI 4.
func jobOf(t *testing.T, pid int) string {
	t.Helper()
	env, err := procfs.FS{}.Environ(pid)
	if err != nil {
		t.Fatal(err)
	}
	return identity.FromEnv(env).Job
}

// floodUnderAgent starts an agent on directories of its own and, under it,
// the capped flood under Open MPI (2 ranks, rounds rounds of floodMessages,
// the receiver 600 ms late), for the agent restart tests.
func floodUnderAgent(t *testing.T, rounds int) (bin string, d mpitest.AgentDirs, ag *mpitest.Agent, job *mpitest.Job) {
	t.Helper()
	ompi := mpitest.OpenMPI()
	mpitest.RequireE2E(t, ompi)
	bin = mpitest.BuildMpiprobe(t)
	flood := mpitest.Build(t, ompi, "flood")
	d = mpitest.NewAgentDirs(t)
	ag = mpitest.StartAgent(t, bin, d, "")
	argv := ompi.Command(2, floodMCA(true), flood, "-n", strconv.Itoa(floodMessages), "-d", "600", "-r", strconv.Itoa(rounds))
	job = mpitest.StartJob(t, argv, flood, 2, "libmpi.so.40")
	return bin, d, ag, job
}

// TestAgentRestart stops the agent in the middle of a job, once cleanly
// and once with SIGKILL, and starts it again: the job's summary still has
// every queued send. A second agent on the same state refuses to start.
func TestAgentRestart(t *testing.T) {
	const rounds = 10
	bin, d, ag, job := floodUnderAgent(t, rounds)
	jobID := jobOf(t, job.Ranks[0])
	waitCounts := func(a *mpitest.Agent) {
		t.Helper()
		a.WaitMetrics(t, "the job's counts", func(page string) bool { return hasCounts(page, jobID) })
	}
	waitCounts(ag)
	ag.Stop(t, syscall.SIGTERM)
	if !strings.Contains(ag.Log(t), "probes stay attached") {
		t.Fatalf("the agent stopped mid-job without keeping its probes:\n%s", ag.Log(t))
	}
	time.Sleep(1500 * time.Millisecond) // the job queues sends while no agent runs

	ag2 := mpitest.StartAgent(t, bin, d, "")
	if !strings.Contains(ag2.Log(t), "restarted=true") {
		t.Fatalf("the second agent did not take over the pinned state:\n%s", ag2.Log(t))
	}
	// A second agent on the same state directory refuses, in one line.
	out, err := exec.Command(bin, "agent", "--config", d.Config, "--state-dir", d.State, "--pin-dir", d.Pin, "--metrics-addr", "off", "--query-socket", "off").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another mpiprobe agent (pid "+strconv.Itoa(ag2.Cmd.Process.Pid)+") already runs") || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 {
		t.Errorf("second agent: err %v, output %q; want one line naming the running agent", err, out)
	}
	page := ag2.WaitMetrics(t, "the job's counts", func(page string) bool { return hasCounts(page, jobID) })
	// The restarted agent attached no file itself (its predecessor's
	// links are reused): each rank still has every Open MPI event's series.
	for _, e := range probes.DefaultCatalog().Events {
		for _, rank := range []string{"0", "1"} {
			if _, ok := mpitest.MetricValue(page, "mpiprobe_events_total", map[string]string{"mpi_job": jobID, "rank": rank, "event": e.ID}); !ok && e.ProducedBy(mpiabi.OpenMPI) {
				t.Errorf("after a restart, rank %s has no mpiprobe_events_total{event=%q}", rank, e.ID)
			}
		}
	}
	ag2.Stop(t, syscall.SIGKILL) // a crash: nothing saved at exit
	time.Sleep(1000 * time.Millisecond)

	ag3 := mpitest.StartAgent(t, bin, d, "")
	job.Wait(t)
	for _, s := range finishedSummaries(t, d, ag3, job.Ranks) {
		if got, want := s.total("ob1.send_pending.new"), uint64(rounds*(floodMessages-freeListMax)); !withinTolerance(got, want) {
			t.Errorf("after two restarts: %d new queueings, want %d within 2%%; logs:\n%s\n%s\n%s", got, want, ag.Log(t), ag2.Log(t), ag3.Log(t))
		}
		if n := len(s.Jobs[0].Ranks); n != 2 {
			t.Errorf("summary has %d ranks, want 2", n)
		}
	}
	ag3.Stop(t, syscall.SIGTERM)
}

// TestAgentLauncherDies kills mpirun with SIGKILL while its ranks queue
// sends, and copies libmpi to a new file the agent has never seen before
// the job starts: the ranks are still found through the new file, and the
// job still gets its summary with what was counted.
func TestAgentLauncherDies(t *testing.T) {
	ompi := mpitest.OpenMPI()
	mpitest.RequireE2E(t, ompi)
	bin := mpitest.BuildMpiprobe(t)
	flood := mpitest.Build(t, ompi, "flood")
	d := mpitest.NewAgentDirs(t)
	ag := mpitest.StartAgent(t, bin, d, "")
	before, _ := mpitest.MetricValue(ag.Scrape(t), "mpiprobe_libraries_attached", nil)

	// A libmpi no agent has seen: a copy under a new path, found in the
	// ranks' memory maps after they exec.
	lib, err := filepath.EvalSymlinks("/usr/lib/x86_64-linux-gnu/libmpi.so.40")
	if err != nil {
		t.Fatal(err)
	}
	libDir := t.TempDir()
	data, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(libDir, "libmpi.so.40"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := append(floodMCA(true), "-x", "LD_LIBRARY_PATH="+libDir)
	job := mpitest.StartJob(t, ompi.Command(2, opts, flood, "-n", strconv.Itoa(floodMessages), "-d", "600", "-r", "30"), flood, 2, libDir)
	ag.WaitMetrics(t, "the new library attached and the job's counts", func(page string) bool {
		libs, _ := mpitest.MetricValue(page, "mpiprobe_libraries_attached", nil)
		return libs > before && hasCounts(page, jobOf(t, job.Ranks[0]))
	})
	if err := job.KillLauncher(); err != nil {
		t.Fatal(err)
	}
	s := finishedSummaries(t, d, ag, job.Ranks)[0]
	if n := len(s.Jobs[0].Ranks); n != 2 || s.total("ob1.send_pending.new") == 0 {
		t.Errorf("summary after the launcher died: %d ranks, %d queued sends; want 2 ranks and the counts", n, s.total("ob1.send_pending.new"))
	}
	ag.Stop(t, syscall.SIGTERM)
}

// TestAgentCapabilities runs the agent with exactly the capabilities the
// systemd unit grants (its CapabilityBoundingSet, applied with setpriv):
// it must count a job's queued sends. Without CAP_SYS_ADMIN, which uprobe
// perf events need on this kernel, it must refuse to start with one line
// that names the capability.
func TestAgentCapabilities(t *testing.T) {
	ompi := mpitest.OpenMPI()
	mpitest.RequireE2E(t, ompi)
	if _, err := exec.LookPath("setpriv"); err != nil {
		mpitest.Require(t, "setpriv (Debian package util-linux)")
	}
	unit, err := os.ReadFile(filepath.Join(mpitest.RepoRoot(t), "dist", "mpiprobe.service"))
	if err != nil {
		t.Fatal(err)
	}
	var caps []string
	for _, line := range strings.Split(string(unit), "\n") {
		if v, ok := strings.CutPrefix(line, "CapabilityBoundingSet="); ok {
			for _, c := range strings.Fields(v) {
				caps = append(caps, strings.ToLower(strings.TrimPrefix(c, "CAP_")))
			}
		}
	}
	if len(caps) == 0 {
		t.Fatal("no CapabilityBoundingSet in dist/mpiprobe.service")
	}
	setpriv := func(caps []string) []string {
		return []string{"setpriv", "--bounding-set", "-all,+" + strings.Join(caps, ",+"), "--"}
	}
	bin := mpitest.BuildMpiprobe(t)
	flood := mpitest.Build(t, ompi, "flood")
	d := mpitest.NewAgentDirs(t)

	ag := mpitest.StartAgent(t, bin, d, "", setpriv(caps)...)
	const rounds = 2
	job := mpitest.StartJob(t, ompi.Command(2, floodMCA(true), flood, "-n", strconv.Itoa(floodMessages), "-d", "300", "-r", strconv.Itoa(rounds)), flood, 2, "libmpi.so.40")
	job.Wait(t)
	s := finishedSummaries(t, d, ag, job.Ranks)[0]
	if got, want := s.total("ob1.send_pending.new"), uint64(rounds*(floodMessages-freeListMax)); !withinTolerance(got, want) {
		t.Errorf("with the unit's capabilities (%s): %d new queueings, want %d", strings.Join(caps, ","), got, want)
	}
	ag.Stop(t, syscall.SIGTERM)

	var fewer []string
	for _, c := range caps {
		if c != "sys_admin" {
			fewer = append(fewer, c)
		}
	}
	// Fresh directories: pins the first agent kept (it keeps them while
	// any MPI process of the node runs, other tests' included) would let
	// this one start without attaching anything. The timeout bounds an
	// agent that starts anyway: that is a failure, not a hang.
	d2 := mpitest.NewAgentDirs(t)
	d2.Pin += "-without-sys-admin" // NewAgentDirs names it after the test
	t.Cleanup(func() { _ = os.RemoveAll(d2.Pin) })
	args := append(setpriv(fewer), bin, "agent", "--config", d2.Config, "--state-dir", d2.State, "--pin-dir", d2.Pin, "--metrics-addr", "off", "--query-socket", "off")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	if err == nil || !strings.HasPrefix(last, "mpiprobe agent: ") || !strings.Contains(last, "CAP_SYS_ADMIN") {
		t.Errorf("without CAP_SYS_ADMIN: err %v, output:\n%s\nwant a last line naming CAP_SYS_ADMIN", err, out)
	}
}

// TestAgentSharedPinDir starts a second agent with its own state dir but
// the first one's pin dir: it must refuse in one line naming the first
// agent's pid, before it touches the pinned state, and a port in use must
// be blamed on the configuration file actually read.
func TestAgentSharedPinDir(t *testing.T) {
	mpitest.RequireE2E(t)
	bin := mpitest.BuildMpiprobe(t)
	d := mpitest.NewAgentDirs(t)
	ag := mpitest.StartAgent(t, bin, d, "")
	defer ag.Stop(t, syscall.SIGTERM)

	code, stderr := runBinary(t, bin, nil, "agent", "--config", d.Config, "--state-dir", t.TempDir(), "--pin-dir", d.Pin, "--metrics-addr", "off", "--query-socket", "off")
	want := "another mpiprobe agent (pid " + strconv.Itoa(ag.Cmd.Process.Pid) + ") already uses pin directory " + d.Pin
	if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, d.Config) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("second agent on the same pin dir: exit %d, stderr:\n%s\nwant one line with %q and the config file", code, stderr, want)
	}

	// The first agent's metrics port, for a third agent with its own dirs.
	other := mpitest.NewAgentDirs(t)
	code, stderr = runBinary(t, bin, nil, "agent", "--config", other.Config, "--state-dir", other.State, "--pin-dir", other.Pin, "--metrics-addr", ag.Metrics, "--query-socket", "off")
	if code != 1 || !strings.Contains(stderr, "address already in use") || !strings.Contains(stderr, "set metrics_addr in "+other.Config) || strings.Contains(stderr, "/etc/mpiprobe") {
		t.Errorf("port in use: exit %d, stderr:\n%s\nwant the config file %s named", code, stderr, other.Config)
	}
}

// TestAgentCleanupWhileRunning: --cleanup of the pin directory of a
// running agent is refused, naming its pid, and leaves its pins; once the
// agent stopped it removes them, and a pin directory that does not exist
// is not reported as removed.
func TestAgentCleanupWhileRunning(t *testing.T) {
	mpitest.RequireE2E(t)
	bin := mpitest.BuildMpiprobe(t)
	d := mpitest.NewAgentDirs(t)
	ag := mpitest.StartAgent(t, bin, d, "")
	cleanup := func() (int, string) {
		return runBinary(t, bin, nil, "agent", "--cleanup", "--config", d.Config, "--state-dir", d.State, "--pin-dir", d.Pin)
	}
	code, stderr := cleanup()
	want := fmt.Sprintf("mpiprobe agent: an mpiprobe agent (pid %d) uses pin directory %s: stop it first", ag.Cmd.Process.Pid, d.Pin)
	if code != 1 || !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("--cleanup while the agent runs: exit %d, %q; want 1 and %q", code, stderr, want)
	}
	if ents, err := os.ReadDir(d.Pin); err != nil || len(ents) == 0 {
		t.Errorf("--cleanup while the agent runs removed its pins: %v, %v", ents, err)
	}
	ag.Stop(t, syscall.SIGTERM)
	if code, stderr := cleanup(); code != 0 || stderr != "mpiprobe agent: removed "+d.Pin+"\n" {
		t.Errorf("--cleanup after the agent stopped: exit %d, %q", code, stderr)
	}
	if code, stderr := cleanup(); code != 0 || stderr != "mpiprobe agent: nothing to remove: "+d.Pin+" does not exist\n" {
		t.Errorf("--cleanup of a missing pin directory: exit %d, %q", code, stderr)
	}
}

// TestAgentPrometheus: a live Prometheus scrapes the agent over TLS with
// basic auth every 15 s, with dist/prometheus/alerts.yml loaded; an Open
// MPI job that queues sends and an MPICH job whose calls return errors
// both start just after a scrape and end before the next: their alerts
// fire all the same, and each rank has series of the events its MPI can
// produce only. A scrape without the password is refused.
func TestAgentPrometheus(t *testing.T) {
	ompi, mpich := mpitest.OpenMPI(), mpitest.MPICH()
	mpitest.RequireE2E(t, ompi, mpich)
	bin := mpitest.BuildMpiprobe(t)
	flood, errs := mpitest.Build(t, ompi, "flood"), mpitest.Build(t, mpich, "errors")
	w := mpitest.NewWebConfig(t)
	d := mpitest.NewAgentDirs(t)
	// Ended jobs' series leave the page after 3 scrape intervals.
	const interval, ttl = 15 * time.Second, 45 * time.Second
	if err := os.WriteFile(d.Config, []byte(fmt.Sprintf("C = 500\nT = 1s\nmetrics_ttl = %s\n", ttl)), 0o600); err != nil {
		t.Fatal(err)
	}
	ag := mpitest.StartAgentTLS(t, bin, d, w)

	// Without the password, or over plain HTTP, no page.
	resp, err := w.Client().Get("https://" + ag.Metrics + "/metrics")
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("scrape without the password: %v, status %v; want 401", err, resp)
	}
	if err == nil {
		resp.Body.Close()
	}
	if resp, err := http.Get("http://" + ag.Metrics + "/metrics"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), "mpiprobe_") {
			t.Errorf("plain HTTP scrape got the page: status %d", resp.StatusCode)
		}
	}

	prom := mpitest.StartPrometheus(t, w.Dir, fmt.Sprintf(`global:
  scrape_interval: %s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: mpiprobe
    scheme: https
    tls_config: {ca_file: %q}
    basic_auth: {username: %q, password: %q}
    static_configs: [{targets: [%q]}]
`, interval, filepath.Join(mpitest.RepoRoot(t), "dist", "prometheus", "alerts.yml"), w.CAFile, w.User, w.Password, ag.Metrics))

	// Right after a scrape, both jobs, which must end before the next.
	var last time.Time
	deadline := time.Now().Add(60 * time.Second)
	for {
		ts := prom.Targets(t)
		if len(ts) == 1 && ts[0].Health == "up" {
			if !last.IsZero() && ts[0].LastScrape.After(last) {
				break
			}
			last = ts[0].LastScrape
		} else if time.Now().After(deadline) {
			t.Fatalf("prometheus never scraped the agent: %+v\n%s", ts, prom.Log(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
	started := time.Now()
	jobO := mpitest.StartJob(t, ompi.Command(2, floodMCA(true), flood, "-n", strconv.Itoa(floodMessages), "-d", "300", "-r", "1"), flood, 2, "libmpi.so.40")
	jobM := mpitest.StartJob(t, mpich.Command(2, nil, errs, "-n", "5"), errs, 2, "libmpich")
	jobO.Wait(t)
	jobM.Wait(t)
	ended := time.Now()
	took := ended.Sub(started)
	if took >= interval-time.Second {
		t.Logf("the jobs took %v, not shorter than the scrape interval %v: a scrape may have seen them at 0", took, interval)
	}
	sums := finishedSummaries(t, d, ag, jobO.Ranks, jobM.Ranks)
	idO, idM := sums[0].Jobs[0].Job, sums[1].Jobs[0].Job
	if sums[0].total("ob1.send_pending.new") < 1000 || sums[1].total("mpi.error") == 0 {
		t.Fatalf("the jobs did not count what the alerts need: %+v", sums)
	}

	firing := func(alert, job string) bool {
		return len(prom.Query(t, fmt.Sprintf(`ALERTS{alertstate="firing",alertname=%q,mpi_job=%q}`, alert, job))) == 1
	}
	deadline = time.Now().Add(2*interval + 30*time.Second)
	for !firing("MpiprobeOb1SendPendingNew", idO) || !firing("MpiprobeMpiError", idM) {
		if time.Now().After(deadline) {
			t.Fatalf("alerts did not fire for the short jobs %s (ob1.send_pending.new) and %s (mpi.error) within %v; first samples %v; targets %+v",
				idO, idM, 2*interval+30*time.Second, prom.Query(t, `min_over_time(mpiprobe_events_total{event=~"ob1.send_pending.new|mpi.error"}[5m]) > 0`), prom.Targets(t))
		}
		time.Sleep(time.Second)
	}
	// The first scrape that saw the jobs had their counts already, so
	// increase() alone saw nothing (logged: a scrape may fall within them).
	t.Logf("jobs took %v; increase() alone: %v; first samples: %v", took,
		prom.Query(t, fmt.Sprintf(`sum by (mpi_job) (increase(mpiprobe_events_total{mpi_job=~%q}[5m]))`, idO+"|"+idM)),
		prom.Query(t, fmt.Sprintf(`min by (mpi_job, event) (min_over_time(mpiprobe_events_total{mpi_job=~%q}[5m])) > 0`, idO+"|"+idM)))

	// Series per rank: the events each rank's MPI can produce.
	cat := probes.DefaultCatalog()
	for _, c := range []struct {
		job string
		mpi mpiabi.Flavour
	}{{idO, mpiabi.OpenMPI}, {idM, mpiabi.MPICH}} {
		var want []string
		for _, e := range cat.Events {
			if e.ProducedBy(c.mpi) {
				want = append(want, e.ID)
			}
		}
		got := map[string][]string{}
		for _, s := range prom.Query(t, fmt.Sprintf(`mpiprobe_events_total{mpi_job=%q}`, c.job)) {
			got[s.Labels["rank"]] = append(got[s.Labels["rank"]], s.Labels["event"])
		}
		for _, rank := range []string{"0", "1"} {
			slices.Sort(got[rank])
			wantSorted := slices.Sorted(slices.Values(want))
			if !slices.Equal(got[rank], wantSorted) {
				t.Errorf("%s job %s rank %s: series of %v, want %v", c.mpi, c.job, rank, got[rank], wantSorted)
			}
		}
		t.Logf("%s rank: %d series of mpiprobe_events_total", c.mpi, len(got["0"]))
	}

	// The jobs' series stay on the page until metrics_ttl after their
	// end, then leave it.
	onPage := func(page string) bool {
		return strings.Contains(page, `mpi_job="`+idO+`"`) || strings.Contains(page, `mpi_job="`+idM+`"`)
	}
	if since := time.Since(ended); since < ttl-5*time.Second && !onPage(ag.Scrape(t)) {
		t.Errorf("the jobs' series left the page %v after the jobs ended, before metrics_ttl %v", since, ttl)
	}
	time.Sleep(time.Until(ended.Add(ttl)))
	ag.WaitMetrics(t, "the ended jobs' series gone", func(page string) bool { return !onPage(page) })
	t.Logf("the jobs' series left the page %v after the jobs ended (metrics_ttl %v)", time.Since(ended), ttl)
	ag.Stop(t, syscall.SIGTERM)
}
