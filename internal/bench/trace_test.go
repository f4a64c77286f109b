package bench

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// traceIters is the length of the allreduce loop under trace mode: every
// call becomes a 64-byte record.
const traceIters = 100000

var traceLine = regexp.MustCompile(`trace: (\d+) MPI calls of (\d+) ranks written to \S+(; (\d+) calls LOST)?`)

// The variants of BenchmarkTraceRecording past the floors, in table order.
const (
	trFloorMulti  = ownVariants + iota // empty programs, uprobe_multi links as trace mode attaches
	trRingFull                         // trace's programs, the ring buffer full
	trNoArgs                           // the same, reading no argument
	trDrained                          // trace's programs, records drained
	trMpiprobe                         // mpiprobe trace
	trCollectives                      // mpiprobe --collectives
	trMpiP                             // mpiP preloaded, when its variable names it
)

// BenchmarkTraceRecording runs, for each Open MPI build of entryBuilds
// (a sub-benchmark each), the 8 B allreduce loop side by side, interleaved
// in one run, (a) plain, (b) with empty programs on PMPI_Allreduce's entry
// and return where mpiprobe puts them (x86.EntryPoint: past a CET build's
// endbr64), the floor of any entry/exit recording, (c) the same at the
// function's first instruction (the naive entry, single-stepped when it is
// endbr64), (d) the floor attached as trace mode attaches (uprobe_multi
// links, a cheaper path in the kernel), then trace mode taken apart on
// PMPI_Allreduce alone: (e) its programs finding the ring buffer full (the
// thread state, the arguments, the clock; no record written), (f) the same
// without reading arguments, (g) its programs writing every record to a
// ring buffer the benchmark drains (the record and the bare reading), then
// (h) mpiprobe trace, which probes every MPI function and runs the real
// recorder, (i) mpiprobe --collectives and, when the build's mpiP
// variable names libmpiP.so, (j) the mpiP profiler preloaded. It reports
// µs per call added to (a), each variant's ratio to the floor (of the
// medians, and within each round: perCall.roundRatios, the figure the
// targets are judged by), and the calls trace mode recorded and lost: a
// loss means the reader did not keep up.
func BenchmarkTraceRecording(b *testing.B) {
	forEachBuild(b, traceIters, func(b *testing.B, bin string, j *entryJob) {
		parts := newTraceParts(b, j)
		file := filepath.Join(b.TempDir(), "bench.trace")
		var recorded, lost, expected uint64
		names := append(j.floorNames(),
			"  the floor on uprobe_multi links, as trace attaches",
			"trace programs on PMPI_Allreduce, ring full (nothing written)",
			"  the same without reading arguments",
			"trace programs on PMPI_Allreduce, records written and drained",
			"mpiprobe trace (every MPI function, real recorder)",
			"mpiprobe --collectives")
		if j.mpiP != "" {
			names = append(names, "mpiP (LD_PRELOAD "+j.mpiP+")")
		}
		run := func(variant int) float64 {
			defer j.attachFloor(variant)()
			switch variant {
			case trFloorMulti:
				defer j.floors.multi()()
			case trRingFull:
				defer parts.attach(b, parts.full, parts.allreduce, false)()
			case trNoArgs:
				defer parts.attach(b, parts.full, parts.noArgs, false)()
			case trDrained:
				defer parts.attach(b, parts.drained, parts.allreduce, true)()
			case trMpiprobe:
				out := combinedOutput(b, append([]string{bin, "trace", "-o", file, "--"}, j.argv()...))
				m := traceLine.FindSubmatch(out)
				if m == nil {
					b.Fatalf("no trace: line in\n%s", out)
				}
				n, _ := strconv.ParseUint(string(m[1]), 10, 64)
				l, _ := strconv.ParseUint(string(m[4]), 10, 64)
				recorded, lost = recorded+n, lost+l
				// Per rank: Init, Comm_rank, 1000 warm-up allreduces, Barrier,
				// 2 Wtime, the loop, Finalize.
				expected += entryRanks * (traceIters + 1006)
				return workloadCPUOf(b, out)
			case trCollectives:
				return j.collectivesCPU(b, bin)
			case trMpiP:
				return loopCPU(b, j.mpiPArgv())
			}
			return loopCPU(b, j.argv())
		}
		t := runRounds(b, names, traceIters, entryRounds, rotated, run)
		t.printTable(j.title(), t.addedColumn("added vs no probe"),
			column{header: "x floor (medians)", format: "%.2f", value: func(v int) float64 { return t.added(v) / t.added(floorProbed) }},
			t.roundRatioColumn("x floor per round (median, 25-75%)", floorProbed),
			t.roundRatioColumn("x multi floor per round", trFloorMulti), spreadColumn(t))
		floor, trace := t.added(floorProbed), t.added(trMpiprobe)
		ratio, q1, q3 := t.ratioStats(trMpiprobe, floorProbed)
		multi, _, _ := t.ratioStats(trMpiprobe, trFloorMulti)
		naive, _, _ := t.ratioStats(floorNaive, floorProbed)
		coll, _, _ := t.ratioStats(trCollectives, floorProbed)
		fmt.Printf("%s: trace mode adds %.3f µs per call, %.2f x the entry+return floor per round (25-75%%: %.2f-%.2f; floor %.3f µs; target 1.2 x), %.2f x the floor on uprobe_multi links; --collectives %.2f x; the floor at +0 %.2f x; %s; recorded %d of %d calls, lost %d\n",
			j.build.name, trace, ratio, q1, q3, floor, multi, coll, naive, j.mpiPSummary(t, floorProbed, trMpiprobe, trCollectives), recorded, expected, lost)
		b.ReportMetric(trace, "µs-trace-per-call")
		b.ReportMetric(multi, "x-multi-floor")
		b.ReportMetric(coll, "x-floor-collectives")
		j.reportFloors(b, t, trMpiprobe, trMpiP)
		b.ReportMetric(float64(lost), "calls-lost")
		if recorded+lost != expected {
			b.Errorf("recorded %d + lost %d calls, the program makes %d", recorded, lost, expected)
		}
	})
}

// allreduceJob builds mpiprobe and the 8 B allreduce program, and returns
// the binary and the job's command line: 2 ranks on vader, iters calls.
func allreduceJob(b *testing.B, iters int) (bin string, argv []string) {
	b.Helper()
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(b, impl)
	bin = mpitest.BuildMpiprobe(b)
	allreduce := mpitest.Build(b, impl, "allreduce")
	return bin, impl.Command(2, []string{"--mca", "pml", "ob1", "--mca", "btl", "self,vader"}, allreduce, strconv.Itoa(iters))
}
