package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// The agent's resource budget (issue: node-wide agent).
const (
	agentMaxRSSMiB = 64
	agentMaxCPUPct = 1.0
)

// BenchmarkAgentResources measures the agent's memory (peak resident set,
// VmHWM) and CPU time as a share of one core, while the node is idle and
// while 16 ranks run the flood program, and fails when either exceeds the
// budget: 64 MiB and 1% of a core.
func BenchmarkAgentResources(b *testing.B) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(b, impl)
	bin := mpitest.BuildMpiprobe(b)
	flood := mpitest.Build(b, impl, "flood")
	capped := []string{"--mca", "pml", "ob1", "--mca", "btl", "self,vader", "--mca", "btl_vader_free_list_max", "64"}
	for range b.N {
		d := mpitest.NewAgentDirs(b)
		ag := mpitest.StartAgent(b, bin, d, "")
		pid := ag.Cmd.Process.Pid
		time.Sleep(5 * time.Second) // past the start-up scan and its garbage

		idleCPU := cpuShare(b, pid, func() { time.Sleep(20 * time.Second) })
		idleRSS := peakRSSMiB(b, pid)

		var seconds float64
		loadCPU := cpuShare(b, pid, func() {
			seconds = workloadSeconds(b, impl.Command(16, capped, flood, "-n", "2000", "-d", "600", "-r", "20"))
		})
		time.Sleep(3 * time.Second) // the job's summary is written
		loadRSS := peakRSSMiB(b, pid)
		page := ag.Scrape(b)
		ag.Stop(b, syscall.SIGTERM)
		if v, _ := mpitest.MetricValue(page, "mpiprobe_jobs_finished_total", nil); v < 1 {
			b.Fatalf("the 16-rank job was not summarized:\n%s", ag.Log(b))
		}

		fmt.Printf("agent: idle %.3f%% of a core, peak RSS %.1f MiB; 16-rank flood (%.1f s): %.3f%% of a core, peak RSS %.1f MiB (budget %d MiB, %.0f%%)\n",
			idleCPU, idleRSS, seconds, loadCPU, loadRSS, agentMaxRSSMiB, agentMaxCPUPct)
		b.ReportMetric(idleCPU, "cpu%-idle")
		b.ReportMetric(loadCPU, "cpu%-16ranks")
		b.ReportMetric(max(idleRSS, loadRSS), "peak-rss-MiB")
		if max(idleRSS, loadRSS) > agentMaxRSSMiB || idleCPU > agentMaxCPUPct || loadCPU > agentMaxCPUPct {
			b.Errorf("agent over its budget of %d MiB and %.0f%% of a core", agentMaxRSSMiB, agentMaxCPUPct)
		}
	}
}

// cpuShare runs f and returns the CPU time pid used meanwhile, in percent
// of one core.
func cpuShare(b *testing.B, pid int, f func()) float64 {
	b.Helper()
	ticks := func() uint64 {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			b.Fatal(err)
		}
		// Fields after the command name: state is field 3, utime 14, stime 15.
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+2:]))
		u, _ := strconv.ParseUint(f[14-3], 10, 64)
		s, _ := strconv.ParseUint(f[15-3], 10, 64)
		return u + s
	}
	const hz = 100 // USER_HZ
	t0, c0 := time.Now(), ticks()
	f()
	c1, wall := ticks(), time.Since(t0)
	return float64(c1-c0) / hz / wall.Seconds() * 100
}

// peakRSSMiB returns the peak resident set size of pid (VmHWM).
func peakRSSMiB(b *testing.B, pid int) float64 {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatal("no VmHWM in /proc/PID/status")
	return 0
}
