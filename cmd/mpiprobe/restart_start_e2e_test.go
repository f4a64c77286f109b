package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// rankStarted returns when pid started, from /proc/PID/stat's start time
// (clock ticks of 1/100 s after boot) and the boot clock: the test's own
// reading, independent of the agent's.
func rankStarted(t *testing.T, pid int) time.Time {
	t.Helper()
	st, err := procfs.FS{}.Stat(pid)
	if err != nil {
		t.Fatal(err)
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		t.Fatal(err)
	}
	return time.Now().Add(-(time.Duration(ts.Nano()) - time.Duration(st.StartTime)*10*time.Millisecond))
}

// summaryStart returns the "start" of the stored summary of the job whose
// ranks include pid, and whether one is stored.
func summaryStart(t *testing.T, d mpitest.AgentDirs, pid int) (time.Time, bool) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(d.State, "jobs", "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var s struct {
			Start time.Time `json:"start"`
			Jobs  []struct {
				Ranks []struct {
					PID int `json:"pid"`
				} `json:"ranks"`
			} `json:"jobs"`
		}
		if json.Unmarshal(b, &s) != nil {
			continue
		}
		for _, j := range s.Jobs {
			for _, r := range j.Ranks {
				if r.PID == pid {
					return s.Start, true
				}
			}
		}
	}
	return time.Time{}, false
}

// TestAgentRestartKeepsJobStart SIGKILLs the agent mid-job before it saved
// its state (the state file is removed, as after a crash in the first
// seconds of a job), and starts it again: the job's summary must start
// when its ranks started, not when the second agent came, and its counts
// must survive.
func TestAgentRestartKeepsJobStart(t *testing.T) {
	const rounds = 8
	bin, d, ag, job := floodUnderAgent(t, rounds)
	want := rankStarted(t, job.Ranks[0])
	if w1 := rankStarted(t, job.Ranks[1]); w1.Before(want) {
		want = w1
	}
	jobID := jobOf(t, job.Ranks[0])
	ag.WaitMetrics(t, "the job's counts", func(page string) bool { return hasCounts(page, jobID) })
	first, firstKnown := summaryStart(t, d, job.Ranks[0])
	ag.Stop(t, syscall.SIGKILL)
	if err := os.Remove(filepath.Join(d.State, "agent-state.json")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	restarted := time.Now()
	ag2 := mpitest.StartAgent(t, bin, d, "")
	job.Wait(t)
	sums := finishedSummaries(t, d, ag2, job.Ranks)
	got, ok := summaryStart(t, d, job.Ranks[0])
	if !ok {
		t.Fatalf("no summary of the job")
	}
	if !got.Before(restarted) {
		t.Errorf("summary start %v is the restart's (%v), want the ranks' start %v", got, restarted, want)
	}
	if d := got.Sub(want); d > 50*time.Millisecond || d < -50*time.Millisecond {
		t.Errorf("summary start %v, want the ranks' start %v (off by %v)", got, want, d)
	}
	// Both agents read the start from /proc/PID/stat (10 ms ticks) against
	// the boot clock: they may differ by the time between two clock reads.
	if d := got.Sub(first); firstKnown && (d > 20*time.Millisecond || d < -20*time.Millisecond) {
		t.Errorf("summary start %v differs from the first agent's %v", got, first)
	}
	if n, w := sums[0].total("ob1.send_pending.new"), uint64(rounds*(floodMessages-freeListMax)); !withinTolerance(n, w) {
		t.Errorf("after a SIGKILL restart: %d new queueings, want %d within 2%%\n%s", n, w, ag2.Log(t))
	}
	ag2.Stop(t, syscall.SIGTERM)
}
