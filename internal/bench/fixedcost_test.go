package bench

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// fixedRuns is how many traced runs of a command that does nothing
// BenchmarkTraceFixedCost times.
const fixedRuns = 15

// BenchmarkTraceFixedCost measures what `mpiprobe trace -- CMD` adds to a
// command whatever it does: startup, from running mpiprobe to the command
// starting with every probe live, and shutdown, from the command's end to
// mpiprobe's exit with the trace file written. The command prints the
// CLOCK_REALTIME ns at which it runs and exits at once, so that both are
// read on one clock.
func BenchmarkTraceFixedCost(b *testing.B) {
	mpitest.RequireE2E(b)
	bin := mpitest.BuildMpiprobe(b)
	file := filepath.Join(b.TempDir(), "fixed.trace")
	var startup, shutdown []float64
	for range b.N {
		for range fixedRuns {
			var out, errOut bytes.Buffer
			cmd := exec.Command(bin, "trace", "-o", file, "--", "date", "+%s%N")
			cmd.Stdout, cmd.Stderr = &out, &errOut
			t0 := time.Now()
			if err := cmd.Run(); err != nil {
				b.Fatalf("mpiprobe trace: %v\n%s%s", err, out.String(), errOut.String())
			}
			t1 := time.Now()
			ns, err := strconv.ParseInt(strings.SplitN(out.String(), "\n", 2)[0], 10, 64)
			if err != nil {
				b.Fatalf("no date in %q", out.String())
			}
			at := time.Unix(0, ns)
			startup = append(startup, float64(at.Sub(t0).Microseconds())/1000)
			shutdown = append(shutdown, float64(t1.Sub(at).Microseconds())/1000)
		}
	}
	fmt.Printf("mpiprobe trace fixed cost over %d runs: startup median %.1f ms (25%%-75%% %.1f-%.1f), shutdown median %.1f ms (25%%-75%% %.1f-%.1f)\n",
		len(startup), median(startup), quantile(startup, 0.25), quantile(startup, 0.75),
		median(shutdown), quantile(shutdown, 0.25), quantile(shutdown, 0.75))
	b.ReportMetric(median(startup), "ms-startup")
	b.ReportMetric(median(shutdown), "ms-shutdown")
}
