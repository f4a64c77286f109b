package bench

import (
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// BenchmarkStatusThroughAgent measures what asking the agent's query
// socket costs a user's `mpiprobe status` against root's own status: the
// wall time of `status --job J --json` (window 1 s) on a 3-rank MPICH
// ring of receives hung as nobody, root directly and nobody through a
// running agent, in interleaved pairs; the medians and their difference.
func BenchmarkStatusThroughAgent(b *testing.B) {
	impl := mpitest.MPICH()
	mpitest.RequireE2E(b, impl)
	bin := mpitest.BuildMpiprobe(b)
	u := mpitest.StartUserJob(b, bin, impl, mpitest.Nobody, "ring_recv_cycle", 3)
	job := u.Job
	args := []string{bin, "status", "--query-socket", u.Query, "-p", fmt.Sprintf("%d,%d,%d", job.Ranks[0], job.Ranks[1], job.Ranks[2]), "--json"}
	timed := func(argv []string) float64 {
		start := time.Now()
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", argv, err, out)
		}
		return time.Since(start).Seconds()
	}
	const pairs = 7
	var direct, through []float64
	for range b.N {
		for range pairs {
			direct = append(direct, timed(args))
			through = append(through, timed(mpitest.AsUser(mpitest.Nobody, args...)))
		}
	}
	md, mt := median(direct), median(through)
	fmt.Printf("status of 3 ranks, window 1 s, median of %d: root directly %.3f s, nobody through the agent %.3f s (%+.3f s)\n", len(direct), md, mt, mt-md)
	b.ReportMetric(md, "s-direct")
	b.ReportMetric(mt, "s-through-agent")
}
