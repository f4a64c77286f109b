package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"strconv"
	"testing"

	"github.com/cilium/ebpf/link"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/probes"
)

// entryRanks is how many ranks the allreduce loop of the entry/return
// benchmarks runs, and entryRounds how many interleaved rounds each
// iteration of them makes. One rank has no peer to wait for: its loop's
// CPU time (cpu=, the calling thread's, with the probes' traps in it)
// is what the probes cost, without the waits for a CPU and for the other
// rank that make two ranks' wall time swing on a machine shared with other
// runs. The reader's own CPU (mpiprobe's process) is not in it.
const (
	entryRanks  = 1
	entryRounds = 5
)

// The variants every entry/return benchmark begins with, in its table's
// order; its own follow from ownVariants on.
const (
	noProbe     = iota
	floorProbed // empty uprobe+uretprobe where mpiprobe puts its own (the floor)
	floorNaive  // the same at the function's first instruction
	ownVariants
)

// floorNames names the shared variants of j's table.
func (j *entryJob) floorNames() []string {
	return []string{"no probe",
		fmt.Sprintf("empty uprobe+uretprobe on PMPI_Allreduce+%d, where mpiprobe probes (floor)", j.entry),
		"  the same at +0, the function's first instruction"}
}

// attachFloor attaches the floor's probes of variant v, if it is one, and
// returns their detach.
func (j *entryJob) attachFloor(v int) func() {
	switch v {
	case floorProbed:
		return j.floors.single()
	case floorNaive:
		return j.floors.naive()
	}
	return func() {}
}

// entryBuild is one Open MPI build that the entry/return benchmarks
// (BenchmarkTraceRecording, BenchmarkCollectives) measure, a sub-benchmark
// each.
type entryBuild struct {
	name string
	impl func(b *testing.B) mpitest.Impl
	// mpiPEnv is the variable naming this build's libmpiP.so, by the path
	// its ranks see (docs/bench.md says how to build one).
	mpiPEnv string
}

// entryBuilds are Debian 12's Open MPI 4.1.4 on the host, and Debian 13's
// Open MPI 5.0.7, built with CET (every function begins with endbr64), in
// its root (.ci/roots).
var entryBuilds = []entryBuild{
	{"debian12", func(b *testing.B) mpitest.Impl {
		impl := mpitest.OpenMPI()
		mpitest.RequireE2E(b, impl)
		return impl
	}, "MPIPROBE_MPIP"},
	{"debian13-cet", func(b *testing.B) mpitest.Impl { return mpitest.RootOpenMPI(b, "trixie") }, "MPIPROBE_MPIP_TRIXIE"},
}

// entryJob is the allreduce loop of one build, ready to run and probe.
type entryJob struct {
	build entryBuild
	impl  mpitest.Impl
	prog  string // the program, as its ranks see it
	iters int
	ex    *link.Executable // the build's libmpi.so.40
	// entry is how far past PMPI_Allreduce's symbol mpiprobe puts its
	// entry and return probes (x86.EntryPoint).
	entry  uint64
	floors floorProbes
	mpiP   string // libmpiP.so as the ranks see it; "" when not given
}

// forEachBuild runs bench in a sub-benchmark per build of entryBuilds,
// with the build's job of iters calls; a build missing here is skipped,
// and one without mpiP measured without it, each saying so.
func forEachBuild(b *testing.B, iters int, bench func(b *testing.B, bin string, j *entryJob)) {
	mpitest.RequireE2E(b)
	bin := mpitest.BuildMpiprobe(b)
	for _, eb := range entryBuilds {
		b.Run(eb.name, func(b *testing.B) {
			// A benchmark's skip is silent without -v: say it.
			defer func() {
				if b.Skipped() {
					fmt.Printf("%s: skipped, not measured (go test -v names what is missing)\n", eb.name)
				}
			}()
			bench(b, bin, newEntryJob(b, eb, iters))
		})
	}
}

func newEntryJob(b *testing.B, eb entryBuild, iters int) *entryJob {
	b.Helper()
	j := &entryJob{build: eb, impl: eb.impl(b), iters: iters}
	j.prog = mpitest.Build(b, j.impl, "allreduce")
	lib, err := findLibmpi(j.impl)
	if err != nil {
		b.Fatal(err)
	}
	if j.ex, err = link.OpenExecutable(lib); err != nil {
		b.Fatal(err)
	}
	const sym = "PMPI_Allreduce"
	at, err := probes.EntryPoints(lib, []string{sym}, false)
	if err != nil {
		b.Fatal(err)
	}
	j.entry = at[sym]
	objs := loadObjects(b)
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
	at0, atEntry := &link.UprobeOptions{}, &link.UprobeOptions{Offset: j.entry}
	multi := &link.UprobeMultiOptions{Offsets: []uint64{j.entry}}
	j.floors = floorProbes{
		single: pair(func() (link.Link, error) { return j.ex.Uprobe(sym, objs.Empty, atEntry) },
			func() (link.Link, error) { return j.ex.Uretprobe(sym, objs.Empty, atEntry) }),
		naive: pair(func() (link.Link, error) { return j.ex.Uprobe(sym, objs.Empty, at0) },
			func() (link.Link, error) { return j.ex.Uretprobe(sym, objs.Empty, at0) }),
		multi: pair(func() (link.Link, error) { return j.ex.UprobeMulti([]string{sym}, objs.EmptyMulti, multi) },
			func() (link.Link, error) { return j.ex.UretprobeMulti([]string{sym}, objs.EmptyMulti, multi) }),
	}
	switch j.mpiP = os.Getenv(eb.mpiPEnv); {
	case j.mpiP == "":
		fmt.Printf("%s: mpiP not measured: %s names no libmpiP.so (docs/bench.md says how to build one)\n", eb.name, eb.mpiPEnv)
	default:
		if _, err := os.Stat(j.impl.HostPath(j.mpiP)); err != nil {
			b.Fatalf("%s=%s: %v; build mpiP for this build as docs/bench.md says, or unset %s", eb.mpiPEnv, j.mpiP, err, eb.mpiPEnv)
		}
	}
	return j
}

// argv returns the job's command line, with extra launcher options.
func (j *entryJob) argv(extra ...string) []string {
	opts := append([]string{"--mca", "pml", "ob1", "--mca", "btl", "self,vader"}, extra...)
	return j.impl.Command(entryRanks, opts, j.prog, strconv.Itoa(j.iters))
}

// mpiPArgv returns the job's command line with mpiP preloaded in its
// ranks, its reports written beside the program (a directory removed when
// the benchmark ends).
func (j *entryJob) mpiPArgv() []string {
	return j.argv("-x", "LD_PRELOAD="+j.mpiP, "-x", "MPIP=-f "+path.Dir(j.prog))
}

// title heads the build's table.
func (j *entryJob) title() string {
	return fmt.Sprintf("%s: allreduce 8 B, %d rank, CPU µs", j.build.name, entryRanks)
}

// reportFloors reports the floor's µs per call, and the per-round ratios
// to it of variant ours (x-floor), of the floor at the function's first
// instruction and of mpiP (variant mpiP of t, when measured), as metrics.
func (j *entryJob) reportFloors(b *testing.B, t perCall, ours, mpiP int) {
	ratio, _, _ := t.ratioStats(ours, floorProbed)
	naive, _, _ := t.ratioStats(floorNaive, floorProbed)
	b.ReportMetric(t.added(floorProbed), "µs-floor-per-call")
	b.ReportMetric(ratio, "x-floor")
	b.ReportMetric(naive, "x-floor-at-entry")
	if j.mpiP != "" {
		m, _, _ := t.ratioStats(mpiP, floorProbed)
		b.ReportMetric(m, "x-floor-mpiP")
	}
}

// mpiPSummary says how mpiP compares, per round, with the floor and with
// the variants of mpiprobe ours, in t whose variant mpiP is the last.
func (j *entryJob) mpiPSummary(t perCall, floor int, ours ...int) string {
	if j.mpiP == "" {
		return "mpiP not measured (" + j.build.mpiPEnv + " unset)"
	}
	mpiP := len(t.names) - 1
	m, _, _ := t.ratioStats(mpiP, floor)
	s := fmt.Sprintf("mpiP %.2f x the floor", m)
	for _, v := range ours {
		r, _, _ := t.ratioStats(v, mpiP)
		s += fmt.Sprintf(", %s %.2f x mpiP", t.names[v], r)
	}
	return s
}

// loopCPU runs a command and returns the CPU seconds of the allreduce
// program's loop (cpu=).
func loopCPU(b *testing.B, argv []string) float64 {
	b.Helper()
	return workloadCPUOf(b, workloadOutput(b, argv))
}

// combinedOutput runs a command and returns its stdout and stderr
// together (mpiprobe's summary and the job's lines).
func combinedOutput(b *testing.B, argv []string) []byte {
	b.Helper()
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		b.Fatalf("%v: %v\n%s", argv, err, out)
	}
	return out
}

// floorProbes attach the floor of entry/exit recording, empty programs on
// PMPI_Allreduce's entry and return; each returns its detach.
type floorProbes struct {
	single func() func() // a uprobe and a uretprobe link where mpiprobe puts them
	naive  func() func() // the same at the function's first instruction
	multi  func() func() // a uprobe_multi link of each kind, as trace mode attaches
}
