package metrics_test

import (
	"bytes"
	"fmt"
	"math"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/metrics"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// nastyValues are label values a job id, host name or event name could
// carry in the worst case.
var nastyValues = []string{
	`quote"inside`,
	`back\slash\`,
	"new\nline",
	"\x1b[31mred\x1b[0m",
	"bad\xff\xfeutf8",
	"\xc3",
	"tab\tcr\rnul\x00",
	"naïve €",
	`\n`,
	"",
	" ",
	"}",
	`",evil="1`,
}

// agentFamilies is a page like the agent's: two hosts' jobs and ranks,
// with nasty job ids among them.
func agentFamilies() []metrics.Family {
	events := []string{"ob1.send_pending.new", "ob1.send_pending.drain", "ob1.send_pending.retry"}
	jobs := append([]string{"4242", "slurm.17.0"}, nastyValues...)
	var ev, initSec []metrics.Sample
	for h, host := range []string{"node01", "node-02.cluster"} {
		for j, job := range jobs {
			for rank := range 3 {
				labels := []metrics.Label{{Name: "host", Value: host}, {Name: "job", Value: job}, {Name: "rank", Value: fmt.Sprint(rank)}}
				initSec = append(initSec, metrics.Sample{Labels: labels, Value: 0.25 * float64(rank+j+h)})
				for e, event := range events {
					ev = append(ev, metrics.Sample{
						Labels: append(labels[:3:3], metrics.Label{Name: "event", Value: event}),
						Value:  float64(1000*e + 10*j + rank),
					})
				}
			}
		}
	}
	initSec[0].Value = math.NaN()
	initSec[1].Value = math.Inf(1)
	var unavailable []metrics.Sample
	for _, event := range append([]string{"ob1.send_pending.retry"}, nastyValues...) {
		unavailable = append(unavailable, metrics.Sample{Labels: []metrics.Label{{Name: "event", Value: event}}, Value: 1})
	}
	return []metrics.Family{
		{Name: "mpiprobe_events_total", Kind: metrics.Counter, Help: "Unusual MPI library events seen, by host, job, rank and event.", Samples: ev},
		{Name: "mpiprobe_jobs_active", Kind: metrics.Gauge, Help: "MPI jobs traced now.", Samples: []metrics.Sample{{Value: float64(len(jobs))}}},
		{Name: "mpiprobe_ranks_active", Kind: metrics.Gauge, Help: "MPI ranks traced now.", Samples: []metrics.Sample{{Value: float64(3 * len(jobs))}}},
		{Name: "mpiprobe_jobs_finished_total", Kind: metrics.Counter, Help: "MPI jobs that ended since the agent started.", Samples: []metrics.Sample{{Value: 17}}},
		{Name: "mpiprobe_probes_attached", Kind: metrics.Gauge, Help: "Uprobes attached now.", Samples: []metrics.Sample{{Value: 42}}},
		{Name: "mpiprobe_events_unavailable", Kind: metrics.Gauge, Help: "1 for each event whose probe site was not found in the MPI library.", Samples: unavailable},
		{Name: "mpiprobe_map_drops_total", Kind: metrics.Counter, Help: "Entries the BPF maps could not hold, by map. Nonzero means undercounting.\nRaise the map sizes.", Samples: []metrics.Sample{
			{Labels: []metrics.Label{{Name: "what", Value: "pids"}}, Value: 0},
			{Labels: []metrics.Label{{Name: "what", Value: "comms"}}, Value: 3},
		}},
		{Name: "mpiprobe_mpi_init_seconds", Kind: metrics.Gauge, Help: `Seconds MPI_Init took, by host, job and rank (\ is a backslash).`, Samples: initSec},
	}
}

func TestPromtool(t *testing.T) {
	for _, maxSeries := range []int{0, 1000, 100, 1} {
		t.Run(fmt.Sprint("maxSeries=", maxSeries), func(t *testing.T) {
			var buf bytes.Buffer
			if err := metrics.Encode(&buf, agentFamilies(), maxSeries); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"# TYPE mpiprobe_events_total counter\n", `job="quote\"inside"`, `job="new\nline"`, "job=\"bad\uFFFDutf8\""} {
				if maxSeries == 0 && !strings.Contains(buf.String(), want) {
					t.Errorf("page lacks %q", want)
				}
			}
			mpitest.CheckWithPromtool(t, buf.Bytes())
		})
	}
}

// TestPromtoolComplains makes sure the check is not vacuous: the helper
// fails on a page promtool rejects (invalid UTF-8) or lints (a counter
// without _total, no help text).
func TestPromtoolComplains(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		mpitest.Require(t, "promtool (Debian package prometheus)")
	}
	for _, page := range []string{
		"# HELP a h\n# TYPE a gauge\na{x=\"\xff\"} 1\n",
		"# HELP a h\n# TYPE a counter\na 1\n",
		"# HELP a\n# TYPE a gauge\na 1\n",
	} {
		ft := &fakeT{TB: t}
		mpitest.CheckWithPromtool(ft, []byte(page))
		if !ft.failed {
			t.Errorf("CheckWithPromtool accepted %q", page)
		}
	}
}

// fakeT records a failure or a skip instead of reporting it.
type fakeT struct {
	testing.TB
	failed, skipped bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }

func (f *fakeT) Fatal(...any) { f.failed = true; runtime.Goexit() }
func (f *fakeT) Skip(...any)  { f.skipped = true; runtime.Goexit() }

// TestPromtoolMissing: without promtool, the helper skips, or fails under
// MPIPROBE_E2E=require.
func TestPromtoolMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, mode := range []string{"", "require"} {
		t.Setenv("MPIPROBE_E2E", mode)
		ft := &fakeT{TB: t}
		done := make(chan struct{})
		go func() { // Skip and Fatal end the goroutine
			defer close(done)
			mpitest.CheckWithPromtool(ft, []byte("# HELP a h\n# TYPE a gauge\na 1\n"))
		}()
		<-done
		if want := mode == ""; ft.skipped != want || ft.failed == want {
			t.Errorf("MPIPROBE_E2E=%q: skipped %v, failed %v", mode, ft.skipped, ft.failed)
		}
	}
}
