package bench

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/kernel"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/session"
	"github.com/mpiprobe/mpiprobe/probes"
)

// traceParts holds two loads of trace mode's programs, each following the
// processes this benchmark starts (its fork hook attached, the benchmark's
// process marked TRACED_FOLLOW), to attach on PMPI_Allreduce alone and
// take trace mode's cost apart: full is loaded with a 64 MiB ring buffer
// that the benchmark drains (records discarded), full with a 4 KiB one
// that nobody reads, so that every call finds it full and nothing is
// written.
type traceParts struct {
	drained, full *bpf.MpiprobeObjects
	ex            *link.Executable
	entry         uint64 // where past PMPI_Allreduce mpiprobe probes it
	allreduce     uint64 // PMPI_Allreduce's call index 0, with its arguments
	noArgs        uint64 // the same without arguments
}

// newTraceParts loads the two sets for j's library; they are closed when
// the benchmark ends.
func newTraceParts(b *testing.B, j *entryJob) *traceParts {
	b.Helper()
	p := &traceParts{ex: j.ex, entry: j.entry}
	pidMax, _ := procfs.FS{}.PidMax()
	slots := session.TraceThreadSlots(pidMax)
	for _, size := range []uint32{64 << 20, 4096} {
		objs := new(bpf.MpiprobeObjects)
		if err := kernel.Load(objs, session.TraceOptions(size, slots)); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { objs.Close() })
		fork, err := link.AttachTracing(link.TracingOptions{Program: objs.OnFork})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { fork.Close() })
		if err := objs.Traced.Put(uint32(os.Getpid()), uint32(bpf.MpiprobeTracedFlagTRACED_FOLLOW)); err != nil {
			b.Fatal(err)
		}
		if size > 4096 {
			p.drained = objs
		} else {
			p.full = objs
		}
	}
	var err error
	if p.allreduce, err = probes.TraceCookieOf(0, "MPI_Allreduce", probes.OMPILibMPI); err != nil {
		b.Fatal(err)
	}
	p.noArgs, _ = probes.TraceCookieOf(0, "", probes.OMPILibMPI)
	return p
}

// attach puts trace_enter and trace_exit of objs on PMPI_Allreduce with
// cookie, where mpiprobe puts them; with drain, a goroutine reads and
// discards the ring buffer's records meanwhile. It returns the detach.
func (p *traceParts) attach(b *testing.B, objs *bpf.MpiprobeObjects, cookie uint64, drain bool) func() {
	b.Helper()
	opts := &link.UprobeOptions{Cookie: cookie, Offset: p.entry}
	in, err := p.ex.Uprobe("PMPI_Allreduce", objs.TraceEnter, opts)
	if err != nil {
		b.Fatal(err)
	}
	out, err := p.ex.Uretprobe("PMPI_Allreduce", objs.TraceExit, opts)
	if err != nil {
		in.Close()
		b.Fatal(err)
	}
	stop := func() {}
	if drain {
		rd, err := ringbuf.NewReader(objs.TraceEvents)
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			var rec ringbuf.Record
			for {
				if err := rd.ReadInto(&rec); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
					return
				}
			}
		}()
		stop = func() {
			_ = rd.Close()
			<-done
		}
	}
	return func() {
		out.Close()
		in.Close()
		stop()
	}
}

// localCallIters is the length of each loop of testdata/localcalls.c.
const localCallIters = 200000

// BenchmarkLocalCalls measures what trace mode costs MPI_Wtime and
// MPI_Comm_rank, which take a few ns, under Open MPI: untraced, with empty
// programs on the function's entry and return (the naive floor: Open MPI's
// PMPI_Wtime begins with sub $0x28,%rsp, which the kernel must single-step),
// with an empty program at the entry point trace mode picks
// (x86.EntryPoint), and under mpiprobe trace, which records both at
// entry only.
func BenchmarkLocalCalls(b *testing.B) {
	bin, _ := allreduceJob(b, 1)
	impl, prog := localCallsJob(b)
	argv := impl.Command(2, []string{"--mca", "pml", "ob1", "--mca", "btl", "self,vader"}, prog, strconv.Itoa(localCallIters))
	objs := loadObjects(b)
	ex := openLibmpi(b, impl)
	offsets := entryOffsets(b, impl, "PMPI_Wtime", "PMPI_Comm_rank")
	names := []string{"no probe", "empty uprobe+uretprobe at entry", "empty uprobe at trace's entry point", "mpiprobe trace"}
	var wtime, rank [][]float64 = make([][]float64, len(names)), make([][]float64, len(names))
	for range b.N {
		interleave(make([][]float64, len(names)), pairs, rotated, func(v int) float64 {
			var out []byte
			switch v {
			case 1, 2:
				for _, sym := range []string{"PMPI_Wtime", "PMPI_Comm_rank"} {
					opts := &link.UprobeOptions{}
					if v == 2 {
						opts.Offset = offsets[sym]
					}
					l, err := ex.Uprobe(sym, objs.Empty, opts)
					if err != nil {
						b.Fatal(err)
					}
					defer l.Close()
					if v == 1 {
						r, err := ex.Uretprobe(sym, objs.Empty, nil)
						if err != nil {
							b.Fatal(err)
						}
						defer r.Close()
					}
				}
				out = workloadOutput(b, argv)
			case 3:
				out = workloadOutput(b, append([]string{bin, "trace", "-o", b.TempDir() + "/l.trace", "--"}, argv...))
			default:
				out = workloadOutput(b, argv)
			}
			w, r := localSeconds(b, out)
			wtime[v], rank[v] = append(wtime[v], w), append(rank[v], r)
			return w
		})
	}
	for _, m := range []struct {
		name  string
		times [][]float64
	}{{"MPI_Wtime", wtime}, {"MPI_Comm_rank", rank}} {
		t := perCall{names: names, times: m.times, iters: localCallIters}
		t.printTable(m.name+", Open MPI, 2 ranks", t.addedColumn("added vs no probe"), spreadColumn(t))
		b.ReportMetric(t.added(3), "µs-trace-"+strings.ToLower(strings.TrimPrefix(m.name, "MPI_")))
	}
}

// spreadColumn is each variant's interquartile range of µs per call.
func spreadColumn(p perCall) column {
	return column{header: "25%-75% spread µs", format: "%.3f", value: func(v int) float64 {
		return (quantile(p.times[v], 0.75) - quantile(p.times[v], 0.25)) / float64(p.iters) * 1e6
	}}
}

// entryOffsets returns where trace mode puts the entry probe of each
// libmpi function (x86.EntryPoint, entry-only).
func entryOffsets(b *testing.B, impl mpitest.Impl, syms ...string) map[string]uint64 {
	b.Helper()
	lib, err := findLibmpi(impl)
	if err != nil {
		b.Fatal(err)
	}
	out, err := probes.EntryPoints(lib, syms, true)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// localSeconds reads localcalls' two lines: the seconds of the Wtime loop
// and of the Comm_rank loop.
func localSeconds(b *testing.B, out []byte) (wtime, rank float64) {
	b.Helper()
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || !strings.HasPrefix(f[2], "seconds=") {
			continue
		}
		s, err := strconv.ParseFloat(strings.TrimPrefix(f[2], "seconds="), 64)
		if err != nil {
			b.Fatal(err)
		}
		switch f[0] {
		case "wtime":
			wtime = s
		case "comm_rank":
			rank = s
		}
	}
	if wtime == 0 || rank == 0 {
		b.Fatalf("no wtime/comm_rank seconds in:\n%s", out)
	}
	return wtime, rank
}

// localCallsJob builds testdata/localcalls.c with Open MPI.
func localCallsJob(b *testing.B) (mpitest.Impl, string) {
	b.Helper()
	impl := mpitest.OpenMPI()
	return impl, mpitest.Build(b, impl, "localcalls")
}
