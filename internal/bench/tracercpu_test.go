package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tracerCPUIters is the allreduce loop of BenchmarkTracerCPU: long enough
// (about 9 s at 0.15 µs per call, 14 s at 0.23) that the measuring window
// sits inside the loop.
const tracerCPUIters = 60000000

// The measuring window: after MPI_Init and the attach, before the loop ends.
const (
	tracerCPUStart  = 2 * time.Second
	tracerCPUWindow = 3 * time.Second
)

// BenchmarkTracerCPU measures what mpiprobe's own process takes from a job
// traced with the default set, apart from the probes: the CPU time of all
// its threads (from /proc/PID/task/*/schedstat, in ns) during a window
// inside a long 8-byte allreduce loop, as a share of one CPU, next to the
// events the probes counted in the whole run. On a node whose cores all run
// ranks, that share is at most what mpiprobe's process can take from them.
func BenchmarkTracerCPU(b *testing.B) {
	bin, argv := allreduceJob(b, tracerCPUIters)
	var shares, events []float64
	for range b.N {
		for range 3 {
			var out, errOut bytes.Buffer
			sum := filepath.Join(b.TempDir(), "summary.json")
			cmd := exec.Command(bin, append([]string{"--json", "-o", sum, "--"}, argv...)...)
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			time.Sleep(tracerCPUStart)
			cpu0, t0 := processCPU(b, cmd.Process.Pid), time.Now()
			time.Sleep(tracerCPUWindow)
			cpu1, t1 := processCPU(b, cmd.Process.Pid), time.Now()
			if err := cmd.Wait(); err != nil {
				b.Fatalf("%v: %v\n%s%s", cmd.Args, err, out.String(), errOut.String())
			}
			if loop := workloadSecondsOf(b, out.Bytes()); loop < (tracerCPUStart + tracerCPUWindow).Seconds() {
				b.Fatalf("the loop took %.2f s: the window (%v from the start, %v long) was not inside it; raise tracerCPUIters", loop, tracerCPUStart, tracerCPUWindow)
			}
			shares = append(shares, float64(cpu1-cpu0)/float64(t1.Sub(t0).Nanoseconds()))
			events = append(events, float64(summaryEvents(b, sum)))
		}
	}
	fmt.Printf("mpiprobe's own CPU inside an allreduce loop (default set, %d runs): median %.3f%% of one CPU (runs: %s); events counted per run: %s\n",
		len(shares), 100*median(shares), percentList(shares), strings.Trim(fmt.Sprint(events), "[]"))
	b.ReportMetric(100*median(shares), "%cpu-tracer")
}

// processCPU returns the CPU time, in ns, that every thread of a process
// has run (/proc/PID/task/*/schedstat, first field).
func processCPU(b *testing.B, pid int) uint64 {
	b.Helper()
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(files) == 0 {
		b.Fatalf("no threads of pid %d: %v", pid, err)
	}
	var sum uint64
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that just exited
		}
		fields := strings.Fields(string(raw))
		if len(fields) == 0 {
			continue
		}
		ns, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			b.Fatalf("%s: %q", f, raw)
		}
		sum += ns
	}
	return sum
}

func percentList(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, fmt.Sprintf("%.3f%%", 100*x))
	}
	return strings.Join(s, " ")
}
