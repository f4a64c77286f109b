package bench

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// traceIters is the length of the allreduce loop under trace mode: every
// call becomes a 64-byte record, 2 ranks x 500k calls = 64 MB of records.
const traceIters = 500000

var traceLine = regexp.MustCompile(`trace: (\d+) MPI calls of (\d+) ranks written to \S+(; (\d+) calls LOST)?`)

// BenchmarkTraceRecording runs the 8 B allreduce loop at 2 ranks side by
// side, interleaved in one run, (a) plain, (b) with empty programs on
// PMPI_Allreduce's entry and return, the floor of any entry/exit
// recording, then trace mode taken apart on PMPI_Allreduce alone: (c)
// its programs finding the ring buffer full (the thread state, the
// arguments, the clock; no record written), (d) the same without reading
// arguments, (e) its programs writing every record to a ring buffer the
// benchmark drains (the record and the bare reading), then (f) mpiprobe
// trace, which probes every MPI function and runs the real recorder, (g)
// mpiprobe --collectives and, when MPIPROBE_MPIP names libmpiP.so, (h) the
// mpiP profiler preloaded. It reports µs per call added to (a), each
// variant's ratio to the floor (of the medians, and within each round:
// perCall.roundRatios, the figure the target is judged by), and the calls
// trace mode recorded and lost: a loss means the reader did not keep up.
func BenchmarkTraceRecording(b *testing.B) {
	bin, argv, attachFloor := allreduceSetup(b, traceIters)
	parts := newTraceParts(b)
	file := filepath.Join(b.TempDir(), "bench.trace")
	var recorded, lost, expected uint64
	names := []string{"no probe", "empty uprobe+uretprobe on PMPI_Allreduce (floor)",
		"trace programs on PMPI_Allreduce, ring full (nothing written)",
		"  the same without reading arguments",
		"trace programs on PMPI_Allreduce, records written and drained",
		"mpiprobe trace (every MPI function, real recorder)",
		"mpiprobe --collectives"}
	mpiP := mpiPLib()
	if mpiP != "" {
		names = append(names, "mpiP (LD_PRELOAD "+mpiP+")")
	}
	run := func(variant int) float64 {
		switch variant {
		case 1:
			defer attachFloor()()
		case 2:
			defer parts.attach(b, parts.full, parts.allreduce, false)()
		case 3:
			defer parts.attach(b, parts.full, parts.noArgs, false)()
		case 4:
			defer parts.attach(b, parts.drained, parts.allreduce, true)()
		case 5:
			var out bytes.Buffer
			cmd := exec.Command(bin, append([]string{"trace", "-o", file, "--"}, argv...)...)
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				b.Fatalf("mpiprobe trace: %v\n%s", err, out.String())
			}
			m := traceLine.FindStringSubmatch(out.String())
			if m == nil {
				b.Fatalf("no trace: line in\n%s", out.String())
			}
			n, _ := strconv.ParseUint(m[1], 10, 64)
			l, _ := strconv.ParseUint(m[4], 10, 64)
			recorded, lost = recorded+n, lost+l
			// Per rank: Init, Comm_rank, 1000 warm-up allreduces, Barrier,
			// 2 Wtime, the loop, Finalize.
			expected += 2 * (traceIters + 1006)
			return workloadSecondsOf(b, out.Bytes())
		case 6:
			return workloadSeconds(b, append([]string{bin, "--collectives", "--"}, argv...))
		case 7:
			return workloadSeconds(b, withPreload(argv, mpiP))
		}
		return workloadSeconds(b, argv)
	}
	t := runPerCall(b, names, traceIters, rotated, run)
	t.printTable("allreduce 8 B, 2 ranks", t.addedColumn("added vs no probe"),
		column{header: "x floor (medians)", format: "%.2f", value: func(v int) float64 { return t.added(v) / t.added(1) }},
		t.roundRatioColumn("x floor per round (median, 25-75%)", 1), spreadColumn(t))
	floor, trace := t.added(1), t.added(5)
	ratio, q1, q3 := t.ratioStats(5, 1)
	mpiPRatio := ""
	if mpiP != "" {
		m, _, _ := t.ratioStats(7, 1)
		mpiPRatio = fmt.Sprintf("; mpiP %.2f x", m)
	}
	coll, _, _ := t.ratioStats(6, 1)
	fmt.Printf("trace mode adds %.3f µs per call, %.2f x the entry+return floor per round (25-75%%: %.2f-%.2f; floor %.3f µs; target 1.2 x); --collectives %.2f x%s; recorded %d of %d calls, lost %d\n",
		trace, ratio, q1, q3, floor, coll, mpiPRatio, recorded, expected, lost)
	b.ReportMetric(trace, "µs-trace-per-call")
	b.ReportMetric(floor, "µs-floor-per-call")
	b.ReportMetric(ratio, "x-floor")
	b.ReportMetric(float64(lost), "calls-lost")
	if recorded+lost != expected {
		b.Errorf("recorded %d + lost %d calls, the program makes %d", recorded, lost, expected)
	}
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

// allreduceSetup prepares the entry/exit benchmarks: the mpiprobe binary,
// the 8 B allreduce job at 2 ranks on vader for iters iterations, and a
// function attaching the floor (empty programs on PMPI_Allreduce's entry
// and return) that returns its detach.
func allreduceSetup(b *testing.B, iters int) (bin string, argv []string, floor func() func()) {
	b.Helper()
	bin, argv = allreduceJob(b, iters)
	objs := loadObjects(b)
	ex := openLibmpi(b)
	return bin, argv, func() func() {
		in, err := ex.Uprobe("PMPI_Allreduce", objs.Empty, nil)
		if err != nil {
			b.Fatal(err)
		}
		out, err := ex.Uretprobe("PMPI_Allreduce", objs.Empty, nil)
		if err != nil {
			in.Close()
			b.Fatal(err)
		}
		return func() {
			out.Close()
			in.Close()
		}
	}
}
