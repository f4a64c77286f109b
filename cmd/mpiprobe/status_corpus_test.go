package main

import (
	"bufio"
	"encoding/json"
	"fmt"
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

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// corpusCase is one program of testdata/deadlock with what its header
// says: how many ranks, and the facts the verdict must state.
type corpusCase struct {
	name, src string
	np        int
	expects   []string
	// implExpects are facts only one library gives ("expect-openmpi:
	// ..."), by mpitest.Impl name.
	implExpects map[string][]string
	// history runs the job under mpiprobe --collectives ("history: yes").
	history bool
	// gaps say what the tool gets wrong on this program today, under
	// every library ("known-gap: ...", key "") or one ("known-gap-mpich:
	// ..."): its expectations stay true and are checked, a failure is
	// logged and counted as a known gap, and a pass fails the test so
	// that the line goes when the gap is closed. "known-gap-inferred-mpich:
	// ..." (key "inferred-mpich") is a gap only where the layouts are
	// inferred (tables off: a copy the tables do not know, the roots'
	// builds), for what only the table of a checked build holds.
	gaps map[string]string
}

// gap is what the tool gets wrong on c under the library impl, or "";
// inferred says the layouts are inferred, not the table's.
func (c corpusCase) gap(impl string, inferred bool) string {
	if g, ok := c.gaps["inferred-"+impl]; ok && inferred {
		return g
	}
	if g, ok := c.gaps[impl]; ok {
		return g
	}
	return c.gaps[""]
}

// readCorpus reads the headers of testdata/deadlock: "np: N" and any
// number of "expect: ..." lines in the leading comment ("//" or "!"), and
// "expect-openmpi: ..." or "expect-mpich: ..." for what only one library
// gives, and "known-gap: ..." (or "known-gap-openmpi: ...") for a program
// the tool gets wrong today.
// Files with neither are not corpus programs.
func readCorpus(t *testing.T) []corpusCase {
	t.Helper()
	dir := filepath.Join(mpitest.RepoRoot(t), "testdata", "deadlock")
	var out []corpusCase
	for _, pat := range []string{"*.c", "*.f90"} {
		files, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			c := corpusCase{name: strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)), src: f}
			fh, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(fh)
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				if !strings.HasPrefix(line, "//") && !strings.HasPrefix(line, "!") {
					break
				}
				line = strings.TrimSpace(strings.TrimLeft(line, "/!"))
				if v, ok := strings.CutPrefix(line, "np:"); ok {
					c.np, _ = strconv.Atoi(strings.TrimSpace(v))
				}
				if v, ok := strings.CutPrefix(line, "history:"); ok {
					c.history = strings.TrimSpace(v) == "yes"
				}
				for _, impl := range []string{"", "-openmpi", "-mpich", "-inferred-openmpi", "-inferred-mpich"} {
					if v, ok := strings.CutPrefix(line, "known-gap"+impl+":"); ok {
						if c.gaps == nil {
							c.gaps = map[string]string{}
						}
						c.gaps[strings.TrimPrefix(impl, "-")] = strings.TrimSpace(v)
					}
				}
				if v, ok := strings.CutPrefix(line, "expect:"); ok {
					c.expects = append(c.expects, strings.TrimSpace(v))
				}
				for _, impl := range []string{"openmpi", "mpich"} {
					if v, ok := strings.CutPrefix(line, "expect-"+impl+":"); ok {
						if c.implExpects == nil {
							c.implExpects = map[string][]string{}
						}
						c.implExpects[impl] = append(c.implExpects[impl], strings.TrimSpace(v))
					}
				}
			}
			fh.Close()
			if c.np == 0 && len(c.expects) == 0 {
				// A program with modes of its own (p2p_deadlock.c,
				// TestStatusP2P's), not one of the corpus.
				t.Logf("%s: no np:/expect: header, not a corpus program", filepath.Base(f))
				continue
			}
			if c.np < 2 || len(c.expects) == 0 {
				t.Errorf("%s: header needs np: and expect: lines", f)
				continue
			}
			out = append(out, c)
		}
	}
	return out
}

// fields parses "kind a=b c=d" into the kind and its fields; "rank 0
// call=X" gives kind "rank" with the field "rank"="0".
func fields(e string) (string, map[string]string) {
	parts := strings.Fields(e)
	m := map[string]string{}
	if len(parts) == 0 {
		return "", m
	}
	for i, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok && i == 0 {
			k, v = parts[0], p
		}
		m[k] = v
	}
	return parts[0], m
}

func intList(s string) []int {
	var out []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '-' || r == '>' }) {
		n, err := strconv.Atoi(f)
		if err == nil {
			out = append(out, n)
		}
	}
	return out
}

func containsAll(have, want []int) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// commMatches says whether a communicator named name of size size is what
// an expectation's comm= says: "WORLD", or "other" for any other.
func commMatches(want, name string) bool {
	switch want {
	case "", "*":
		return true
	case "WORLD":
		return name == "WORLD"
	default:
		return name != "WORLD"
	}
}

// check returns what an expectation finds wrong in a status result, or "".
//
// The expectation language (one fact per "expect:" line):
//
//	cycle 0->1->0                          the ranks wait on each other in this order
//	knot ranks=A,B,C                       exactly these ranks cannot move (AND/OR wait-for graph)
//	sitelines rank=R lines=A,B             R's call site names every one of lines A,B (a merged call)
//	not-says TEXT                          the verdict does not hold TEXT (a claim the evidence does not show)
//	missing-collective rank=R call=C comm=WORLD|other waiting=A,B
//	                                       R is a member absent from C, which A,B wait in
//	finalized rank=R call=C waiting=A,B    the same, R being in MPI_Finalize without C
//	mismatch ranks=A,B [call=C] [comm=K]   A and B are sides of a mismatch (C one of its calls)
//	rank R call=C|none [comm=K] [peer=P|any] [tag=T] the rank table's facts for R;
//	                                       call=A|B|none: any one of them (a rank
//	                                       that polls is in its call only for moments)
//	state rank=R stopped                   R is shown stopped (ranks[].stopped: by a signal or a debugger)
//	suspect rank=R                         R is among the ranks that block progress
//	lead rank=R                            the verdict names R first
func check(st statusJSON, raw, e string) string {
	kind, f := fields(e)
	switch kind {
	case "cycle":
		want := intList(strings.Fields(e)[1])
		want = want[:len(want)-1]
		for _, c := range st.Cycles {
			if slices.Equal(c, want) {
				return ""
			}
		}
		return fmt.Sprintf("no cycle %v in %v", want, st.Cycles)
	case "sitelines":
		r, _ := strconv.Atoi(f["rank"])
		for _, rk := range st.Ranks {
			if rk.Rank != r {
				continue
			}
			for _, l := range intList(f["lines"]) {
				if !regexp.MustCompile(`[:r] ?` + strconv.Itoa(l) + `\b`).MatchString(rk.Site) {
					return fmt.Sprintf("rank %d's site %q does not name line %d", r, rk.Site, l)
				}
			}
			return ""
		}
		return fmt.Sprintf("rank %d is not in the table", r)
	case "not-says":
		if t := strings.TrimSpace(strings.TrimPrefix(e, "not-says")); strings.Contains(st.Verdict, t) {
			return fmt.Sprintf("the verdict says %q", t)
		}
		return ""
	case "knot":
		if want := intList(f["ranks"]); !slices.Equal(st.Knot.Ranks, want) {
			return fmt.Sprintf("knot %v, want %v", st.Knot.Ranks, want)
		}
		return ""
	case "missing-collective", "finalized":
		r, _ := strconv.Atoi(f["rank"])
		for _, a := range st.Absent {
			if a.Rank == r && a.Call == f["call"] && commMatches(f["comm"], a.Comm.Name) &&
				containsAll(a.Waiting, intList(f["waiting"])) && (kind != "finalized" || a.State == "finalized") {
				return ""
			}
		}
		return fmt.Sprintf("rank %d is not named absent from %s (%s) that %s wait in: absent %+v", r, f["call"], f["comm"], f["waiting"], st.Absent)
	case "mismatch":
		want := intList(f["ranks"])
		for _, m := range st.Mismatches {
			var rs []int
			calls := false
			for _, s := range m.Sides {
				rs = append(rs, s.Ranks...)
				calls = calls || f["call"] == "" || s.Call == f["call"]
			}
			if containsAll(rs, want) && calls && commMatches(f["comm"], m.Comm.Name) {
				return ""
			}
		}
		return fmt.Sprintf("no mismatch of ranks %v: %+v", want, st.Mismatches)
	case "rank":
		r, _ := strconv.Atoi(f["rank"])
		for _, rk := range st.Ranks {
			if rk.Rank != r {
				continue
			}
			calls := strings.Split(f["call"], "|")
			if !slices.Contains(calls, rk.Call) && (rk.Call != "" || !slices.Contains(calls, "none")) {
				return fmt.Sprintf("rank %d is in %q, want %s", r, rk.Call, f["call"])
			}
			if cm, ok := f["comm"]; ok && (rk.Comm == nil || !commMatches(cm, rk.Comm.Name)) {
				return fmt.Sprintf("rank %d: communicator %+v, want %s", r, rk.Comm, cm)
			}
			if p, ok := f["peer"]; ok {
				wantPeer := -2
				if p != "any" {
					wantPeer, _ = strconv.Atoi(p)
				}
				if rk.Peer == nil {
					return fmt.Sprintf("rank %d: peer unknown, want %s", r, p)
				}
				if *rk.Peer != wantPeer {
					return fmt.Sprintf("rank %d: peer %d, want %s", r, *rk.Peer, p)
				}
			}
			if tg, ok := f["tag"]; ok {
				want, _ := strconv.Atoi(tg)
				if rk.Tag == nil {
					return fmt.Sprintf("rank %d: tag unknown, want %s", r, tg)
				}
				if *rk.Tag != want {
					return fmt.Sprintf("rank %d: tag %d, want %s", r, *rk.Tag, tg)
				}
			}
			return ""
		}
		return fmt.Sprintf("rank %d is not in the table", r)
	case "state":
		// Only "stopped" is a state status writes: ranks[].stopped says
		// how ("by SIGSTOP"), absent while the rank runs.
		r, _ := strconv.Atoi(f["rank"])
		if want := strings.Fields(e)[len(strings.Fields(e))-1]; want != "stopped" {
			return "unknown state " + strconv.Quote(want)
		}
		var states struct {
			Ranks []struct {
				Rank    int    `json:"rank"`
				Stopped string `json:"stopped"`
			} `json:"ranks"`
		}
		if err := json.Unmarshal([]byte(raw), &states); err != nil {
			return err.Error()
		}
		for _, rk := range states.Ranks {
			if rk.Rank == r {
				if rk.Stopped == "" {
					return fmt.Sprintf("rank %d is not shown stopped", r)
				}
				return ""
			}
		}
		return fmt.Sprintf("rank %d is not in the table", r)
	case "suspect":
		r, _ := strconv.Atoi(f["rank"])
		if !slices.Contains(st.Suspects, r) {
			return fmt.Sprintf("rank %d is not a suspect: %v", r, st.Suspects)
		}
		return ""
	case "lead":
		r, _ := strconv.Atoi(f["rank"])
		if !slices.Contains(st.Lead, r) {
			return fmt.Sprintf("the verdict leads with %v, not rank %d", st.Lead, r)
		}
		return ""
	}
	return "unknown expectation " + strconv.Quote(e)
}

// TestDeadlockCorpus runs every program of testdata/deadlock under Open
// MPI and MPICH, waits until it hangs, runs `mpiprobe status --json` on its
// ranks and checks the facts its header expects, and that every rank is
// accounted for (a call, or an expectation that it computes). It logs the
// share of programs whose verdict matches, per library, and the known gaps
// (programs whose header says what the tool gets wrong today) with their
// reasons: a known gap is checked and logged but does not fail the test,
// and fails it once it matches.
func TestDeadlockCorpus(t *testing.T) {
	cases := readCorpus(t)
	if len(cases) < 25 {
		t.Errorf("corpus holds %d programs, want at least 25", len(cases))
	}
	var table []string
	mpitest.RequireE2E(t, mpitest.OpenMPI(), mpitest.MPICH())
	bin := mpitest.BuildMpiprobe(t)
	for _, impl := range []mpitest.Impl{mpitest.OpenMPI(), mpitest.MPICH()} {
		t.Run(impl.Name, func(t *testing.T) {
			mpitest.RequireE2E(t, impl)
			sh := runCorpus(t, bin, impl, cases, nil)
			table = append(table, fmt.Sprintf("%-8s %s", impl.Name, sh))
			for _, c := range cases {
				if slices.Contains(sh.gaps, c.name) {
					table = append(table, fmt.Sprintf("  gap %-8s %s: %s", impl.Name, c.name, c.gap(libraryOf(impl), false)))
				}
			}
		})
	}
	t.Logf("deadlock corpus:\n%s", strings.Join(table, "\n"))
}

// corpusShare is what a run of the corpus under one library found: the
// programs run, those whose verdict matched, and the names of the known
// gaps (failed as their header says) and of the failures.
type corpusShare struct {
	ran, pass    int
	gaps, failed []string
}

func (sh corpusShare) String() string {
	return fmt.Sprintf("%2d/%2d match (%.0f%%), %d known gaps; failing: %s", sh.pass, sh.ran,
		100*float64(sh.pass)/float64(max(sh.ran, 1)), len(sh.gaps), strings.Join(sh.failed, ", "))
}

// runCorpus runs each of cases under impl as a subtest, but those leftOut
// (when given) names a reason for, logged, or leaves out silently with
// "-" (and those -run leaves out). A program fails its subtest on any difference
// from its expectations, unless its header names a known gap under impl:
// then the differences are logged and it counts as a gap, and it fails
// if there are none, so that the known-gap line goes once the gap is
// closed. The gaps are those of the host's builds: on a root's build a
// gap that does not show counts as a match.
func runCorpus(t *testing.T, bin string, impl mpitest.Impl, cases []corpusCase, leftOut func(corpusCase) string) corpusShare {
	t.Helper()
	var sh corpusShare
	for _, c := range cases {
		if leftOut != nil {
			if why := leftOut(c); why == "-" {
				continue
			} else if why != "" {
				t.Logf("%s: not run: %s", c.name, why)
				continue
			}
		}
		started, gapped := false, false
		ok := t.Run(c.name, func(t *testing.T) {
			started = true
			problems := runCorpusCase(t, bin, impl, c)
			switch gap := c.gap(libraryOf(impl), inferredLayouts(impl)); {
			case gap == "":
				for _, p := range problems {
					t.Error(p)
				}
			case len(problems) == 0 && impl.Root != "":
				// The gaps are judged on the host's builds: a build
				// of a root may not have it.
				t.Logf("the host's known gap (%s) does not show on this build", gap)
			case len(problems) == 0:
				t.Errorf("every expectation holds, but %s names a known gap (%s): remove that line", c.src, gap)
			default:
				gapped = true
				t.Logf("known gap (%s): %s", gap, strings.Join(problems, "; "))
			}
		})
		if !started {
			continue // left out by -run
		}
		sh.ran++
		switch {
		case ok && gapped:
			sh.gaps = append(sh.gaps, c.name)
		case ok:
			sh.pass++
		default:
			sh.failed = append(sh.failed, c.name)
		}
	}
	return sh
}

// runCorpusCase runs c under impl and returns how the verdict differs
// from what c expects in each of three samples (none: it matched).
func runCorpusCase(t *testing.T, bin string, impl mpitest.Impl, c corpusCase) []string {
	prog := mpitest.BuildSource(t, impl, c.src)
	argv := impl.Command(c.np, nil, prog)
	if c.history {
		argv = append([]string{bin, "--collectives", "--"}, argv...)
	}
	var out mpitest.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var ranks []int
	defer func() {
		for _, pid := range ranks {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if c.history {
			// mpiprobe unpins its maps and leaves on SIGINT.
			_ = cmd.Process.Signal(syscall.SIGINT)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
				return
			case <-time.After(10 * time.Second):
			}
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	var err error
	if ranks, err = mpitest.WaitRanksFor(30*time.Second, prog, c.np, impl.Lib); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "hung") {
		if time.Now().After(deadline) {
			t.Fatalf("the job never hung:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(400 * time.Millisecond) // the ranks reach the calls that hang
	// status samples stacks and registers of running ranks: a sample can
	// miss a value a frame has not saved yet. A program counts as matched
	// when one of three samples gives every expected fact; a later sample
	// matching is logged, so the share that matched at once stays visible.
	var problems []string
	for try := 1; try <= 3; try++ {
		st, raw := runStatus(t, bin, ranks, "--window", "500ms")
		problems = corpusProblems(st, raw, c, libraryOf(impl))
		if len(problems) == 0 {
			if try > 1 {
				t.Logf("matched at sample %d of 3", try)
			}
			return nil
		}
		t.Logf("sample %d: %s\nverdict: %s", try, strings.Join(problems, "; "), st.Verdict)
		if try == 3 {
			t.Logf("%s", raw)
		}
	}
	return problems
}

// inferredLayouts reports whether status infers impl's layouts: a copy
// the tables do not know, or the tables turned off (the roots' runs).
func inferredLayouts(impl mpitest.Impl) bool {
	return impl.Unknown || os.Getenv(mpiabi.NoVerifiedLayoutsEnv) != ""
}

// libraryOf names the library of impl as the corpus headers do
// ("openmpi", "mpich"), whatever root it comes from.
func libraryOf(impl mpitest.Impl) string {
	lib, _, _ := strings.Cut(impl.Name, "-")
	return lib
}

// corpusProblems lists how st differs from what corpus case c expects
// under the library impl.
func corpusProblems(st statusJSON, raw string, c corpusCase, impl string) []string {
	var out []string
	for _, e := range append(slices.Clone(c.expects), c.implExpects[impl]...) {
		if msg := check(st, raw, e); msg != "" {
			out = append(out, fmt.Sprintf("expect %s: %s", e, msg))
		}
	}
	computing := map[string]bool{}
	for _, e := range c.expects {
		if k, f := fields(e); k == "rank" && slices.Contains(strings.Split(f["call"], "|"), "none") {
			computing[f["rank"]] = true
		}
	}
	for _, r := range st.Ranks {
		if r.Call == "" && !computing[strconv.Itoa(r.Rank)] {
			out = append(out, fmt.Sprintf("rank %d is in no call the table shows", r.Rank))
		}
		if r.Call != "" && r.Site == "" {
			out = append(out, fmt.Sprintf("rank %d in %s has no call site", r.Rank, r.Call))
		}
	}
	if len(st.Ranks) != c.np {
		out = append(out, fmt.Sprintf("%d ranks in the table, want %d", len(st.Ranks), c.np))
	}
	return out
}

// TestDeadlockCorpusOfUnknownBuilds runs the corpus with the ranks
// loading a copy of Debian's libmpi (Open MPI) or libmpich (MPICH) whose
// build id no table holds (LD_LIBRARY_PATH), and, under Open MPI, a copy
// of mca_pml_ob1.so too (the component path): the communicator layout,
// the request layout and, under MPICH, the frame slots of blocked sends
// and probes are then all inferred from the live ranks and the code (the
// copies have no DWARF), and each verdict must be the one the tables
// give. tableOnly lists the programs whose verdict needs what only the
// table knows for the build, and why.
func TestDeadlockCorpusOfUnknownBuilds(t *testing.T) {
	// tableOnly lists, per library, the programs whose verdict needs
	// what only the table knows, and why: none today.
	tableOnly := map[string]map[string]string{}
	bin := mpitest.BuildMpiprobe(t)
	for _, impl := range []mpitest.Impl{mpitest.OpenMPI(), mpitest.MPICH()} {
		t.Run(impl.Name, func(t *testing.T) {
			mpitest.RequireE2E(t, impl)
			impl := mpitest.UnknownBuild(t, impl)
			var cases []corpusCase
			for _, c := range readCorpus(t) {
				if why, ok := tableOnly[impl.Name][c.name]; ok {
					t.Logf("%s: not run: %s", c.name, why)
					continue
				}
				cases = append(cases, c)
			}
			t.Logf("corpus on %s (unknown to the tables): %s", impl.Lib, runCorpus(t, bin, impl, cases, nil))
		})
	}
}

// TestDeadlockCorpusInRoots runs the corpus on the Open MPI and MPICH of
// the other Debian releases' roots (.ci/roots: Debian 13's Open MPI 5.0.7
// and MPICH 4.2.1, CET builds; Debian 11's Open MPI 4.1.0 and MPICH
// 3.4.1), jobs started by chroot as a container's, with the tables of
// verified builds off: every layout status reads (communicators, requests,
// frame slots) is inferred from the ranks and the code, and each verdict
// must state the facts the program's header expects, as on the host's
// build. Debian 13's builds run the whole corpus; Debian 11's a subset
// (bullseyeCorpus) that reaches every layout status reads there, to keep
// CI's run short.
func TestDeadlockCorpusInRoots(t *testing.T) {
	t.Setenv(mpiabi.NoVerifiedLayoutsEnv, "1")
	cases := readCorpus(t)
	var table []string
	for _, rb := range rootBuilds() {
		t.Run(rb.name, func(t *testing.T) {
			impl := rb.impl(t)
			bin := mpitest.BuildMpiprobe(t)
			fortran := impl.CompilesFortran()
			start := time.Now()
			sh := runCorpus(t, bin, impl, cases, func(c corpusCase) string {
				switch {
				case strings.HasSuffix(rb.name, "-bullseye") && !slices.Contains(bullseyeCorpus(), c.name):
					return "-"
				case strings.HasSuffix(c.src, ".f90") && !fortran:
					return impl.FC + " does not work in the root (.ci/roots installs no gfortran)"
				}
				return ""
			})
			took := time.Since(start).Round(time.Second)
			line := fmt.Sprintf("%-17s %s, in %v", rb.name, sh, took)
			t.Log(line)
			table = append(table, line)
		})
	}
	t.Logf("deadlock corpus in the roots, tables off:\n%s", strings.Join(table, "\n"))
}

// bullseyeCorpus is the part of the corpus run on Debian 11's builds,
// one program for each layout status reads there: cycles of receives, of
// synchronous sends and of a receive and a wait (the peer and tag of
// requests and frames), a wrong tag, a probe, a missing and a swapped
// collective, one on a communicator other than WORLD (its identity and
// size), and one whose verdict needs --collectives' history.
func bullseyeCorpus() []string {
	return []string{"ring_recv_cycle", "ssend_cycle", "irecv_wait_cycle", "wrong_tag", "probe_barrier",
		"missing_barrier_finalize", "swapped_barrier_allreduce", "dup_vs_world", "reduce_root_same_line"}
}
