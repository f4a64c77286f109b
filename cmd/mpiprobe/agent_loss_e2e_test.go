package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// lossRounds is the flood rounds of the jobs of the data-loss tests: a few
// seconds of queued sends.
const lossRounds = 4

// lossFlood is the argv of a capped Open MPI flood of lossRounds rounds.
func lossFlood(ompi mpitest.Impl, flood string) []string {
	return ompi.Command(2, floodMCA(true), flood, "-n", strconv.Itoa(floodMessages), "-d", "600", "-r", strconv.Itoa(lossRounds))
}

// checkLossSummary checks the summary of a lossFlood job: both ranks, each
// exited with 0, every queued send counted.
func checkLossSummary(t *testing.T, what string, s agentSummary, logs ...string) {
	t.Helper()
	checkFloodSummary(t, what, s, lossRounds, logs...)
}

// checkFloodSummary checks the summary of a capped flood of rounds rounds
// under Open MPI: both ranks, each exited with 0, every queued send
// counted. It reports whether all held.
func checkFloodSummary(t *testing.T, what string, s agentSummary, rounds int, logs ...string) bool {
	t.Helper()
	ok := true
	if n := len(s.Jobs[0].Ranks); n != 2 {
		t.Errorf("%s: summary has %d ranks, want 2", what, n)
		ok = false
	}
	for _, r := range s.Jobs[0].Ranks {
		if r.End.State != "exited" {
			t.Errorf("%s: rank pid %d ended %q, want exited", what, r.PID, r.End.State)
			ok = false
		}
	}
	if got, want := s.total("ob1.send_pending.new"), uint64(rounds*(floodMessages-freeListMax)); !withinTolerance(got, want) {
		t.Errorf("%s: %d new queueings, want %d within 2%%; logs:\n%s", what, got, want, strings.Join(logs, "\n----\n"))
		ok = false
	}
	return ok
}

// waitLog waits until the agent's log holds s.
func waitLog(t *testing.T, a *mpitest.Agent, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(a.Log(t), s) {
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not log %q within 30 s:\n%s", s, a.Log(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestAgentStateDirFull runs the agent on a state directory on a small
// tmpfs that fills up while a job runs. The job's summary, which cannot be
// written when the job ends, is written once space returns: by the same
// agent (job A), and by the next one when the agent was stopped while the
// directory was still full (job B).
func TestAgentStateDirFull(t *testing.T) {
	ompi := mpitest.OpenMPI()
	mpitest.RequireE2E(t, ompi)
	bin := mpitest.BuildMpiprobe(t)
	flood := mpitest.Build(t, ompi, "flood")
	d := mpitest.NewAgentDirs(t)
	d.State = mpitest.Tmpfs(t, "1m")
	filler := filepath.Join(d.State, "filler")
	ag := mpitest.StartAgent(t, bin, d, "")

	// endFull runs a job whose counts the agent sees and which ends while
	// the state directory is full.
	endFull := func(name string) *mpitest.Job {
		job := mpitest.StartJob(t, lossFlood(ompi, flood), flood, 2, "libmpi.so.40")
		id := jobOf(t, job.Ranks[0])
		ag.WaitMetrics(t, "job "+name+"'s counts", func(page string) bool { return hasCounts(page, id) })
		fill(t, d.State)
		job.Wait(t)
		waitLog(t, ag, `msg="save job summary" job=`+id)
		return job
	}

	a := endFull("A")
	time.Sleep(2 * time.Second) // a few polls while full
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	checkLossSummary(t, "job A, space back", finishedSummaries(t, d, ag, a.Ranks)[0], ag.Log(t))

	b := endFull("B")
	ag.Stop(t, syscall.SIGTERM)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	ag2 := mpitest.StartAgent(t, bin, d, "")
	checkLossSummary(t, "job B, space back after a restart", finishedSummaries(t, d, ag2, b.Ranks)[0], ag.Log(t), ag2.Log(t))
	ag2.Stop(t, syscall.SIGTERM)
}

// liveJob returns the job id of a running rank as the agent names it from
// /proc.
func liveJob(t *testing.T, pid int) string {
	t.Helper()
	id := identity.Resolve(pid, procfs.FS{}, "")
	if id.Job == identity.Unknown {
		t.Fatalf("rank pid %d has no job identity in /proc", pid)
	}
	return id.Job
}

// TestAgentJobWhileDown stops the agent (SIGTERM, while a long job keeps
// its probes attached) and runs an Open MPI job and an MPICH job from
// start to end before the next agent starts. The next agent gives both
// their summaries, with their job ids and ranks as the agent would have
// read them in /proc, every queued send of the Open MPI job, and their
// series in the metrics.
func TestAgentJobWhileDown(t *testing.T) {
	ompi, mpich := mpitest.OpenMPI(), mpitest.MPICH()
	mpitest.RequireE2E(t, ompi, mpich)
	bin := mpitest.BuildMpiprobe(t)
	floodL, floodS := mpitest.Build(t, ompi, "flood"), mpitest.Build(t, ompi, "flood")
	floodM := mpitest.Build(t, mpich, "flood")
	d := mpitest.NewAgentDirs(t)
	ag := mpitest.StartAgent(t, bin, d, "")
	long := mpitest.StartJob(t, ompi.Command(2, floodMCA(true), floodL, "-n", strconv.Itoa(floodMessages), "-d", "600", "-r", "30"), floodL, 2, "libmpi.so.40")
	ag.WaitMetrics(t, "the long job's counts", func(page string) bool { return hasCounts(page, jobOf(t, long.Ranks[0])) })
	ag.Stop(t, syscall.SIGTERM)
	if !strings.Contains(ag.Log(t), "probes stay attached") {
		t.Fatalf("the agent stopped mid-job without keeping its probes:\n%s", ag.Log(t))
	}

	s := mpitest.StartJob(t, lossFlood(ompi, floodS), floodS, 2, "libmpi.so.40")
	m := mpitest.StartJob(t, mpich.Command(2, nil, floodM, "-n", "2000", "-d", "300", "-r", "2"), floodM, 2, "libmpich")
	wantS, wantM := liveJob(t, s.Ranks[0]), liveJob(t, m.Ranks[0])
	// A hydra job is named by its proxies' --control-port, which no
	// record keeps: a rank known from its record alone is named by its
	// mpiexec's pid, as before, a name --job takes for the job too.
	_, oldM := identity.ResolveKeys(m.Ranks[0], procfs.FS{}, "")
	s.Wait(t)
	m.Wait(t)

	ag2 := mpitest.StartAgent(t, bin, d, "")
	sums := finishedSummaries(t, d, ag2, s.Ranks, m.Ranks)
	checkLossSummary(t, "Open MPI job while no agent ran", sums[0], ag.Log(t), ag2.Log(t))
	for i, want := range []string{wantS, wantM} {
		j := sums[i].Jobs[0]
		if j.Job != want && (i != 1 || !identity.Matches(j.Job, identity.Identity{Job: want}, oldM) || !strings.HasPrefix(j.Job, "hydra-")) {
			t.Errorf("job %d while no agent ran: summary names job %q, want %q (as /proc named it; for hydra one of %q)", i, j.Job, want, oldM)
		}
		ranks := map[jsonRankNum]bool{}
		for _, r := range j.Ranks {
			ranks[r.Rank] = true
			if r.End.State != "exited" {
				t.Errorf("job %q: rank pid %d ended %q, want exited", want, r.PID, r.End.State)
			}
		}
		if len(ranks) != 2 || !ranks["0"] || !ranks["1"] {
			t.Errorf("job %q: ranks %v, want 0 and 1", want, ranks)
		}
	}
	ag2.WaitMetrics(t, "the series of the job that ran while no agent did", func(page string) bool { return hasCounts(page, wantS) })
	ag2.Stop(t, syscall.SIGTERM)
}

// TestAgentMPIAbort runs, under Open MPI and under MPICH, a job whose rank
// 0 calls MPI_Abort with error code 7 while rank 1 waits for it. The
// summary says how each rank ended, none "running": rank 0 by MPI_Abort
// with its code, rank 1 by how the launcher ended it.
func TestAgentMPIAbort(t *testing.T) {
	ompi, mpich := mpitest.OpenMPI(), mpitest.MPICH()
	mpitest.RequireE2E(t, ompi, mpich)
	bin := mpitest.BuildMpiprobe(t)
	d := mpitest.NewAgentDirs(t)
	ag := mpitest.StartAgent(t, bin, d, "")
	for _, impl := range []mpitest.Impl{ompi, mpich} {
		flood := mpitest.Build(t, impl, "flood")
		lib := "libmpi.so.40"
		if impl.Name == mpich.Name {
			lib = "libmpich"
		}
		job := mpitest.StartJob(t, impl.Command(2, nil, flood, "-n", "100", "-d", "1000", "-a", "7"), flood, 2, lib)
		checkAbortSummary(t, impl.Name, finishedSummaries(t, d, ag, job.Ranks)[0], 7)
	}
	ag.Stop(t, syscall.SIGTERM)
}

// TestMPIAbortNamed: `mpiprobe -- launcher` on a job whose rank 0 calls
// MPI_Abort(7) names it with its code in the summary, under Open MPI and
// MPICH, and no rank is left "running": MPICH's hydra kills the other rank
// as it exits itself, and mpiprobe waits for that end (issue 32, item 8).
func TestMPIAbortNamed(t *testing.T) {
	bin := mpitest.BuildMpiprobe(t)
	for _, impl := range []mpitest.Impl{mpitest.OpenMPI(), mpitest.MPICH()} {
		t.Run(impl.Name, func(t *testing.T) {
			mpitest.RequireE2E(t, impl)
			flood := mpitest.Build(t, impl, "flood")
			res := runMpiprobeExit(t, bin, -1, append([]string{"--"}, impl.Command(2, nil, flood, "-n", "100", "-d", "1000", "-a", "7")...)...)
			var s agentSummary
			if err := json.Unmarshal([]byte(res.stdout), &s); err != nil || len(s.Jobs) != 1 || len(s.Jobs[0].Ranks) != 2 {
				t.Fatalf("want one job of 2 ranks (%v):\n%s\n%s", err, res.stdout, res.stderr)
			}
			checkAbortSummary(t, impl.Name, s, 7)
		})
	}
}

// checkAbortSummary checks the summary of a job whose rank 0 aborted with
// MPI_Abort(code): that rank's end names MPI_Abort and the code, no other
// rank's does, and none is "running". It reports whether all held.
func checkAbortSummary(t *testing.T, what string, s agentSummary, code int) bool {
	t.Helper()
	ok := true
	for _, r := range s.Jobs[0].Ranks {
		got := r.End
		switch {
		case r.Rank == "0":
			if got.MPIAbort == nil || got.MPIAbort.Code == nil || *got.MPIAbort.Code != code || got.State == "running" {
				t.Errorf("%s: the aborting rank 0 (pid %d) ended %+v, want MPI_Abort with code %d named", what, r.PID, got, code)
				ok = false
			}
		case got.State == "running" || got.MPIAbort != nil:
			t.Errorf("%s: rank pid %d ended %+v, want how the launcher ended it", what, r.PID, got)
			ok = false
		}
	}
	return ok
}
