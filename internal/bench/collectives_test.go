package bench

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"testing"
)

// collIters is the length of the allreduce loop under collective tracking.
const collIters = 100000

// worldAllreduce finds the MPI_Allreduce count of the summary's first
// communicator of entryRanks ranks: MPI_COMM_WORLD, named WORLD where
// mpiprobe knows the build's communicator layout and by its handle where
// it does not.
var worldAllreduce = regexp.MustCompile(`(?m)^  (?:WORLD \(size ` + strconv.Itoa(entryRanks) + `\)|comm 0x[0-9a-f]+ \(size unknown, local handle\)).*\n(?:    .*\n)*?    MPI_Allreduce\s+ranks? \S+: ([\d,]+)`)

// The variants of BenchmarkCollectives, in table order.
const (
	collMpiprobe = ownVariants + iota // mpiprobe --collectives
	collMpiP                          // mpiP preloaded, when its variable names it
)

// collectivesCPU runs the job under mpiprobe --collectives, checks that
// it counted every MPI_Allreduce, and returns the loop's CPU seconds.
func (j *entryJob) collectivesCPU(b *testing.B, bin string) float64 {
	b.Helper()
	out := combinedOutput(b, append([]string{bin, "--collectives", "--"}, j.argv()...))
	m := worldAllreduce.FindSubmatch(out)
	if m == nil {
		b.Fatalf("no MPI_Allreduce count on a communicator of %d ranks in\n%s", entryRanks, out)
	}
	n, _ := strconv.ParseUint(string(bytes.ReplaceAll(m[1], []byte(","), nil)), 10, 64)
	if want := uint64(j.iters + 1000); n != want {
		b.Errorf("counted %d MPI_Allreduce per rank, the program makes %d", n, want)
	}
	return workloadCPUOf(b, out)
}

// BenchmarkCollectives runs, for each Open MPI build of entryBuilds (a
// sub-benchmark each), the 8 B allreduce loop (a) plain, (b) with empty
// programs on PMPI_Allreduce's entry and return where mpiprobe puts them
// (x86.EntryPoint), the floor of any entry/exit tracking, (c) the same at
// the function's first instruction, (d) under mpiprobe --collectives,
// which probes the entry and return of every collective, and (e) with
// mpiP preloaded when the build's variable names it. It reports the µs
// per call each adds and their ratios to the floor within each round
// (target: 1.2 x the floor, and below mpiP), and checks that every call
// was counted.
func BenchmarkCollectives(b *testing.B) {
	forEachBuild(b, collIters, func(b *testing.B, bin string, j *entryJob) {
		run := func(variant int) float64 {
			defer j.attachFloor(variant)()
			switch variant {
			case collMpiprobe:
				return j.collectivesCPU(b, bin)
			case collMpiP:
				return loopCPU(b, j.mpiPArgv())
			}
			return loopCPU(b, j.argv())
		}
		names := append(j.floorNames(), "mpiprobe --collectives")
		if j.mpiP != "" {
			names = append(names, "mpiP (LD_PRELOAD "+j.mpiP+")")
		}
		t := runRounds(b, names, collIters, entryRounds, rotated, run)
		t.printTable(j.title(), t.addedColumn("added vs no probe"),
			t.roundRatioColumn("x floor per round (median, 25-75%)", floorProbed), spreadColumn(t))
		floor, coll := t.added(floorProbed), t.added(collMpiprobe)
		ratio, q1, q3 := t.ratioStats(collMpiprobe, floorProbed)
		naive, _, _ := t.ratioStats(floorNaive, floorProbed)
		fmt.Printf("%s: collective tracking adds %.3f µs per call, %.2f x the entry+return floor per round (25-75%%: %.2f-%.2f; floor %.3f µs; target 1.2 x); the floor at +0 %.2f x; %s\n",
			j.build.name, coll, ratio, q1, q3, floor, naive, j.mpiPSummary(t, floorProbed, collMpiprobe))
		b.ReportMetric(coll, "µs-collectives-per-call")
		j.reportFloors(b, t, collMpiprobe, collMpiP)
	})
}
