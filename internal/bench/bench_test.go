package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/discover"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/internal/text"
	"github.com/mpiprobe/mpiprobe/probes"
)

// pairs is how many traced/untraced pairs each workload runs.
const pairs = 11

// allreducePairs is how many pairs the allreduce loop of
// BenchmarkDefaultOverhead runs: its target (≤ 1.01) is within this
// machine's run-to-run noise, which more pairs narrow.
const allreducePairs = 31

// allreduceIters is the length of the MPI_Allreduce loop.
const allreduceIters = 2000000

var secondsLine = regexp.MustCompile(`(?m)^(?:allreduce iters=\d+|flood) seconds=([0-9.]+)(?: cpu=([0-9.]+))?$`)

// workloadSeconds runs a command and returns the time the MPI program
// reports for its own loop, so that mpiprobe's start-up is not counted.
func workloadSeconds(b *testing.B, argv []string) float64 {
	b.Helper()
	return workloadSecondsOf(b, workloadOutput(b, argv))
}

// workloadOutput runs a command and returns its stdout; stderr goes into
// the failure message only.
func workloadOutput(b *testing.B, argv []string) []byte {
	b.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		b.Fatalf("%v: %v\n%s%s", argv, err, out.String(), errOut.String())
	}
	return out.Bytes()
}

// summaryEvents sums the event counts of the JSON summary that
// `mpiprobe --json -o file` wrote to file, over every rank and event.
func summaryEvents(b *testing.B, file string) uint64 {
	b.Helper()
	out, err := os.ReadFile(file)
	if err != nil {
		b.Fatalf("no JSON summary: %v", err)
	}
	var s struct {
		Jobs []struct {
			Ranks []struct {
				Events []struct {
					Count uint64 `json:"count"`
				} `json:"events"`
			} `json:"ranks"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(out, &s); err != nil {
		b.Fatalf("decode summary: %v\n%s", err, out)
	}
	var n uint64
	for _, j := range s.Jobs {
		for _, r := range j.Ranks {
			for _, e := range r.Events {
				n += e.Count
			}
		}
	}
	return n
}

// workloadSecondsOf reads the seconds= line of a workload's output.
func workloadSecondsOf(b *testing.B, out []byte) float64 {
	b.Helper()
	return secondsField(b, out, 1)
}

// workloadCPUOf reads the loop's CPU seconds in its thread from the
// allreduce program's output (cpu=).
func workloadCPUOf(b *testing.B, out []byte) float64 {
	b.Helper()
	return secondsField(b, out, 2)
}

// secondsField returns the value of group k of secondsLine in out.
func secondsField(b *testing.B, out []byte, k int) float64 {
	b.Helper()
	m := secondsLine.FindSubmatch(out)
	if m == nil || len(m[k]) == 0 {
		b.Fatalf("no seconds= line (or no cpu= in it) in:\n%s", out)
	}
	s, err := strconv.ParseFloat(string(m[k]), 64)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// quantile returns the q-quantile of xs (0 ≤ q ≤ 1), interpolating
// between the two nearest values.
func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	pos := q * float64(len(s)-1)
	lo := int(pos)
	if lo+1 >= len(s) {
		return s[lo]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// BenchmarkDefaultOverhead measures traced/untraced time ratios of the
// default probe set, interleaving the two (alternating which goes first),
// and the most events a traced run counted (all ranks): with
// BenchmarkPerHitCost's cost per hit, that bounds what the probes add.
func BenchmarkDefaultOverhead(b *testing.B) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(b, impl)
	bin := mpitest.BuildMpiprobe(b)
	allreduce := mpitest.Build(b, impl, "allreduce")
	flood := mpitest.Build(b, impl, "flood")
	vader := []string{"--mca", "pml", "ob1", "--mca", "btl", "self,vader"}
	capped := append(slices.Clone(vader), "--mca", "btl_vader_free_list_max", "64")
	workloads := []struct {
		name  string
		argv  []string
		pairs int
	}{
		{"allreduce 8B x2M, 2 ranks, vader", impl.Command(2, vader, allreduce, strconv.Itoa(allreduceIters)), allreducePairs},
		// The flood as the tests run it: a receiver 200 ms late each round.
		{"flood 5x2000x2KiB, late receiver, free list 64", impl.Command(2, capped, flood, "-n", "2000", "-d", "200", "-r", "5"), pairs},
		// The worst case: nothing but queued sends, every message past the
		// 64th an event (new queueing, then a pass over the queue).
		{"flood 20x2000x2KiB, prompt receiver, free list 64", impl.Command(2, capped, flood, "-n", "2000", "-d", "0", "-r", "20"), pairs},
	}
	header := []string{"workload", "pairs", "untraced median s", "traced median s", "ratio of medians", "median of pair ratios", "pair ratios 25%-75%", "events per traced run (most)"}
	var rows [][]string
	for range b.N {
		for _, w := range workloads {
			var events []float64
			// Variant 0 traced, 1 untraced, alternating which goes first,
			// the traced one in the first pair.
			times := make([][]float64, 2)
			interleave(times, w.pairs, rotated, func(v int) float64 {
				if v == 1 {
					return workloadSeconds(b, w.argv)
				}
				sum := filepath.Join(b.TempDir(), "summary.json")
				out := workloadOutput(b, append([]string{bin, "--json", "-o", sum, "--"}, w.argv...))
				events = append(events, float64(summaryEvents(b, sum)))
				return workloadSecondsOf(b, out)
			})
			traced, plain := times[0], times[1]
			ratios := make([]float64, w.pairs)
			for i := range ratios {
				ratios[i] = traced[i] / plain[i]
			}
			ratio := median(traced) / median(plain)
			rows = append(rows, []string{w.name, strconv.Itoa(w.pairs), fmt.Sprintf("%.4f", median(plain)), fmt.Sprintf("%.4f", median(traced)),
				fmt.Sprintf("%.3f", ratio), fmt.Sprintf("%.3f", median(ratios)),
				fmt.Sprintf("%.3f-%.3f", quantile(ratios, 0.25), quantile(ratios, 0.75)), fmt.Sprintf("%.0f", slices.Max(events))})
			b.ReportMetric(median(ratios), "ratio-"+metricName(w.name))
		}
	}
	if err := text.Table(os.Stdout, header, rows, 1, 2, 3, 4, 5, 6, 7); err != nil {
		fmt.Println(err)
	}
}

// metricName turns a workload's name into a benchmark metric unit.
func metricName(s string) string {
	return regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(s[:min(len(s), 24)]), "-")
}

// BenchmarkPerHitCost attaches, to PMPI_Allreduce's entry, (a) nothing,
// (b) an empty program and (c) count_event with a real event's cookie and
// condition, with the ranks in the traced set, and reports microseconds per
// call: (b)-(a) is the uprobe mechanism's floor, (c)-(b) what counting adds.
// Every catalog probe, at entry or at a call site, runs count_event.
func BenchmarkPerHitCost(b *testing.B) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(b, impl)
	allreduce := mpitest.Build(b, impl, "allreduce")
	objs := loadObjects(b)
	fork, err := link.AttachTracing(link.TracingOptions{Program: objs.OnFork})
	if err != nil {
		b.Fatal(err)
	}
	defer fork.Close()
	// Follow every process this benchmark starts, as mpiprobe -- does.
	if err := objs.Traced.Put(uint32(os.Getpid()), uint32(bpf.MpiprobeTracedFlagTRACED_FOLLOW)); err != nil {
		b.Fatal(err)
	}
	ex := openLibmpi(b, impl)
	cookie, err := probes.Cookie(0, probes.Condition{Src: probes.Arg(1), Cmp: probes.Ne, Value: -1})
	if err != nil {
		b.Fatal(err)
	}
	names := []string{"no probe", "empty uprobe", "count_event uprobe"}
	progs := []*ebpf.Program{nil, objs.Empty, objs.CountEvent}
	argv := impl.Command(2, []string{"--mca", "pml", "ob1", "--mca", "btl", "self,vader"}, allreduce, strconv.Itoa(allreduceIters))

	// Every round in the same order, each variant's program attached for
	// its run only.
	t := runPerCall(b, names, allreduceIters, inOrder, func(v int) float64 {
		if progs[v] != nil {
			l, err := ex.Uprobe("PMPI_Allreduce", progs[v], &link.UprobeOptions{Cookie: cookie})
			if err != nil {
				b.Fatalf("attach %s: %v", names[v], err)
			}
			defer l.Close()
		}
		return workloadSeconds(b, argv)
	})
	t.printTable("PMPI_Allreduce entry, 8 B, 2 ranks", t.addedColumn("added vs no probe"))
	fmt.Printf("count_event per hit beyond the empty uprobe: %+.3f µs; count_event/empty added cost: %.2f\n",
		t.us(2)-t.us(1), t.added(2)/t.added(1))
	b.ReportMetric(t.us(2)-t.us(1), "µs-count-over-empty")
	b.ReportMetric(t.added(1), "µs-empty-uprobe")
}

// findLibmpi returns the libmpi.so.40 of impl's Open MPI as its dynamic
// linker finds it (ldconfig inside impl's root, if any), by the path this
// process opens it at.
func findLibmpi(impl mpitest.Impl) (string, error) {
	argv := []string{"ldconfig", "-p"}
	if impl.Root != "" {
		argv = append([]string{"chroot", impl.Root}, argv...)
	}
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	for _, p := range discover.ParseLdconfig(out) {
		if lib, _ := discover.Classify(p); lib == probes.OMPILibMPI {
			return impl.HostPath(p), nil
		}
	}
	return "", fmt.Errorf("libmpi.so.40 not found by %s", strings.Join(argv, " "))
}
