package report

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/jobstore"
)

// BenchmarkReadShared reads and merges one job's parts from a shared
// directory: nodes parts of 4 ranks each, every rank with one event (as
// a flood rank has two), as the agents write them. It reports the size of
// a part and the time per merge (make bench).
func BenchmarkReadShared(b *testing.B) {
	for _, nodes := range []int{16, 256, 1024} {
		b.Run(strconv.Itoa(nodes)+"nodes", func(b *testing.B) {
			sh := jobstore.Shared{Dir: b.TempDir()}
			list := fmt.Sprintf("n[0000-%04d]", nodes-1)
			for i := range nodes {
				saveParts(b, sh, nodePart(fmt.Sprintf("n%04d", i), "7.0", at(5000), true, list, 4*i, 10, 20, 30, 40))
			}
			fi, err := os.Stat(sh.PartPath("7.0", "n0000"))
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				ss, err := ReadShared(context.Background(), sh, "7")
				if err != nil || len(ss.Summary.Jobs[0].Ranks) != 4*nodes || ss.Partial {
					b.Fatalf("merged %d ranks, partial %v, %v", len(ss.Summary.Jobs[0].Ranks), ss.Partial, err)
				}
			}
			b.ReportMetric(float64(fi.Size()), "part-bytes")
			b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/merge")
		})
	}
}
