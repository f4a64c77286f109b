package bench

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/cilium/ebpf/link"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/kernel"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// runOrder is the order in which interleave runs the variants of a round.
type runOrder int

const (
	// inOrder runs variant 0, 1, ..., n-1 in every round.
	inOrder runOrder = iota
	// rotated starts round i at variant i mod n, so that no variant always
	// runs first: with two variants, they alternate which goes first.
	rotated
)

// interleave runs rounds rounds of n variants, each variant once per round
// in the given order, and appends what run returns for variant v to
// times[v], where n is len(times). Whatever a variant needs around its run
// (attaching a probe, say) is up to run.
func interleave(times [][]float64, rounds int, order runOrder, run func(v int) float64) {
	n := len(times)
	for i := range rounds {
		for k := range n {
			v := k
			if order == rotated {
				v = (k + i) % n
			}
			times[v] = append(times[v], run(v))
		}
	}
}

// perCall holds the loop times, in seconds, of variants of a workload whose
// loop makes iters calls.
type perCall struct {
	names []string
	times [][]float64 // per variant, every run's seconds
	iters int
}

// runPerCall runs the variants named by names interleaved, pairs rounds per
// benchmark iteration, run(v) returning the loop seconds of one run of
// variant v.
func runPerCall(b *testing.B, names []string, iters int, order runOrder, run func(v int) float64) perCall {
	times := make([][]float64, len(names))
	for range b.N {
		interleave(times, pairs, order, run)
	}
	return perCall{names: names, times: times, iters: iters}
}

// us returns variant v's median µs per call.
func (p perCall) us(v int) float64 { return median(p.times[v]) / float64(p.iters) * 1e6 }

// added returns the µs per call variant v adds to variant 0.
func (p perCall) added(v int) float64 { return p.us(v) - p.us(0) }

// column is a column of a perCall table after the median µs per call: the
// value of variant v's row is value(v), printed with format.
type column struct {
	header, format string
	value          func(v int) float64
}

// addedColumn is the µs per call each variant adds to variant 0.
func (p perCall) addedColumn(header string) column {
	return column{header, "%+.3f", p.added}
}

// ratioColumn is each variant's µs per call as a ratio to variant 0's.
func (p perCall) ratioColumn(header string) column {
	return column{header, "%.3f", func(v int) float64 { return p.us(v) / p.us(0) }}
}

// printTable prints, on stdout, a row per variant: its name, runs and median
// µs per call, then cols.
func (p perCall) printTable(title string, cols ...column) {
	header := []string{title, "runs", "µs per call (median)"}
	for _, c := range cols {
		header = append(header, c.header)
	}
	var rows [][]string
	for v, name := range p.names {
		row := []string{name, strconv.Itoa(len(p.times[v])), fmt.Sprintf("%.3f", p.us(v))}
		for _, c := range cols {
			row = append(row, fmt.Sprintf(c.format, c.value(v)))
		}
		rows = append(rows, row)
	}
	right := make([]int, 0, len(header)-1)
	for i := 1; i < len(header); i++ {
		right = append(right, i)
	}
	if err := text.Table(os.Stdout, header, rows, right...); err != nil {
		fmt.Println(err)
	}
}

// loadObjects loads mpiprobe's BPF objects, closed when the benchmark
// function returns.
func loadObjects(b *testing.B) *bpf.MpiprobeObjects {
	b.Helper()
	objs := new(bpf.MpiprobeObjects)
	if err := kernel.Load(objs, kernel.Options{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { objs.Close() })
	return objs
}

// openLibmpi opens Open MPI's libmpi.so.40, as the dynamic linker finds it,
// for attaching uprobes.
func openLibmpi(b *testing.B) *link.Executable {
	b.Helper()
	libmpi, err := findLibmpi()
	if err != nil {
		b.Fatal(err)
	}
	ex, err := link.OpenExecutable(libmpi)
	if err != nil {
		b.Fatal(err)
	}
	return ex
}
