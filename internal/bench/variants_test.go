package bench

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/cilium/ebpf/link"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/kernel"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
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
	return runRounds(b, names, iters, pairs, order, run)
}

// runRounds is runPerCall with rounds rounds per benchmark iteration.
func runRounds(b *testing.B, names []string, iters, rounds int, order runOrder, run func(v int) float64) perCall {
	times := make([][]float64, len(names))
	for range b.N {
		interleave(times, rounds, order, run)
	}
	return perCall{names: names, times: times, iters: iters}
}

// us returns variant v's median µs per call.
func (p perCall) us(v int) float64 { return median(p.times[v]) / float64(p.iters) * 1e6 }

// added returns the µs per call variant v adds to variant 0.
func (p perCall) added(v int) float64 { return p.us(v) - p.us(0) }

// roundRatios returns, for each round, what variant v adds to variant 0
// as a ratio of what variant ref adds to it, all three measured in the
// same round. The machine has slow and fast phases that last from a few
// runs to a whole benchmark (here the no-probe loop takes 0.14 or 0.40 µs
// per call, depending on where the host runs the two vCPUs): a median of
// each variant over all rounds can mix phases, a ratio within one round
// does not.
func (p perCall) roundRatios(v, ref int) []float64 {
	n := min(len(p.times[0]), len(p.times[v]), len(p.times[ref]))
	out := make([]float64, 0, n)
	for i := range n {
		if d := p.times[ref][i] - p.times[0][i]; d > 0 {
			out = append(out, (p.times[v][i]-p.times[0][i])/d)
		}
	}
	return out
}

// ratioStats returns the median and quartiles of roundRatios(v, ref).
func (p perCall) ratioStats(v, ref int) (med, q1, q3 float64) {
	r := p.roundRatios(v, ref)
	return median(r), quantile(r, 0.25), quantile(r, 0.75)
}

// roundRatioColumn is each variant's added cost per round as a ratio of
// variant ref's (roundRatios): the median, and the quartiles in brackets.
func (p perCall) roundRatioColumn(header string, ref int) column {
	return column{header: header, text: func(v int) string {
		med, q1, q3 := p.ratioStats(v, ref)
		return fmt.Sprintf("%.2f (%.2f-%.2f)", med, q1, q3)
	}}
}

// column is a column of a perCall table after the median µs per call: the
// value of variant v's row is value(v), printed with format, or text(v)
// when text is set.
type column struct {
	header, format string
	value          func(v int) float64
	text           func(v int) string
}

// cell returns the column's text in variant v's row.
func (c column) cell(v int) string {
	if c.text != nil {
		return c.text(v)
	}
	return fmt.Sprintf(c.format, c.value(v))
}

// addedColumn is the µs per call each variant adds to variant 0.
func (p perCall) addedColumn(header string) column {
	return column{header: header, format: "%+.3f", value: p.added}
}

// ratioColumn is each variant's µs per call as a ratio to variant 0's.
func (p perCall) ratioColumn(header string) column {
	return column{header: header, format: "%.3f", value: func(v int) float64 { return p.us(v) / p.us(0) }}
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
			row = append(row, c.cell(v))
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

// openLibmpi opens the libmpi.so.40 of impl's Open MPI, as its dynamic
// linker finds it, for attaching uprobes.
func openLibmpi(b *testing.B, impl mpitest.Impl) *link.Executable {
	b.Helper()
	libmpi, err := findLibmpi(impl)
	if err != nil {
		b.Fatal(err)
	}
	ex, err := link.OpenExecutable(libmpi)
	if err != nil {
		b.Fatal(err)
	}
	return ex
}

// TestRoundRatios checks that a ratio within rounds is not moved by a
// machine phase that changes in the middle of a round: variant 2 adds 1.25
// times what variant 1 adds in the fast rounds (0, 1) and the slow ones (3,
// 4); round 2 turned slow after variant 0 ran, and the medians of the
// variants come from different phases.
func TestRoundRatios(t *testing.T) {
	p := perCall{iters: 1, times: [][]float64{
		{0.1, 0.1, 0.1, 0.4, 0.4},
		{1.1, 1.1, 1.6, 1.6, 1.6},
		{1.35, 1.35, 1.9, 1.9, 1.9},
	}}
	med, q1, q3 := p.ratioStats(2, 1)
	for _, got := range []float64{med, q1, q3} {
		if got < 1.2499 || got > 1.2501 {
			t.Errorf("ratioStats(2, 1) = %.4f, %.4f, %.4f; want 1.25 each", med, q1, q3)
		}
	}
	if medians := p.added(2) / p.added(1); medians > 1.24 && medians < 1.26 {
		t.Errorf("the medians give %.3f: the example does not mix phases", medians)
	}
	p.times[1][0] = 0.1 // a round where variant 1 added nothing: left out
	if r := p.roundRatios(2, 1); len(r) != 4 {
		t.Errorf("roundRatios kept %d rounds, want the 4 where the reference added time", len(r))
	}
}
