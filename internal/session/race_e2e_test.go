package session

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// floodJob is flood.c's run with a capped free list: rank 0 queues
// (messages - freeListMax) sends a round.
const (
	floodMessages = 2000
	freeListMax   = 64
)

func floodArgs(impl mpitest.Impl, flood string, rounds, pauseMs int) []string {
	return impl.Command(2, []string{"--mca", "pml", "ob1", "--mca", "btl", "self,vader", "--mca", "btl_vader_free_list_max", strconv.Itoa(freeListMax)},
		flood, "-n", strconv.Itoa(floodMessages), "-d", "300", "-r", strconv.Itoa(rounds), "-p", strconv.Itoa(pauseMs))
}

// waitGone waits until pid has no memory left (exited, or a zombie).
func waitGone(pid int) {
	pfs := procfs.FS{}
	for range 500 {
		if m, err := pfs.Maps(pid); err != nil || len(m) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRanksExitDuringAttach traces two jobs with -p; the ranks of the
// first are killed after discovery, right before the probes are attached
// through their /proc/PID/map_files. The session must say which pids
// exited while attaching, trace the other job, and count its queued sends
// exactly as without the race.
func TestRanksExitDuringAttach(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	flood := mpitest.Build(t, impl, "flood")
	const rounds = 2
	victims := mpitest.StartJob(t, floodArgs(impl, flood, 1, 120000), flood, 2, "mca_pml_ob1")
	survivor := mpitest.StartJob(t, floodArgs(impl, flood, rounds, 4000), flood, 4, "mca_pml_ob1")
	var ranks []int
	for _, pid := range survivor.Ranks {
		if pid != victims.Ranks[0] && pid != victims.Ranks[1] {
			ranks = append(ranks, pid)
		}
	}
	if len(ranks) != 2 {
		t.Fatalf("survivor ranks %v (victims %v)", survivor.Ranks, victims.Ranks)
	}

	var log bytes.Buffer
	calls := 0
	cfg := Config{
		PIDs: append(append([]int(nil), victims.Ranks...), ranks...), Interval: 100 * time.Millisecond,
		Out: io.Discard, Log: slog.New(slog.NewTextHandler(&log, nil)),
		beforeAttach: func(pids []int) {
			calls++
			if calls == 1 {
				for _, pid := range victims.Ranks {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				for _, pid := range victims.Ranks {
					waitGone(pid)
				}
			}
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sum, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("session failed although other targets were live: %v\n%s", err, log.String())
	}
	for _, pid := range victims.Ranks {
		if !regexp.MustCompile(`pid ` + strconv.Itoa(pid) + ` \([^)]*\) exited while attaching`).MatchString(log.String()) {
			t.Errorf("no warning that pid %d exited while attaching:\n%s", pid, log.String())
		}
	}
	if strings.Contains(log.String(), "kernel refused") {
		t.Errorf("a race reported as a kernel refusal:\n%s", log.String())
	}
	if calls < 2 {
		t.Errorf("attach tried %d times; the kill must have made the first attempt fail and a second one run", calls)
	}
	var got uint64
	for _, j := range sum.Jobs {
		for _, r := range j.Ranks {
			if r.PID == victims.Ranks[0] || r.PID == victims.Ranks[1] {
				t.Errorf("a rank that exited before being traced is in the summary: %+v", r)
			}
			for _, e := range r.Events {
				if e.Event == "ob1.send_pending.new" {
					got += e.Count
				}
			}
		}
	}
	want := uint64(rounds * (floodMessages - freeListMax))
	if d := float64(got) - float64(want); d > 0.02*float64(want) || -d > 0.02*float64(want) {
		t.Errorf("survivor's new pending sends = %d, want %d ± 2%%\n%s", got, want, log.String())
	}
	survivor.Wait(t)
}
