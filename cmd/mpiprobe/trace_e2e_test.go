package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/internal/trace/chrometrace/chromecheck"
	"github.com/mpiprobe/mpiprobe/internal/trace/tracefile"
)

// shown is the parsed output of `mpiprobe trace show`.
type shown struct {
	// sites maps a call site number to its call and source line ("Allreduce", "loops.c:35").
	sites map[int][2]string
	// structure maps an MPI rank to its structure line.
	structure map[string]string
	// header maps an MPI rank to its header line.
	header map[string]string
	text   string
}

var (
	siteLine  = regexp.MustCompile(`^\s+(\d+)\s+(\S+)\s+\S+ \((\S+:\d+)\)`)
	rankLine  = regexp.MustCompile(`^rank (\S+) \(pid \d+`)
	groupLine = regexp.MustCompile(`^ranks? ([0-9,-]+)(?:, [^:]*)?:$`)
)

// expandRanks reads "0,2-4" as ["0" "2" "3" "4"].
func expandRanks(t *testing.T, list string) []string {
	var out []string
	for _, part := range strings.Split(list, ",") {
		lo, hi, ok := strings.Cut(part, "-")
		if !ok {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad rank list %q", list)
		}
		for r := a; r <= b; r++ {
			out = append(out, strconv.Itoa(r))
		}
	}
	return out
}

func parseShow(t *testing.T, out string) shown {
	t.Helper()
	s := shown{sites: map[int][2]string{}, structure: map[string]string{}, header: map[string]string{}, text: out}
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if m := siteLine.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			s.sites[n] = [2]string{m[2], m[3]}
		}
		next := ""
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "  ") && !strings.HasPrefix(lines[i+1], "  thread ") {
			next = strings.TrimSpace(lines[i+1])
		}
		if m := rankLine.FindStringSubmatch(l); m != nil {
			s.header[m[1]] = l
			if next != "" {
				s.structure[m[1]] = next
			}
		}
		if m := groupLine.FindStringSubmatch(l); m != nil && next != "" {
			for _, r := range expandRanks(t, m[1]) {
				s.structure[r] = next
			}
		}
	}
	return s
}

// sourceLines returns, for each call, the line of testdata/src where it
// is made: calls are found in source order, each after the previous one, by
// "MPI_<call>(" (any case, for Fortran).
func sourceLines(t *testing.T, src string, calls ...string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(mpitest.RepoRoot(t), "testdata", src))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() && len(out) < len(calls) {
		n++
		line := strings.ToLower(sc.Text())
		if strings.Contains(line, "mpi_"+strings.ToLower(calls[len(out)])+"(") &&
			!strings.HasPrefix(strings.TrimSpace(line), "*") && !strings.HasPrefix(strings.TrimSpace(line), "!") {
			out = append(out, fmt.Sprintf("%s:%d", src, n))
		}
	}
	if len(out) != len(calls) {
		t.Fatalf("%s: found %d of the calls %v", src, len(out), calls)
	}
	return out
}

// traceAndShow records argv under `mpiprobe trace` and returns the parsed
// output of `trace show` with showArgs, and the trace file.
func traceAndShow(t *testing.T, bin string, showArgs []string, traceArgs ...string) (shown, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "run.trace")
	code, stdout, stderr := runOutput(t, bin, nil, append([]string{"trace", "-o", file}, traceArgs...)...)
	if code != 0 || !strings.Contains(stdout, "MPI calls of") {
		t.Fatalf("mpiprobe trace exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if strings.Contains(stdout, "LOST") {
		t.Errorf("calls lost: %s", stdout)
	}
	return show(t, bin, file, showArgs...), file
}

// show runs `trace show` on file and returns its parsed output.
func show(t *testing.T, bin, file string, args ...string) shown {
	t.Helper()
	code, out, stderr := runOutput(t, bin, nil, append([]string{"trace", "show", file}, args...)...)
	if code != 0 {
		t.Fatalf("mpiprobe trace show exit %d\nstderr:\n%s", code, stderr)
	}
	return parseShow(t, out)
}

// checkSites checks the call site table: site n is calls[n] on line lines[n].
func checkSites(t *testing.T, s shown, calls, lines []string) {
	t.Helper()
	for n, c := range calls {
		if got := s.sites[n]; got != [2]string{c, lines[n]} {
			t.Errorf("call site %d = %v, want %s at %s\n%s", n, got, c, lines[n], s.text)
		}
	}
}

// TestTraceLoopStructure: loops.c makes Init, Comm_rank, Bcast, Barrier,
// then `iters` times (compute; Allreduce), then Finalize. The compressed
// structure must say exactly that on every rank, with call sites numbered in
// order and pointing at the source lines, under Open MPI and MPICH.
func TestTraceLoopStructure(t *testing.T) {
	for _, impl := range []mpitest.Impl{mpitest.OpenMPI(), mpitest.MPICH()} {
		t.Run(impl.Name, func(t *testing.T) {
			mpitest.RequireE2E(t, impl)
			bin := mpitest.BuildMpiprobe(t)
			prog := mpitest.Build(t, impl, "loops")
			const iters, ms = 5, 10
			s, _ := traceAndShow(t, bin, nil, append([]string{"--"}, impl.Command(2, nil, prog, strconv.Itoa(iters), strconv.Itoa(ms))...)...)
			checkLoopsTrace(t, s, iters)
			if want := s.structure["0"]; !strings.Contains(s.text, "ranks 0-1, all with the same structure (SPMD):\n  "+want+"\n") {
				t.Errorf("ranks not grouped as SPMD:\n%s", s.text)
			}
		})
	}
}

// TestTraceHighDetail: at high detail the loop body shows the compute burst
// before the allreduce, which spins for at least `ms` per iteration, with
// units in the text and exact nanoseconds in --json, and the call site table
// shows the broadcast's root and the element sizes read from the datatypes.
func TestTraceHighDetail(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	prog := mpitest.Build(t, impl, "loops")
	const iters, ms = 4, 20
	s, file := traceAndShow(t, bin, []string{"--detail", "high", "--per-rank"}, append([]string{"--"}, impl.Command(2, nil, prog, strconv.Itoa(iters), strconv.Itoa(ms))...)...)
	loop := regexp.MustCompile(`\(CPU4: [0-9.]+ ms\+Allreduce4: [0-9.]+ [nµm]?s\)\[4\]: [0-9.]+ ms`)
	for _, w := range []string{"root 0  count 1 x 4 B", "count 1 x 8 B"} {
		if !strings.Contains(s.text, w) {
			t.Errorf("site table lacks %q:\n%s", w, s.text)
		}
	}
	for _, r := range []string{"0", "1"} {
		if !loop.MatchString(s.structure[r]) {
			t.Errorf("rank %s: no (CPU4+Allreduce4)[4] loop with units in %q", r, s.structure[r])
		}
		code, out, stderr := runOutput(t, bin, nil, "trace", "show", file, "--json", "--detail", "high", "--rank", r)
		if code != 0 {
			t.Fatalf("show --json: exit %d: %s", code, stderr)
		}
		type node struct {
			Call         string  `json:"call"`
			Compute      bool    `json:"compute"`
			Iterations   int     `json:"iterations"`
			Body         []node  `json:"body"`
			Executions   int     `json:"executions"`
			TotalSeconds float64 `json:"total_seconds"`
		}
		var doc struct {
			RankDetail []struct {
				Threads []struct{ Tree []node } `json:"threads"`
			} `json:"rank_detail"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.RankDetail) != 1 {
			t.Fatalf("show --json: %v\n%s", err, out)
		}
		var l *node
		for i, nd := range doc.RankDetail[0].Threads[0].Tree {
			if nd.Iterations == iters {
				l = &doc.RankDetail[0].Threads[0].Tree[i]
			}
		}
		if l == nil || len(l.Body) != 2 || !l.Body[0].Compute || l.Body[1].Call != "MPI_Allreduce" {
			t.Fatalf("rank %s: no loop of %d (compute, MPI_Allreduce) in\n%s", r, iters, out)
		}
		// The program times its spin with the vDSO's CLOCK_MONOTONIC, the
		// trace with the kernel's; on this VM the two were seen 1.1% apart
		// (19,772 µs traced for a 20 ms spin) while NTP slewed the clock.
		if cpu := l.Body[0].TotalSeconds / float64(l.Body[0].Executions); cpu < float64(ms)*1e-3*97/100 {
			t.Errorf("rank %s: compute burst %g s, the program spins %d ms", r, cpu, ms)
		}
		if d := l.TotalSeconds - l.Body[0].TotalSeconds - l.Body[1].TotalSeconds; d > 2e-9 || d < -2e-9 {
			t.Errorf("rank %s: loop total %g s is not the sum of its body's %g + %g", r, l.TotalSeconds, l.Body[0].TotalSeconds, l.Body[1].TotalSeconds)
		}
	}
}

// TestTraceNestedRoles: nested.c pairs ranks; even ranks send then
// receive 7 times per outer iteration, odd ranks receive then send, and all
// meet at a barrier, 3 times. Two roles, each with its exact nested loop.
func TestTraceNestedRoles(t *testing.T) {
	for _, impl := range []mpitest.Impl{mpitest.OpenMPI(), mpitest.MPICH()} {
		t.Run(impl.Name, func(t *testing.T) {
			mpitest.RequireE2E(t, impl)
			bin := mpitest.BuildMpiprobe(t)
			prog := mpitest.Build(t, impl, "nested")
			const outer = 3
			s, file := traceAndShow(t, bin, []string{"--detail", "high", "--per-rank"}, append([]string{"--"}, impl.Command(4, nil, prog, strconv.Itoa(outer))...)...)
			// Rank 0 shows its sites first (0-5); the odd ranks' Recv and Send follow (6, 7).
			calls := []string{"Init", "Comm_rank", "Send", "Recv", "Barrier", "Finalize", "Recv", "Send"}
			lines := sourceLines(t, "nested.c", "Init", "Comm_rank", "Send", "Recv", "Recv", "Send", "Barrier", "Finalize")
			checkSites(t, s, calls, []string{lines[0], lines[1], lines[2], lines[3], lines[6], lines[7], lines[4], lines[5]})
			even := fmt.Sprintf("Init0 Comm_rank1 ((Send2+Recv3)[7]+Barrier4)[%d] Finalize5", outer)
			odd := fmt.Sprintf("Init0 Comm_rank1 ((Recv6+Send7)[7]+Barrier4)[%d] Finalize5", outer)
			for r, want := range map[string]string{"0": even, "2": even, "1": odd, "3": odd} {
				// High detail: drop the compute bursts and times to compare the calls.
				if got := lowOf(s.structure[r]); got != want {
					t.Errorf("rank %s: %q, want %q", r, got, want)
				}
			}
			for _, w := range []string{"peers 1,3", "count 16 x 4 B"} {
				if !strings.Contains(s.text, w) {
					t.Errorf("output lacks %q:\n%s", w, s.text)
				}
			}
			// Grouped: each role's structure once, under its ranks.
			g := show(t, bin, file)
			for _, w := range []string{"ranks 0,2:\n  " + even + "\n", "ranks 1,3:\n  " + odd + "\n"} {
				if strings.Count(g.text, w) != 1 {
					t.Errorf("grouped output lacks %q once:\n%s", w, g.text)
				}
			}
		})
	}
}

// lowOf reduces a high-detail structure to its calls: compute bursts and
// times removed.
func lowOf(high string) string {
	s := regexp.MustCompile(`: [0-9.]+ [nµm]?s`).ReplaceAllString(high, "")
	s = regexp.MustCompile(`CPU\d+\+`).ReplaceAllString(s, "")
	s = regexp.MustCompile(`CPU\d+ `).ReplaceAllString(s, "")
	return s
}

// TestTraceFortran: the Fortran twin of loops.c, through the mpif.h
// bindings. Call sites must be the Fortran source lines (the binding's
// caller), the two barriers on different lines two sites, and the
// bindings' handle conversions (MPI_Comm_f2c, ...) no calls of their own.
func TestTraceFortran(t *testing.T) {
	for _, impl := range []mpitest.Impl{mpitest.OpenMPI(), mpitest.MPICH()} {
		t.Run(impl.Name, func(t *testing.T) {
			mpitest.RequireFortran(t, impl)
			bin := mpitest.BuildMpiprobe(t)
			prog := mpitest.Build(t, impl, "loopsf")
			s, _ := traceAndShow(t, bin, nil, append([]string{"--"}, impl.Command(2, nil, prog, "6")...)...)
			calls := []string{"Init", "Comm_rank", "Bcast", "Barrier", "Allreduce", "Barrier", "Finalize"}
			checkSites(t, s, calls, sourceLines(t, "loopsf.f90", calls...))
			want := "Init0 Comm_rank1 Bcast2 Barrier3 (Allreduce4)[6] Barrier5 Finalize6"
			for _, r := range []string{"0", "1"} {
				if s.structure[r] != want {
					t.Errorf("rank %s: %q, want %q\n%s", r, s.structure[r], want, s.text)
				}
			}
		})
	}
}

// TestTraceRunningJob attaches with -p to ranks already inside their loop
// for a fixed duration: the trace starts mid-loop (no MPI_Init) and holds
// only allreduces at the loop's call site.
func TestTraceRunningJob(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	prog := mpitest.Build(t, impl, "loops")
	job := mpitest.StartJob(t, impl.Command(2, nil, prog, "400", "10"), prog, 2, "libmpi")
	time.Sleep(500 * time.Millisecond) // past MPI_Init, into the loop
	args := []string{"--duration", "1500ms"}
	for _, pid := range job.Ranks {
		args = append(args, "-p", strconv.Itoa(pid))
	}
	s, _ := traceAndShow(t, bin, nil, args...)
	loop := regexp.MustCompile(`^\(Allreduce0\)\[(\d+)\]$`)
	for _, r := range []string{"0", "1"} {
		m := loop.FindStringSubmatch(s.structure[r])
		if m == nil {
			t.Errorf("rank %s: %q, want (Allreduce0)[n]\n%s", r, s.structure[r], s.text)
			continue
		}
		// 1.5 s of 10 ms iterations: at most 150, and a good share of
		// them; on a loaded 2-core machine a traced rank's busy loop gets
		// as little as a third of a core (38 seen), so the floor is low.
		if n, _ := strconv.Atoi(m[1]); n < 15 || n > 160 {
			t.Errorf("rank %s: %d iterations in 1.5 s of a 10 ms loop", r, n)
		}
	}
	if want := sourceLines(t, "loops.c", "Allreduce")[0]; s.sites[0] != [2]string{"Allreduce", want} {
		t.Errorf("site 0 = %v, want Allreduce at %s", s.sites[0], want)
	}
}

// TestTraceKilledRank: a rank killed with SIGKILL in the middle of its loop
// keeps what it recorded; show names how it ended.
func TestTraceKilledRank(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	prog := mpitest.Build(t, impl, "loops")
	file := filepath.Join(t.TempDir(), "run.trace")
	killed := make(chan error, 1)
	go func() {
		ranks, err := mpitest.WaitRanksFor(30*time.Second, prog, 2, "libmpi")
		if err != nil {
			killed <- err
			return
		}
		time.Sleep(time.Second)
		killed <- syscall.Kill(ranks[1], syscall.SIGKILL)
	}()
	code, stdout, stderr := runOutput(t, bin, nil, append([]string{"trace", "-o", file, "--"}, impl.Command(2, nil, prog, "1000", "10")...)...)
	if err := <-killed; err != nil {
		t.Fatal(err)
	}
	// The job failed (mpirun reports the rank killed by SIGKILL: 137),
	// and trace passes the command's status on; the trace is still written.
	if code != 137 || !strings.Contains(stdout+stderr, "written to "+file) {
		t.Fatalf("mpiprobe trace exit %d, want mpirun's 137 and the trace written\n%s\n%s", code, stdout, stderr)
	}
	code, out, stderr := runOutput(t, bin, nil, "trace", "show", file)
	if code != 0 {
		t.Fatalf("show exit %d: %s", code, stderr)
	}
	s := parseShow(t, out)
	m := regexp.MustCompile(`(?m)^ended: .*killed by SIGKILL \(rank (\d)\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no rank shown as killed by SIGKILL:\n%s", out)
	}
	killedRank := m[1]
	if !regexp.MustCompile(`^Init0 Comm_rank1 Bcast2 Barrier3 \(Allreduce4\)\[\d+\]`).MatchString(s.structure[killedRank]) {
		t.Errorf("killed rank %s: %q, want its calls up to the kill; trace show said:\n%s", killedRank, s.structure[killedRank], out)
	}
}

// TestTraceLossIsCounted squeezes the ring buffer to 4 KiB (64 calls)
// under a tight allreduce loop: calls are lost, and every call the program
// makes is either recorded or counted as lost, in the summary line and per
// rank in trace show.
func TestTraceLossIsCounted(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	prog := mpitest.Build(t, impl, "allreduce")
	const iters = 100000
	file := filepath.Join(t.TempDir(), "run.trace")
	code, stdout, stderr := runOutput(t, bin, nil, append([]string{"trace", "--ring", "4K", "-o", file, "--"},
		impl.Command(2, []string{"--mca", "pml", "ob1", "--mca", "btl", "self,vader"}, prog, strconv.Itoa(iters))...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	m := regexp.MustCompile(`trace: (\d+) MPI calls of 2 ranks written to \S+; (\d+) calls LOST`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no loss reported with a 4 KiB ring:\n%s", stdout)
	}
	recorded, _ := strconv.Atoi(m[1])
	lost, _ := strconv.Atoi(m[2])
	// Per rank: Init, Comm_rank, 1000 warm-up allreduces, Barrier, 2 Wtime, the loop, Finalize.
	if want := 2 * (iters + 1006); recorded+lost != want || lost == 0 {
		t.Errorf("recorded %d + lost %d, the program makes %d calls", recorded, lost, want)
	}
	code, out, _ := runOutput(t, bin, nil, "trace", "show", file)
	if code != 0 || strings.Count(out, "LOST") != 2 {
		t.Errorf("show: exit %d, want both ranks marked LOST:\n%s", code, out)
	}
}

// TestTraceThreads: with MPI_THREAD_MULTIPLE, two threads of each rank make
// calls at the same time; each thread's stream is compressed on its own.
// With one thread-state slot for the node, the first thread to call keeps
// its state there and the others in task storage, the slot passing on when
// its thread ends: the traces must not differ.
func TestTraceThreads(t *testing.T) {
	for _, slots := range []string{"", "1"} {
		for _, impl := range []mpitest.Impl{mpitest.OpenMPI(), mpitest.MPICH()} {
			t.Run(impl.Name+"/slots="+slots, func(t *testing.T) { traceThreads(t, impl, slots) })
		}
	}
}

func traceThreads(t *testing.T, impl mpitest.Impl, slots string) {
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	prog := mpitest.Build(t, impl, "threads")
	const na, nb = 6, 4
	args := []string{"--"}
	if slots != "" {
		args = []string{"--thread-slots", slots, "--"}
	}
	s, _ := traceAndShow(t, bin, []string{"--per-rank"}, append(args, impl.Command(2, nil, prog, strconv.Itoa(na), strconv.Itoa(nb))...)...)
	// Per rank: the main thread, then the threads in the order they first called.
	threads := regexp.MustCompile(`(?m)^rank (\d+) .*\n  thread \d+:\n  (.*)\n  thread \d+:\n  (.*)\n  thread \d+:\n  (.*)$`).FindAllStringSubmatch(s.text, -1)
	if len(threads) != 2 {
		t.Fatalf("want 2 ranks of 3 threads each:\n%s", s.text)
	}
	for _, m := range threads {
		if m[2] != "Init_thread0 Comm_dup1 Comm_dup2 Comm_free3 Comm_free4 Finalize5" {
			t.Errorf("rank %s main thread: %q", m[1], m[2])
		}
		workers := []string{m[3], m[4]}
		want := []string{fmt.Sprintf("(Allreduce6)[%d]", na), fmt.Sprintf("(Barrier7)[%d]", nb)}
		if workers[0] != want[0] && workers[0] == want[1] { // the barrier thread called first
			want = []string{fmt.Sprintf("(Allreduce7)[%d]", na), fmt.Sprintf("(Barrier6)[%d]", nb)}
			want[0], want[1] = want[1], want[0]
		}
		if workers[0] != want[0] || workers[1] != want[1] {
			t.Errorf("rank %s workers: %q, want %q", m[1], workers, want)
		}
	}
}

// TestTraceExportMillion records 10^6 calls of two ranks (million.c) and
// exports them as a Chrome/Perfetto timeline: every recorded call must be
// one valid complete event on its rank's track, with its arguments, and the
// export must stream (its memory well under the size of its output).
func TestTraceExportMillion(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	prog := mpitest.Build(t, impl, "million")
	const iters = 250000
	dir := t.TempDir()
	file := filepath.Join(dir, "million.trace")
	start := time.Now()
	code, stdout, stderr := runOutput(t, bin, nil, append([]string{"trace", "-o", file, "--"},
		impl.Command(2, []string{"--mca", "pml", "ob1", "--mca", "btl", "self,vader"}, prog, strconv.Itoa(iters))...)...)
	if code != 0 {
		t.Fatalf("trace: exit %d\n%s\n%s", code, stdout, stderr)
	}
	m := regexp.MustCompile(`trace: (\d+) MPI calls of 2 ranks`).FindStringSubmatch(stdout)
	if m == nil || strings.Contains(stdout, "LOST") {
		t.Fatalf("trace: %s", stdout)
	}
	recorded, _ := strconv.Atoi(m[1])
	if recorded != 4*iters+8 { // + Init, Comm_rank, Comm_size, Finalize per rank
		t.Errorf("recorded %d calls, the program makes %d", recorded, 4*iters+8)
	}
	t.Logf("traced %d calls in %v", recorded, time.Since(start).Round(time.Millisecond))

	// The export's peak RSS, measured by GNU time: the rusage of a child
	// of this test would not do, as Linux carries the parent's peak RSS
	// into a child that Go starts with vfork and exec.
	const gnuTime = "/usr/bin/time"
	if _, err := os.Stat(gnuTime); err != nil {
		mpitest.Require(t, gnuTime+" (Debian package time) not installed")
	}
	out, rssFile := filepath.Join(dir, "million.json"), filepath.Join(dir, "rss")
	cmd := exec.Command(gnuTime, "-f", "%M", "-o", rssFile, bin, "trace", "export", "--format", "chrome", "-o", out, file)
	start = time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("export: %v\n%s", err, b)
	}
	took := time.Since(start)
	kb, err := os.ReadFile(rssFile)
	if err != nil {
		t.Fatal(err)
	}
	rssKB, err := strconv.ParseInt(strings.TrimSpace(string(kb)), 10, 64)
	if err != nil {
		t.Fatalf("%s -f %%M wrote %q: %v", gnuTime, kb, err)
	}
	rss := rssKB << 10
	tfi, _ := os.Stat(file)
	jfi, _ := os.Stat(out)
	t.Logf("trace file %d bytes (%.2f bytes/call); timeline %d bytes (%.0f bytes/call); export took %v, peak RSS %d MiB",
		tfi.Size(), float64(tfi.Size())/float64(recorded), jfi.Size(), float64(jfi.Size())/float64(recorded), took.Round(time.Millisecond), rss>>20)
	// Holding the events (56 bytes a call) or the JSON would take 56 MB or
	// 280 MB here; streaming takes buffers and the definitions.
	if rss > 48<<20 {
		t.Errorf("export peak RSS %d MiB for %d calls: not streaming", rss>>20, recorded)
	}

	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start = time.Now()
	st, err := chromecheck.Check(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		t.Fatalf("timeline breaks the Trace Event Format: %v", err)
	}
	t.Logf("validated %d events, %d metadata, in %v", st.Complete, st.Metadata, time.Since(start).Round(time.Millisecond))
	if st.Complete != recorded || st.Processes != 2 || st.Names["MPI_Send"] != iters || st.Names["MPI_Recv"] != iters || st.Names["MPI_Allreduce"] != 2*iters {
		t.Errorf("timeline holds %+v, want %d calls of 2 ranks", st, recorded)
	}

	// The first send: its call site is million.c's MPI_Send line, its
	// arguments the peer, count and element size.
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	send := sourceLines(t, "million.c", "Send")[0]
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	found := false
	for sc.Scan() && !found {
		l := sc.Text()
		if strings.Contains(l, `"name":"MPI_Send"`) {
			found = true
			for _, w := range []string{`"pid":1`, `"site":"`, send + `"`, `"peer":1`, `"count":1`, `"elem_size":4`, `"ret":0`} {
				if !strings.Contains(l, w) {
					t.Errorf("first MPI_Send event lacks %s: %s", w, l)
				}
			}
		}
	}
	if !found {
		t.Error("no MPI_Send event")
	}
}

// readTrace reads a trace file back.
func readTrace(t *testing.T, file string) *tracefile.Trace {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := tracefile.Read(f)
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	return tr
}

// callCounts returns, per MPI rank ("0", "1", ...), how many calls of
// each function ("Irecv") the trace holds.
func callCounts(tr *tracefile.Trace) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, e := range tr.Events {
		r := tr.Ranks[e.Rank].Rank
		if out[r] == nil {
			out[r] = map[string]int{}
		}
		out[r][strings.TrimPrefix(tr.Calls[e.Call], "MPI_")]++
	}
	return out
}

// TestTraceApplicationCallsOnly: callsf.f90 makes, through the `use mpi`
// bindings, a known number of calls of each function. The bindings make
// more MPI calls inside (handle conversions such as MPI_Request_c2f after
// their C call, the C call itself) and so may the library: the trace must
// hold exactly the program's calls, per rank and function, each at its
// line of callsf.f90, under Open MPI and MPICH.
func TestTraceApplicationCallsOnly(t *testing.T) {
	for _, impl := range []mpitest.Impl{mpitest.OpenMPI(), mpitest.MPICH()} {
		t.Run(impl.Name, func(t *testing.T) {
			mpitest.RequireFortran(t, impl)
			bin := mpitest.BuildMpiprobe(t)
			prog := mpitest.Build(t, impl, "callsf")
			const iters = 7
			_, file := traceAndShow(t, bin, nil, append([]string{"--"}, impl.Command(2, nil, prog, strconv.Itoa(iters))...)...)
			tr := readTrace(t, file)
			want := map[string]int{"Init": 1, "Comm_rank": 1, "Comm_size": 1, "Barrier": 1, "Finalize": 1,
				"Irecv": iters, "Send": iters, "Wait": iters, "Comm_split": iters, "Allreduce": iters,
				"Comm_free": iters, "Wtime": iters}
			got := callCounts(tr)
			if len(got) != 2 {
				t.Fatalf("ranks %v in the trace, want 0 and 1", slices.Collect(maps.Keys(got)))
			}
			for r, calls := range got {
				if !maps.Equal(calls, want) {
					t.Errorf("rank %s: calls %v, want %v", r, calls, want)
				}
			}
			for _, c := range tr.Calls {
				if strings.HasSuffix(c, "_c2f") || strings.HasSuffix(c, "_f2c") {
					for _, e := range tr.Events {
						if tr.Calls[e.Call] == c {
							t.Errorf("%s recorded at %+v", c, tr.Sites[e.Site])
							break
						}
					}
				}
			}
			for _, e := range tr.Events {
				if s := tr.Sites[e.Site]; filepath.Base(s.File) != "callsf.f90" || s.Line == 0 {
					t.Errorf("%s recorded at %s+%#x (%s:%d), not at a line of callsf.f90", tr.Calls[e.Call], s.Function, s.FuncOffset, s.File, s.Line)
					break
				}
			}
			// The element size and count come from the C call the binding
			// makes; the Fortran binding's own result, from it too.
			for _, e := range tr.Events {
				switch tr.Calls[e.Call] {
				case "MPI_Send", "MPI_Irecv":
					if e.Count != 1 || e.ElemSize != 4 || e.Peer != 1-int32(mustAtoi(t, tr.Ranks[e.Rank].Rank)) {
						t.Errorf("%s: count %d x %d B, peer %d; want 1 x 4 B to the other rank", tr.Calls[e.Call], e.Count, e.ElemSize, e.Peer)
					}
				}
				if e.Ret != 0 {
					t.Errorf("%s returned %d", tr.Calls[e.Call], e.Ret)
				}
			}
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("rank %q: %v", s, err)
	}
	return n
}

// TestTraceDatatypeSizes traces testdata/typesizes.c, whose datatypes are
// freed and made again (usually at the same address) with other sizes:
// each MPI_Send and MPI_Recv must carry the size of the datatype it was
// given then, 4, 8 and 12 bytes in turn, not one kept from an earlier one.
// MPICH's derived datatypes are not read (docs/trace.md): 0, unknown,
// there, never a wrong size.
func TestTraceDatatypeSizes(t *testing.T) {
	for _, impl := range []mpitest.Impl{mpitest.OpenMPI(), mpitest.MPICH()} {
		t.Run(impl.Name, func(t *testing.T) {
			mpitest.RequireE2E(t, impl)
			bin := mpitest.BuildMpiprobe(t)
			prog := mpitest.Build(t, impl, "typesizes")
			const iters = 30
			_, file := traceAndShow(t, bin, nil, append([]string{"--"}, impl.Command(2, nil, prog, strconv.Itoa(iters))...)...)
			tr := readTrace(t, file)
			seen := map[string]int{}
			for _, e := range tr.Events {
				name := tr.Calls[e.Call]
				if name != "MPI_Send" && name != "MPI_Recv" {
					continue
				}
				i := seen[name]
				seen[name]++
				if want := int32(4 * (1 + i%3)); e.ElemSize != want && (impl.Name != "mpich" || e.ElemSize != 0) {
					t.Errorf("%s #%d: element of %d B, want %d B", name, i, e.ElemSize, want)
				}
			}
			if seen["MPI_Send"] != iters || seen["MPI_Recv"] != iters {
				t.Errorf("%d sends and %d receives recorded, want %d each", seen["MPI_Send"], seen["MPI_Recv"], iters)
			}
		})
	}
}

// TestTraceFileSystemFull: a trace that does not fit is not announced as
// written: the error is one line naming the file and the cause, no part of
// the trace is left and the old file stays.
func TestTraceFileSystemFull(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	prog := mpitest.Build(t, impl, "allreduce")
	dir := mpitest.Tmpfs(t, "64k")
	file := filepath.Join(dir, "run.trace")
	if err := os.WriteFile(file, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runOutput(t, bin, nil, append([]string{"trace", "-o", file, "--"},
		impl.Command(2, []string{"--mca", "pml", "ob1", "--mca", "btl", "self,vader"}, prog, "40000")...)...)
	if strings.Contains(stdout, "written to") {
		t.Errorf("success announced:\n%s", stdout)
	}
	if want := "mpiprobe trace: write " + file + ": no space left on device\n"; code != 1 || !strings.HasSuffix(stderr, want) || strings.Count(stderr, want) != 1 {
		t.Errorf("exit %d, stderr %q, want it to end in %q", code, stderr, want)
	}
	if got, _ := os.ReadFile(file); string(got) != "old" {
		t.Errorf("%s holds %d bytes, want the old file", file, len(got))
	}
	if des, _ := os.ReadDir(dir); len(des) != 1 {
		t.Errorf("left in %s: %v", dir, des)
	}
}

// TestTraceExitStatus: mpiprobe trace -- COMMAND exits with the command's
// status, 128+N when signal N killed it, as the counting mode does.
func TestTraceExitStatus(t *testing.T) {
	mpitest.RequireE2E(t)
	bin := mpitest.BuildMpiprobe(t)
	for _, tc := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"exit 255", 255},
		{"kill -KILL $$", 137},
	} {
		file := filepath.Join(t.TempDir(), "run.trace")
		code, stdout, stderr := runOutput(t, bin, nil, "trace", "-o", file, "--", "sh", "-c", tc.script)
		if code != tc.want || !strings.Contains(stdout, "written to "+file) || strings.Contains(stderr, "mpiprobe trace: ") {
			t.Errorf("mpiprobe trace -- sh -c %q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", tc.script, code, tc.want, stdout, stderr)
		}
		if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != outputMode {
			t.Errorf("mpiprobe trace -o %s: mode %v (%v), want %v: a trace holds the job's command lines and call sites", file, fi.Mode().Perm(), err, os.FileMode(outputMode))
		}
	}

	// A SIGINT to mpiprobe goes to the command; mpiprobe exits 130.
	cmd := exec.Command(bin, "trace", "-v", "-o", filepath.Join(t.TempDir(), "run.trace"), "--", "sleep", "60")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), "msg=tracing") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("mpiprobe trace -- sleep 60: exit %d after SIGINT, want 130\nstderr:\n%s", code, stderr.String())
	}
}

// checkLoopsTrace checks a trace of loops.c run with iters iterations on 2
// ranks: every call's site is its source line, and each rank's structure
// is the program's loop.
func checkLoopsTrace(t *testing.T, s shown, iters int) {
	t.Helper()
	calls := []string{"Init", "Comm_rank", "Bcast", "Barrier", "Allreduce", "Finalize"}
	checkSites(t, s, calls, sourceLines(t, "loops.c", calls...))
	want := fmt.Sprintf("Init0 Comm_rank1 Bcast2 Barrier3 (Allreduce4)[%d] Finalize5", iters)
	for _, r := range []string{"0", "1"} {
		if s.structure[r] != want {
			t.Errorf("rank %s: %q, want %q\n%s", r, s.structure[r], want, s.text)
		}
	}
}

// TestTraceLoopsInPhase: ftloop.c and mgloop.c have NPB FT's and MG's
// shape, a call through the loop's own call sites just before the loop.
// trace show must start each loop where the source loop starts, with the
// warm-up call before it (FT: Alltoall (Alltoall+Reduce)[6], MG: the
// exchange, then (exchange+Allreduce)[20]), and the printed structure must
// expand to the calls recorded, in order.
func TestTraceLoopsInPhase(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	for _, tc := range []struct {
		prog string
		// calls in source order, and the site number each gets in the trace
		calls []string
		num   []int
		want  string
	}{
		{"ftloop", []string{"Alltoall", "Reduce", "Init", "Comm_size", "Bcast", "Barrier", "Finalize"}, []int{3, 4, 0, 1, 2, 5, 6},
			"Init0 Comm_size1 Bcast2 Alltoall3 (Alltoall3+Reduce4)[6] Barrier5 Finalize6"},
		{"mgloop", []string{"Irecv", "Irecv", "Send", "Send", "Waitall", "Init", "Comm_rank", "Comm_size", "Allreduce", "Allreduce", "Finalize"},
			[]int{3, 4, 5, 6, 7, 0, 1, 2, 8, 9, 10},
			"Init0 Comm_rank1 Comm_size2 Irecv3 Irecv4 Send5 Send6 Waitall7 (Irecv3+Irecv4+Send5+Send6+Waitall7+Allreduce8)[20] Allreduce9 Finalize10"},
	} {
		t.Run(tc.prog, func(t *testing.T) {
			prog := mpitest.Build(t, impl, tc.prog)
			s, file := traceAndShow(t, bin, nil, append([]string{"--"}, impl.Command(2, nil, prog)...)...)
			lines := sourceLines(t, tc.prog+".c", tc.calls...)
			calls, at := make([]string, len(tc.calls)), make([]string, len(tc.calls))
			for i, n := range tc.num {
				calls[n], at[n] = tc.calls[i], lines[i]
			}
			checkSites(t, s, calls, at)
			recorded := recordedCalls(t, file, s)
			for _, r := range []string{"0", "1"} {
				if s.structure[r] != tc.want {
					t.Errorf("rank %s: %q, want %q\n%s", r, s.structure[r], tc.want, s.text)
				}
				if got := expandStructure(t, s.structure[r]); !slices.Equal(got, recorded[r]) {
					t.Errorf("rank %s: the structure expands to\n%v\nthe trace holds\n%v", r, got, recorded[r])
				}
			}
		})
	}
}

// recordedCalls reads a trace file and returns each MPI rank's calls in
// order, named as trace show names them ("Allreduce4"), with the site
// numbers of its call site table.
func recordedCalls(t *testing.T, file string, s shown) map[string][]string {
	t.Helper()
	tr := readTrace(t, file)
	num := map[string]int{} // "Alltoall ftloop.c:21" -> site number
	for n, cs := range s.sites {
		num[cs[0]+" "+cs[1]] = n
	}
	evs := slices.Clone(tr.Events)
	slices.SortStableFunc(evs, func(x, y tracefile.Event) int { return int(x.Enter - y.Enter) })
	out := map[string][]string{}
	for _, e := range evs {
		site := tr.Sites[e.Site]
		call := strings.TrimPrefix(tr.Calls[e.Call], "MPI_")
		n, ok := num[fmt.Sprintf("%s %s:%d", call, filepath.Base(site.File), site.Line)]
		if !ok {
			t.Fatalf("call %s at %s:%d is not in the call site table", call, site.File, site.Line)
		}
		r := tr.Ranks[e.Rank].Rank
		out[r] = append(out[r], call+strconv.Itoa(n))
	}
	return out
}

// expandStructure unrolls a low-detail structure ("A0 (B1+C2)[3] D3") into
// its calls.
func expandStructure(t *testing.T, text string) []string {
	t.Helper()
	var parse func(s string, sep byte) ([]string, string)
	parse = func(s string, sep byte) ([]string, string) {
		var out []string
		for len(s) > 0 && s[0] != ')' {
			if s[0] == '(' {
				body, rest := parse(s[1:], '+')
				n, after, ok := strings.Cut(strings.TrimPrefix(rest, ")["), "]")
				k, err := strconv.Atoi(n)
				if !strings.HasPrefix(rest, ")[") || !ok || err != nil {
					t.Fatalf("bad loop at %q in %q", rest, text)
				}
				for range k {
					out = append(out, body...)
				}
				s = after
			} else {
				end := strings.IndexAny(s, " +)")
				if end < 0 {
					end = len(s)
				}
				out, s = append(out, s[:end]), s[end:]
			}
			if len(s) > 0 && s[0] == sep {
				s = s[1:]
			}
		}
		return out, s
	}
	out, rest := parse(text, ' ')
	if rest != "" {
		t.Fatalf("bad structure %q at %q", text, rest)
	}
	return out
}
