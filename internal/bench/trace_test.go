package bench

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/cilium/ebpf/link"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// traceIters is the length of the allreduce loop under trace mode: every
// call becomes a 64-byte record, 2 ranks x 500k calls = 64 MB of records.
const traceIters = 500000

var traceLine = regexp.MustCompile(`trace: (\d+) MPI calls of (\d+) ranks written to \S+(; (\d+) calls LOST)?`)

// The variants of BenchmarkTraceRecording, in table order.
const (
	trNone        = iota // no probe
	trFloor              // empty programs, a uprobe and a uretprobe link
	trFloorMulti         // empty programs, uprobe_multi links as trace mode attaches
	trRingFull           // trace's programs, the ring buffer full
	trNoArgs             // the same, reading no argument
	trDrained            // trace's programs, records drained
	trMpiprobe           // mpiprobe trace
	trCollectives        // mpiprobe --collectives
	trMpiP               // mpiP preloaded, when MPIPROBE_MPIP names it
)

// BenchmarkTraceRecording runs the 8 B allreduce loop at 2 ranks side by
// side, interleaved in one run, (a) plain, (b) with empty programs on
// PMPI_Allreduce's entry and return, the floor of any entry/exit
// recording, (c) the same attached as trace mode attaches (uprobe_multi
// links, a cheaper path in the kernel), then trace mode taken apart on
// PMPI_Allreduce alone: (d) its programs finding the ring buffer full (the
// thread state, the arguments, the clock; no record written), (e) the same
// without reading arguments, (f) its programs writing every record to a
// ring buffer the benchmark drains (the record and the bare reading), then
// (g) mpiprobe trace, which probes every MPI function and runs the real
// recorder, (h) mpiprobe --collectives and, when MPIPROBE_MPIP names
// libmpiP.so, (i) the mpiP profiler preloaded. It reports µs per call added
// to (a), each variant's ratio to the floor (of the medians, and within
// each round: perCall.roundRatios, the figure the target is judged by), and
// the calls trace mode recorded and lost: a loss means the reader did not
// keep up.
func BenchmarkTraceRecording(b *testing.B) {
	bin, argv, floors := allreduceSetup(b, traceIters)
	parts := newTraceParts(b)
	file := filepath.Join(b.TempDir(), "bench.trace")
	var recorded, lost, expected uint64
	names := []string{"no probe", "empty uprobe+uretprobe on PMPI_Allreduce (floor)",
		"  the same on uprobe_multi links, as trace attaches",
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
		case trFloor:
			defer floors.single()()
		case trFloorMulti:
			defer floors.multi()()
		case trRingFull:
			defer parts.attach(b, parts.full, parts.allreduce, false)()
		case trNoArgs:
			defer parts.attach(b, parts.full, parts.noArgs, false)()
		case trDrained:
			defer parts.attach(b, parts.drained, parts.allreduce, true)()
		case trMpiprobe:
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
		case trCollectives:
			return workloadSeconds(b, append([]string{bin, "--collectives", "--"}, argv...))
		case trMpiP:
			return workloadSeconds(b, withPreload(argv, mpiP))
		}
		return workloadSeconds(b, argv)
	}
	t := runPerCall(b, names, traceIters, rotated, run)
	t.printTable("allreduce 8 B, 2 ranks", t.addedColumn("added vs no probe"),
		column{header: "x floor (medians)", format: "%.2f", value: func(v int) float64 { return t.added(v) / t.added(trFloor) }},
		t.roundRatioColumn("x floor per round (median, 25-75%)", trFloor),
		t.roundRatioColumn("x multi floor per round", trFloorMulti), spreadColumn(t))
	floor, trace := t.added(trFloor), t.added(trMpiprobe)
	ratio, q1, q3 := t.ratioStats(trMpiprobe, trFloor)
	multi, _, _ := t.ratioStats(trMpiprobe, trFloorMulti)
	mpiPRatio := ""
	if mpiP != "" {
		m, _, _ := t.ratioStats(trMpiP, trFloor)
		mpiPRatio = fmt.Sprintf("; mpiP %.2f x", m)
	}
	coll, _, _ := t.ratioStats(trCollectives, trFloor)
	fmt.Printf("trace mode adds %.3f µs per call, %.2f x the entry+return floor per round (25-75%%: %.2f-%.2f; floor %.3f µs; target 1.2 x), %.2f x the floor on uprobe_multi links; --collectives %.2f x%s; recorded %d of %d calls, lost %d\n",
		trace, ratio, q1, q3, floor, multi, coll, mpiPRatio, recorded, expected, lost)
	b.ReportMetric(trace, "µs-trace-per-call")
	b.ReportMetric(floor, "µs-floor-per-call")
	b.ReportMetric(ratio, "x-floor")
	b.ReportMetric(multi, "x-multi-floor")
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

// floorProbes attach the floor of entry/exit recording, empty programs on
// PMPI_Allreduce's entry and return; each returns its detach.
type floorProbes struct {
	single func() func() // a uprobe and a uretprobe link
	multi  func() func() // a uprobe_multi link of each kind, as trace mode attaches
}

// allreduceSetup prepares the entry/exit benchmarks: the mpiprobe binary,
// the 8 B allreduce job at 2 ranks on vader for iters iterations, and the
// floor's probes.
func allreduceSetup(b *testing.B, iters int) (bin string, argv []string, floor floorProbes) {
	b.Helper()
	bin, argv = allreduceJob(b, iters)
	objs := loadObjects(b)
	ex := openLibmpi(b)
	pair := func(in, out func() (link.Link, error)) func() func() {
		return func() func() {
			l1, err := in()
			if err != nil {
				b.Fatal(err)
			}
			l2, err := out()
			if err != nil {
				l1.Close()
				b.Fatal(err)
			}
			return func() {
				l2.Close()
				l1.Close()
			}
		}
	}
	sym := []string{"PMPI_Allreduce"}
	return bin, argv, floorProbes{
		single: pair(func() (link.Link, error) { return ex.Uprobe(sym[0], objs.Empty, nil) },
			func() (link.Link, error) { return ex.Uretprobe(sym[0], objs.Empty, nil) }),
		multi: pair(func() (link.Link, error) { return ex.UprobeMulti(sym, objs.EmptyMulti, nil) },
			func() (link.Link, error) { return ex.UretprobeMulti(sym, objs.EmptyMulti, nil) }),
	}
}
