package bench

import (
	"fmt"
	"os/exec"
	"path/filepath"
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
	if _, err := exec.LookPath("setpriv"); err != nil {
		mpitest.Require(b, "setpriv (Debian package util-linux)")
	}
	bin := mpitest.BuildMpiprobe(b)
	prog := mpitest.BuildSource(b, impl, filepath.Join(mpitest.RepoRoot(b), "testdata", "deadlock", "ring_recv_cycle.c"))
	mpitest.OpenToAll(b, bin)
	mpitest.OpenToAll(b, prog)
	sockDir := b.TempDir()
	mpitest.OpenToAll(b, filepath.Join(sockDir, "x"))
	d := mpitest.NewAgentDirs(b)
	d.Query = filepath.Join(sockDir, "query.sock")
	mpitest.StartAgent(b, bin, d, "")
	job := mpitest.StartJob(b, mpitest.AsUser(mpitest.Nobody, impl.Command(3, nil, prog)...), prog, 3, impl.Lib)
	job.WaitPrinted(b, "hung", 30*time.Second)
	args := []string{bin, "status", "--query-socket", d.Query, "-p", fmt.Sprintf("%d,%d,%d", job.Ranks[0], job.Ranks[1], job.Ranks[2]), "--json"}
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
