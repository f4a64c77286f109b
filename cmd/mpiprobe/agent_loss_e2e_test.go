package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
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
	if n := len(s.Jobs[0].Ranks); n != 2 {
		t.Errorf("%s: summary has %d ranks, want 2", what, n)
	}
	for _, r := range s.Jobs[0].Ranks {
		if r.End.State != "exited" {
			t.Errorf("%s: rank pid %d ended %q, want exited", what, r.PID, r.End.State)
		}
	}
	if got, want := s.total("ob1.send_pending.new"), uint64(lossRounds*(floodMessages-freeListMax)); !withinTolerance(got, want) {
		t.Errorf("%s: %d new queueings, want %d within 2%%; logs:\n%s", what, got, want, strings.Join(logs, "\n----\n"))
	}
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
