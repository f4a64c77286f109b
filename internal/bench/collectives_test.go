package bench

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// collIters is the length of the allreduce loop under collective tracking.
const collIters = 500000

var worldAllreduce = regexp.MustCompile(`(?m)^  WORLD \(size 2\).*\n(?:    .*\n)*?    MPI_Allreduce\s+ranks 0-1: ([\d,]+)`)

// BenchmarkCollectives runs the 8 B allreduce loop at 2 ranks (a) plain,
// (b) with empty programs on PMPI_Allreduce's entry and return, the floor
// of any entry/exit tracking, and (c) under mpiprobe --collectives, which
// probes the entry and return of every collective. It reports the µs per
// call (b) and (c) add and their ratio (target: 1.15 x the floor), and
// checks that every call was counted.
func BenchmarkCollectives(b *testing.B) {
	bin, argv, floors := allreduceSetup(b, collIters)
	run := func(variant int) float64 {
		switch variant {
		case 1:
			defer floors.single()()
		case 2:
			var out bytes.Buffer
			cmd := exec.Command(bin, append([]string{"--collectives", "--"}, argv...)...)
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				b.Fatalf("mpiprobe --collectives: %v\n%s", err, out.String())
			}
			m := worldAllreduce.FindSubmatch(out.Bytes())
			if m == nil {
				b.Fatalf("no MPI_Allreduce count on WORLD for ranks 0-1 in\n%s", out.String())
			}
			n, _ := strconv.ParseUint(string(bytes.ReplaceAll(m[1], []byte(","), nil)), 10, 64)
			if want := uint64(collIters + 1000); n != want {
				b.Errorf("counted %d MPI_Allreduce per rank, the program makes %d", n, want)
			}
			return workloadSecondsOf(b, out.Bytes())
		}
		return workloadSeconds(b, argv)
	}
	names := []string{"no probe", "empty uprobe+uretprobe on PMPI_Allreduce", "mpiprobe --collectives"}
	t := runPerCall(b, names, collIters, rotated, run)
	t.printTable("allreduce 8 B, 2 ranks", t.addedColumn("added vs no probe"))
	floor, coll := t.added(1), t.added(2)
	fmt.Printf("collective tracking adds %.3f µs per call, %.2f x the entry+return floor (%.3f µs; target 1.15 x)\n",
		coll, coll/floor, floor)
	b.ReportMetric(coll, "µs-collectives-per-call")
	b.ReportMetric(floor, "µs-floor-per-call")
	b.ReportMetric(coll/floor, "x-floor")
}
