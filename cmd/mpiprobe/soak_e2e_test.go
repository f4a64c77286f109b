package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// The soak (make soak, not in CI): the agent through MPIPROBE_SOAK_JOBS
// short jobs in a row, then one job of 16 ranks for MPIPROBE_SOAK_MINUTES.
// /proc/AGENTPID is sampled every second. It checks: peak RSS (VmHWM) at
// most 64 MiB, the agent's CPU over the long job at most 1% of one core,
// no file descriptor growth after the first tenth of the short jobs, the
// state files within retention (retention.jobs), and every summary kept
// with the count its program queued.

// agentSample is one reading of the agent's /proc entries.
type agentSample struct {
	at     time.Time
	rssKiB uint64 // VmRSS
	hwmKiB uint64 // VmHWM, the peak
	cpu    uint64 // utime + stime, clock ticks
	fds    int
	// bpfFDs are the fds of BPF links, programs and maps and perf events:
	// one set per probe, growing with the libraries attached.
	bpfFDs  int
	sampled bool
}

// readAgent reads pid's /proc/PID/status, stat and fd directory.
func readAgent(pid int) agentSample {
	s := agentSample{at: time.Now()}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			s.rssKiB = v
		case "VmHWM:":
			s.hwmKiB = v
		}
	}
	if b, err = os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if i := bytes.LastIndexByte(b, ')'); i > 0 {
			f := strings.Fields(string(b[i+1:]))
			if len(f) > 12 {
				u, _ := strconv.ParseUint(f[11], 10, 64) // field 14, utime
				k, _ := strconv.ParseUint(f[12], 10, 64) // field 15, stime
				s.cpu = u + k
			}
		}
	}
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	s.fds = len(ents)
	for _, e := range ents {
		l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		if strings.HasPrefix(l, "anon_inode:bpf") || l == "anon_inode:[perf_event]" {
			s.bpfFDs++
		}
	}
	s.sampled = true
	return s
}

// sampler samples the agent every second until stopped.
type sampler struct {
	mu      sync.Mutex
	samples []agentSample
	stop    chan struct{}
	done    chan struct{}
}

func startSampler(pid int) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			if r := readAgent(pid); r.sampled {
				s.mu.Lock()
				s.samples = append(s.samples, r)
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return s
}

func (s *sampler) last() agentSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samples) == 0 {
		return agentSample{}
	}
	return s.samples[len(s.samples)-1]
}

func (s *sampler) end() []agentSample {
	close(s.stop)
	<-s.done
	return s.samples
}

func TestSoak(t *testing.T) {
	jobs := envInt(t, "MPIPROBE_SOAK_JOBS", -1)
	minutes := envInt(t, "MPIPROBE_SOAK_MINUTES", -1)
	if jobs < 0 && minutes < 0 {
		t.Skip("the soak runs with MPIPROBE_SOAK_JOBS or MPIPROBE_SOAK_MINUTES set (make soak)")
	}
	ompi := mpitest.OpenMPI()
	mpitest.RequireE2E(t, ompi)
	bin := mpitest.BuildMpiprobe(t)
	// A copy of flood under a name of its own: the agent is node-wide and
	// also writes summaries of other tests' floods.
	flood := filepath.Join(t.TempDir(), "soakflood")
	if b, err := os.ReadFile(mpitest.Build(t, ompi, "flood")); err != nil || os.WriteFile(flood, b, 0o755) != nil {
		t.Fatalf("copy flood: %v", err)
	}
	soak := mpitest.Build(t, ompi, "soak")
	d := mpitest.NewAgentDirs(t)
	const keep = 50
	if err := os.WriteFile(d.Config, []byte(fmt.Sprintf("C = 500\nT = 1s\nmetrics_ttl = 1m\nretention.jobs = %d\n", keep)), 0o600); err != nil {
		t.Fatal(err)
	}
	ag := mpitest.StartAgent(t, bin, d, "")
	pid := ag.Cmd.Process.Pid
	smp := startSampler(pid)

	// Short jobs: a capped flood of 200 messages, one round: 136 sends
	// queued each.
	const shortN = 200
	var warm agentSample
	var warmProbes float64
	var failed int
	started := time.Now()
	for i := 0; i < jobs; i++ {
		argv := ompi.Command(2, floodMCA(true), flood, "-n", strconv.Itoa(shortN), "-d", "100", "-r", "1")
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			failed++
			t.Errorf("short job %d: %v\n%s", i, err, out)
		}
		if i == jobs/10 {
			time.Sleep(2 * time.Second) // the job's end is read
			warm = readAgent(pid)
			warmProbes = probesAttached(t, ag)
		}
	}
	shortTook := time.Since(started)
	time.Sleep(3 * time.Second)
	afterShort := readAgent(pid)
	shortProbes := probesAttached(t, ag)

	// The summaries kept: at most keep, each with its count.
	files, _ := filepath.Glob(filepath.Join(d.State, "jobs", "*.json"))
	var wrong, mine, finished int
	for _, f := range files {
		var s struct {
			agentSummary
			Jobs []struct {
				Ranks []struct {
					Comm string `json:"comm"`
					End  struct {
						State string `json:"state"`
					} `json:"end"`
				} `json:"ranks"`
			} `json:"jobs"`
		}
		b, err := os.ReadFile(f)
		if err != nil || json.Unmarshal(b, &s) != nil || json.Unmarshal(b, &s.agentSummary) != nil {
			t.Errorf("summary %s unreadable: %v", f, err)
			continue
		}
		running := false
		for _, j := range s.Jobs {
			for _, r := range j.Ranks {
				running = running || r.End.State == "running"
			}
		}
		if !running {
			finished++
		}
		if len(s.Jobs) != 1 || len(s.Jobs[0].Ranks) == 0 || s.Jobs[0].Ranks[0].Comm != "soakflood" {
			continue // another test's job
		}
		mine++
		if got := s.agentSummary.total("ob1.send_pending.new"); got != shortN-freeListMax {
			wrong++
			t.Logf("summary %s: %d queued sends, want %d", filepath.Base(f), got, shortN-freeListMax)
		}
	}
	// Running jobs (other tests' too) are kept besides retention.jobs.
	if jobs > 0 && finished > keep {
		t.Errorf("%d summaries of finished jobs kept, retention.jobs is %d", finished, keep)
	}

	// The long job: 16 ranks for the given minutes.
	var cpuPct float64
	var longRounds string
	var longCount uint64
	if minutes > 0 {
		secs := minutes * 60
		argv := ompi.Command(16, floodMCA(true), soak, "-t", strconv.Itoa(secs), "-n", strconv.Itoa(shortN))
		cmd := exec.Command(argv[0], argv[1:]...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		ranks, err := mpitest.WaitRanksFor(60*time.Second, soak, 16, "libmpi.so.40")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second) // seen by the agent
		a := readAgent(pid)
		if err := cmd.Wait(); err != nil {
			t.Errorf("long job: %v\n%s", err, out.String())
		}
		b := readAgent(pid)
		ticks := float64(b.cpu - a.cpu)
		cpuPct = 100 * ticks / 100 / b.at.Sub(a.at).Seconds()
		longRounds = strings.Join(strings.Fields(out.String()), " ")
		sums := finishedSummaries(t, d, ag, ranks)
		longCount = sums[0].total("ob1.send_pending.new")
		if want := uint64(secs * (shortN - freeListMax)); longCount != want {
			t.Errorf("long job: %d sends queued counted, the program queued %d", longCount, want)
		}
	}
	samples := smp.end()
	var peakHWM, peakRSS uint64
	maxFDs := 0
	for _, s := range samples {
		peakHWM = max(peakHWM, s.hwmKiB)
		peakRSS = max(peakRSS, s.rssKiB)
		maxFDs = max(maxFDs, s.fds)
	}
	last := readAgent(pid)
	endProbes := probesAttached(t, ag)
	report := fmt.Sprintf("soak: %d short jobs in %v (%d failed), %d summaries kept (%d of finished jobs, retention %d), %d of them this soak's, %d with a wrong count; "+
		"peak RSS %.1f MiB (VmHWM %.1f MiB), RSS at the end %.1f MiB; fds (BPF/probes attached) %d (%d/%.0f) after the first tenth, %d (%d/%.0f) after the short jobs, %d (%d/%.0f) at the end, at most %d; "+
		"long job %d min of 16 ranks: agent CPU %.2f%% of one core, %d sends queued counted; %d samples",
		jobs, shortTook.Round(time.Second), failed, len(files), finished, keep, mine, wrong,
		float64(peakRSS)/1024, float64(peakHWM)/1024, float64(last.rssKiB)/1024,
		warm.fds, warm.bpfFDs, warmProbes, afterShort.fds, afterShort.bpfFDs, shortProbes, last.fds, last.bpfFDs, endProbes, maxFDs,
		minutes, cpuPct, longCount, len(samples))
	ag.Stop(t, syscall.SIGTERM)
	fmt.Println(report)
	t.Log(report, longRounds)
	if peakHWM > 64*1024 {
		t.Errorf("peak RSS %.1f MiB, want at most 64 MiB", float64(peakHWM)/1024)
	}
	if minutes > 0 && cpuPct > 1 {
		t.Errorf("agent CPU %.2f%% of one core over the long job, want at most 1%%", cpuPct)
	}
	// Other fds must not grow; BPF fds only with the probes attached (new
	// library files, e.g. other tests' copies of libmpi).
	if other0, other1 := warm.fds-warm.bpfFDs, last.fds-last.bpfFDs; jobs >= 10 && other1 > other0 {
		t.Errorf("file descriptors other than BPF's grew from %d to %d", other0, other1)
	}
	if jobs >= 10 && float64(last.bpfFDs-warm.bpfFDs) > 3*(endProbes-warmProbes) {
		t.Errorf("BPF file descriptors grew from %d to %d while the probes attached went from %.0f to %.0f", warm.bpfFDs, last.bpfFDs, warmProbes, endProbes)
	}
	if wrong > 0 {
		t.Errorf("%d of %d kept summaries do not count the %d sends their job queued", wrong, len(files), shortN-freeListMax)
	}
}

// probesAttached reads the agent's mpiprobe_probes_attached.
func probesAttached(t *testing.T, ag *mpitest.Agent) float64 {
	t.Helper()
	v, _ := mpitest.MetricValue(ag.Scrape(t), "mpiprobe_probes_attached", nil)
	return v
}
