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

// BenchmarkTraceRecording runs the 8 B allreduce loop at 2 ranks (a) plain,
// (b) with empty programs on PMPI_Allreduce's entry and return, the floor of
// any entry/exit recording, and (c) under mpiprobe trace, which probes every
// MPI function and records each call through the ring buffer. It reports µs
// per call added by (b) and (c), their ratio, and the calls recorded and
// lost: a loss means the reader did not keep up.
func BenchmarkTraceRecording(b *testing.B) {
	bin, argv, attachFloor := allreduceSetup(b, traceIters)
	file := filepath.Join(b.TempDir(), "bench.trace")
	var recorded, lost, expected uint64
	run := func(variant int) float64 {
		switch variant {
		case 1:
			defer attachFloor()()
		case 2:
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
		}
		return workloadSeconds(b, argv)
	}
	names := []string{"no probe", "empty uprobe+uretprobe on PMPI_Allreduce", "mpiprobe trace (every MPI function)"}
	t := runPerCall(b, names, traceIters, rotated, run)
	t.printTable("allreduce 8 B, 2 ranks", t.addedColumn("added vs no probe"))
	floor, trace := t.added(1), t.added(2)
	fmt.Printf("trace mode adds %.3f µs per call, %.2f x the entry+return floor (%.3f µs); recorded %d of %d calls, lost %d\n",
		trace, trace/floor, floor, recorded, expected, lost)
	b.ReportMetric(trace, "µs-trace-per-call")
	b.ReportMetric(floor, "µs-floor-per-call")
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
