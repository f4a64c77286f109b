package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// summaryJSON is the part of `mpiprobe --json` collective tracking fills.
type summaryJSON struct {
	Jobs []struct {
		Ranks []struct {
			Rank        json.RawMessage `json:"rank"` // an integer, or null: printed as is
			Collectives []struct {
				ID    uint64 `json:"id"`
				Size  int    `json:"size"`
				Name  string `json:"name"`
				Local bool   `json:"local"`
				Rank  *int   `json:"rank"` // null when unknown
				Calls []struct {
					Name      string `json:"name"`
					Calls     uint64 `json:"count"`
					Pending   int64  `json:"pending_count"`
					Completed uint64 `json:"completed_count"`
				} `json:"calls"`
			} `json:"collectives"`
		} `json:"ranks"`
	} `json:"jobs"`
}

// TestCollectiveCounts runs testdata/colls.c under --collectives: every
// collective's count on WORLD, a dup and both halves of a split is exact on
// every rank, nonblocking ones are counted once per call, and the context
// ids agree across ranks: on the host's builds, known and unknown to the
// tables, and on the roots' (chroot, tables off).
func TestCollectiveCounts(t *testing.T) {
	for _, b := range withRoots() {
		t.Run(b.label, func(t *testing.T) {
			impl := b.use(t)
			bin := mpitest.BuildMpiprobe(t)
			prog := mpitest.Build(t, impl, "colls")
			// At 2 ranks the halves have one rank: there both libraries
			// hand out one shared, already completed request for every
			// nonblocking collective.
			for _, np := range []int{4, 2} {
				t.Run(fmt.Sprintf("np%d", np), func(t *testing.T) {
					const rounds = 3
					args := []string{strconv.Itoa(rounds)}
					if b.inferred() {
						// The layout of a build no table holds is
						// inferred once a rank is past MPI_Init; a
						// communicator freed before that stays keyed by
						// its handle. colls.c frees its own within a few
						// milliseconds: it waits first.
						args = append(args, "300")
					}
					checkCollectiveCounts(t, bin, impl, nil, prog, np, rounds, args)
				})
			}
		})
	}
}

// checkCollectiveCounts runs colls.c (prog, with args, rounds rounds) at
// np ranks of impl (launcher options opts) under --collectives and checks every collective's
// count on WORLD, the dup and the rank's half, on every rank.
func checkCollectiveCounts(t *testing.T, bin string, impl mpitest.Impl, opts []string, prog string, np, rounds int, args []string) {
	t.Helper()
	code, stdout, stderr := runOutput(t, bin, nil, append([]string{"--collectives", "--json", "--"},
		impl.Command(np, opts, prog, args...)...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var sum summaryJSON
	if err := json.Unmarshal([]byte(stdout[strings.Index(stdout, "{"):]), &sum); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if len(sum.Jobs) != 1 || len(sum.Jobs[0].Ranks) != np {
		t.Fatalf("want 1 job of %d ranks:\n%s", np, stdout)
	}
	// What colls.c's round_on makes per round on one communicator.
	perRound := map[string]uint64{
		"MPI_Barrier": 1, "MPI_Bcast": 2, "MPI_Allreduce": 3, "MPI_Reduce": 1, "MPI_Gather": 1,
		"MPI_Allgather": 1, "MPI_Alltoall": 1, "MPI_Scan": 1, "MPI_Ibarrier": 1, "MPI_Iallreduce": 2,
	}
	want := func(world bool) map[string]uint64 {
		m := map[string]uint64{}
		for k, v := range perRound {
			m[k] = v * uint64(rounds)
		}
		if world {
			m["MPI_Allreduce"] += uint64(rounds) // the extra allreduce of main's loop
		}
		return m
	}
	ids := map[string]map[uint64]bool{} // kind -> context ids seen
	for _, r := range sum.Jobs[0].Ranks {
		kinds := map[string]int{}
		for _, c := range r.Collectives {
			if c.Local {
				t.Errorf("rank %s: communicator %d flagged local: the library build should be known", r.Rank, c.ID)
			}
			kind := "dup"
			switch {
			case c.Name == "WORLD":
				kind = "world"
			case c.Size == np/2:
				kind = "half"
			case c.Size != np:
				t.Errorf("rank %s: unexpected communicator %+v", r.Rank, c)
				continue
			}
			kinds[kind]++
			if ids[kind] == nil {
				ids[kind] = map[uint64]bool{}
			}
			ids[kind][c.ID] = true
			got := map[string]uint64{}
			for _, cl := range c.Calls {
				got[cl.Name] = cl.Calls
				// colls.c completes every nonblocking collective
				// with MPI_Wait or MPI_Waitall.
				nb := strings.HasPrefix(cl.Name, "MPI_I")
				if nb && (cl.Completed != cl.Calls || cl.Pending != 0) {
					t.Errorf("rank %s, %s: %s started %d, completed %d, pending %d", r.Rank, kind, cl.Name, cl.Calls, cl.Completed, cl.Pending)
				}
				if !nb && (cl.Completed != 0 || cl.Pending != 0) {
					t.Errorf("rank %s, %s: blocking %s has completions %d, pending %d", r.Rank, kind, cl.Name, cl.Completed, cl.Pending)
				}
			}
			if w := want(kind == "world"); !mapsEqual(got, w) {
				t.Errorf("rank %s, %s (id %d, size %d): counts %v, want %v", r.Rank, kind, c.ID, c.Size, got, w)
			}
			if c.Rank == nil || *c.Rank < 0 || *c.Rank >= c.Size {
				t.Errorf("rank %s, %s: rank in communicator %v, size %d", r.Rank, kind, c.Rank, c.Size)
			}
		}
		if kinds["world"] != 1 || kinds["dup"] != 1 || kinds["half"] != 1 {
			t.Errorf("rank %s: communicators %v, want one WORLD, one dup and one half", r.Rank, kinds)
		}
	}
	for kind, set := range ids {
		if len(set) != 1 {
			t.Errorf("%s: context ids differ across ranks: %v", kind, set)
		}
	}
}

func mapsEqual(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// statusJSON is `mpiprobe status --json`.
type statusJSON struct {
	History []int `json:"history_sessions"`
	Ranks   []struct {
		Rank  int    `json:"rank"`
		PID   int    `json:"pid"`
		Ended string `json:"ended"`
		Call  string `json:"call"`
		Comm  *struct {
			Name string `json:"name"`
		} `json:"comm"`
		Site       string `json:"site"`
		Peer       *int   `json:"peer"`
		Tag        *int   `json:"tag"`
		Unreadable string `json:"unreadable"`
		Stopped    string `json:"stopped"`
		Threads    []struct {
			Call string `json:"call"`
			Comm *struct {
				ID   uint64 `json:"id"`
				Size int    `json:"size"`
				Name string `json:"name"`
			} `json:"comm"`
			Seq     uint64  `json:"seq"`
			Since   float64 `json:"since_seconds"`
			AtLeast bool    `json:"at_least"`
			Site    string  `json:"site"`
		} `json:"threads"`
		Counts []struct {
			Comm struct {
				Name string `json:"name"`
			} `json:"comm"`
			Calls map[string]uint64 `json:"calls"`
		} `json:"counts"`
	} `json:"ranks"`
	Verdict  string  `json:"verdict"`
	Waiting  []int   `json:"waiting"`
	Odd      []int   `json:"odd"`
	Suspects []int   `json:"suspects"`
	Lead     []int   `json:"lead"`
	Cycles   [][]int `json:"cycles"`
	Knot     struct {
		Ranks []int `json:"ranks"`
	} `json:"knot"`
	Divergent []struct {
		Rank   int    `json:"rank"`
		Call   string `json:"call"`
		Count  uint64 `json:"count"`
		Others uint64 `json:"others"`
	} `json:"divergent"`
	Mismatches []struct {
		Comm struct {
			Name string `json:"name"`
			Size int    `json:"size"`
		} `json:"comm"`
		Sides []struct {
			Ranks []int  `json:"ranks"`
			Call  string `json:"call"`
			Site  string `json:"site"`
		} `json:"sides"`
	} `json:"mismatches"`
	Absent []struct {
		Rank int    `json:"rank"`
		Call string `json:"call"`
		Comm struct {
			Name string `json:"name"`
			Size int    `json:"size"`
		} `json:"comm"`
		Waiting []int  `json:"waiting"`
		State   string `json:"state"`
	} `json:"absent"`
	Notes []string `json:"notes"`
}

// build is one library a test runs on: Debian's build, which the tables
// know, or the same under build ids they do not (mpitest.UnknownBuild), so
// that the test checks the inferred layouts give what the tables give.
type build struct {
	label   string
	impl    mpitest.Impl
	unknown bool
	// root, when set, is a build of another release's root (rootBuilds),
	// run with the tables of verified builds off; impl is then unset.
	root func(t *testing.T) mpitest.Impl
}

// builds lists both libraries, known and unknown to the tables.
func builds() []build {
	var out []build
	for _, impl := range []mpitest.Impl{mpitest.OpenMPI(), mpitest.MPICH()} {
		out = append(out, build{label: impl.Name, impl: impl}, build{label: impl.Name + "-unknown-build", impl: impl, unknown: true})
	}
	return out
}

// withRoots is builds and the four builds of the roots.
func withRoots() []build {
	out := builds()
	for _, rb := range rootBuilds() {
		out = append(out, build{label: rb.name, root: rb.impl})
	}
	return out
}

// inferred says whether status and the collectives infer the build's
// layouts from a live rank (no table, no DWARF for them).
func (b build) inferred() bool { return b.unknown || b.root != nil }

// use prepares the build for the test (requiring what it needs, with
// the tables off for a root's) and returns its implementation.
func (b build) use(t *testing.T) mpitest.Impl {
	t.Helper()
	if b.root != nil {
		t.Setenv(mpiabi.NoVerifiedLayoutsEnv, "1")
		return b.root(t)
	}
	mpitest.RequireE2E(t, b.impl)
	if b.unknown {
		return mpitest.UnknownBuild(t, b.impl)
	}
	return b.impl
}

// hungJob starts testdata/hang.c in mode at np ranks, under mpiprobe
// --collectives when history is set, and returns the rank pids once rank 0
// said the hang began.
func hungJob(t *testing.T, bin string, impl mpitest.Impl, mode string, np int, history bool) []int {
	t.Helper()
	prog := mpitest.Build(t, impl, "hang")
	argv := impl.Command(np, nil, prog, mode, "5")
	if history {
		argv = append([]string{bin, "--collectives", "--"}, argv...)
	}
	var out mpitest.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var ranks []int
	t.Cleanup(func() {
		for _, pid := range ranks {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = cmd.Process.Signal(syscall.SIGINT) // mpiprobe prints its summary and leaves
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	var err error
	if ranks, err = mpitest.WaitRanksFor(30*time.Second, prog, np, impl.Lib); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "hung") {
		if time.Now().After(deadline) {
			t.Fatalf("the job never hung:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return ranks
}

// runStatus runs mpiprobe status --json on pids.
func runStatus(t *testing.T, bin string, pids []int, extra ...string) (statusJSON, string) {
	t.Helper()
	var ps []string
	for _, p := range pids {
		ps = append(ps, strconv.Itoa(p))
	}
	args := append([]string{"status", "--json", "-p", strings.Join(ps, ",")}, extra...)
	code, stdout, stderr := runOutput(t, bin, nil, args...)
	if code != 0 {
		t.Fatalf("mpiprobe %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	var st statusJSON
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	return st, stdout
}

// TestStatusHang hangs real jobs two ways (the last rank skips the final
// barrier and computes; it waits in a receive that never comes) and checks
// that status names the waiting ranks, the barrier, WORLD and the call
// site, and the odd rank, both with history (mpiprobe --collectives
// attached before the hang) and without (status alone, after the hang).
func TestStatusHang(t *testing.T) {
	const np = 4
	lines := sourceLines(t, "hang.c", "Barrier", "Recv", "Wait", "Barrier")
	recvLine, waitLine, finalBarrier := lines[1], lines[2], lines[3]
	for _, b := range builds() {
		for _, history := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/ibarrier/history=%v", b.label, history), func(t *testing.T) {
				mpitest.RequireE2E(t, b.impl)
				impl := b.use(t)
				bin := mpitest.BuildMpiprobe(t)
				pids := hungJob(t, bin, impl, "ibarrier", np, history)
				st, raw := runStatus(t, bin, pids)
				want := "ranks 0-2 are in MPI_Wait on WORLD (size 4) at main+0x"
				if history {
					// The rank's only nonblocking collective not completed
					// is what its MPI_Wait waits for.
					want = "ranks 0-2 wait in MPI_Ibarrier #1 on WORLD (size 4) for "
				}
				if !strings.HasPrefix(st.Verdict, want) || !strings.Contains(st.Verdict, waitLine+")") {
					t.Errorf("verdict %q, want it to start %q and name %s\n%s", st.Verdict, want, waitLine, raw)
				}
				if history && !strings.Contains(st.Verdict, "rank 3 has made 0 calls and is computing") {
					t.Errorf("verdict %q does not describe rank 3", st.Verdict)
				}
			})
		}
		for _, mode := range []string{"skip", "recv"} {
			for _, history := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/history=%v", b.label, mode, history)
				t.Run(name, func(t *testing.T) {
					mpitest.RequireE2E(t, b.impl)
					impl := b.use(t)
					bin := mpitest.BuildMpiprobe(t)
					pids := hungJob(t, bin, impl, mode, np, history)
					st, raw := runStatus(t, bin, pids)
					defer func() {
						if t.Failed() {
							t.Logf("status:\n%s", raw)
						}
					}()
					if !slices.Equal(st.Waiting, []int{0, 1, 2}) || !slices.Equal(st.Odd, []int{3}) {
						t.Errorf("waiting %v, odd %v; want 0-2 waiting, 3 odd", st.Waiting, st.Odd)
					}
					wantVerdict := "ranks 0-2 wait in MPI_Barrier "
					if history {
						wantVerdict += "#6 " // 5 rounds, then the hung one
					}
					wantVerdict += "on WORLD (size 4) for "
					if !history {
						wantVerdict += "at least "
					}
					switch {
					case mode == "recv":
						// Rank 3 waits for rank 0, which waits in the
						// barrier for rank 3: a cycle through the
						// barrier, said first.
						cycle := "deadlock cycle: rank 0 waits for 3 (MPI_Barrier at " + finalBarrier + ", which 3 has not entered), rank 3 waits for 0 (MPI_Recv tag 99 at " + recvLine + ")"
						if !strings.HasPrefix(st.Verdict, cycle) || !strings.Contains(st.Verdict, "; "+wantVerdict) {
							t.Errorf("verdict %q, want it to start %q, then say %q", st.Verdict, cycle, wantVerdict)
						}
					case !strings.HasPrefix(st.Verdict, wantVerdict):
						t.Errorf("verdict %q, want it to start %q", st.Verdict, wantVerdict)
					}
					if !strings.Contains(st.Verdict, finalBarrier+")") {
						t.Errorf("verdict %q does not name the call site %s", st.Verdict, finalBarrier)
					}
					odd := "rank 3 is computing"
					if history {
						odd = "rank 3 has made 5 calls and is computing"
					}
					if mode == "recv" {
						odd = strings.TrimSuffix(odd, "computing") + "in MPI_Recv from rank 0 at " // the peer read from the request
					}
					if !strings.Contains(st.Verdict, odd) {
						t.Errorf("verdict %q does not say %q", st.Verdict, odd)
					}
					if mode == "recv" && !strings.Contains(st.Verdict, recvLine+")") {
						t.Errorf("verdict %q does not name the receive's site %s", st.Verdict, recvLine)
					}
					if (len(st.History) > 0) != history {
						t.Errorf("history sessions %v, want history=%v", st.History, history)
					}
					for _, r := range st.Ranks {
						if r.Rank == 3 {
							continue
						}
						if len(r.Threads) != 1 {
							t.Errorf("rank %d: %d threads in MPI calls, want 1", r.Rank, len(r.Threads))
							continue
						}
						th := r.Threads[0]
						if th.AtLeast == history {
							t.Errorf("rank %d: at_least=%v with history=%v", r.Rank, th.AtLeast, history)
						}
						if th.Since < 1 {
							t.Errorf("rank %d: inside for %v, want at least the 1 s window", r.Rank, time.Duration(th.Since*float64(time.Second)))
						}
					}
					if history {
						if len(st.Divergent) != 1 || st.Divergent[0].Rank != 3 ||
							st.Divergent[0].Call != "MPI_Barrier" || st.Divergent[0].Count != 5 || st.Divergent[0].Others != 6 {
							t.Errorf("divergent %+v, want rank 3 with 5 MPI_Barrier, the others 6", st.Divergent)
						}
					}
				})
			}
		}
	}
}

// TestStatusStoppedRank hangs a job two ways (the last rank computes; it
// waits in a receive that never comes), then stops that rank with
// SIGSTOP: status must show it stopped, by SIGSTOP, name it first in the
// verdict as the rank the others wait for, and never say that it waits
// for another rank: a stopped rank waits for nobody.
func TestStatusStoppedRank(t *testing.T) {
	for _, impl := range []mpitest.Impl{mpitest.OpenMPI(), mpitest.MPICH()} {
		for _, mode := range []string{"skip", "recv"} {
			t.Run(impl.Name+"/"+mode, func(t *testing.T) {
				mpitest.RequireE2E(t, impl)
				bin := mpitest.BuildMpiprobe(t)
				pids := hungJob(t, bin, impl, mode, 4, false)
				before, _ := runStatus(t, bin, pids)
				stopped := 0
				for _, r := range before.Ranks {
					if r.Rank == 3 {
						stopped = r.PID
					}
				}
				if stopped == 0 {
					t.Fatalf("no rank 3 among %v", before.Ranks)
				}
				if err := syscall.Kill(stopped, syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				defer func() { _ = syscall.Kill(stopped, syscall.SIGCONT) }()
				st, raw := runStatus(t, bin, pids)
				want := "rank 3 is stopped by SIGSTOP: "
				if !strings.HasPrefix(st.Verdict, want) || strings.Contains(st.Verdict, "rank 3 waits for") || strings.Contains(st.Verdict, "rank 3 is computing") ||
					!strings.Contains(st.Verdict, "kill -CONT "+strconv.Itoa(stopped)) {
					t.Errorf("verdict %q: want it to start %q, say how to resume pid %d, and neither that rank 3 waits for another nor that it computes\n%s", st.Verdict, want, stopped, raw)
				}
				if !slices.Equal(st.Lead, []int{3}) {
					t.Errorf("lead %v, want [3]", st.Lead)
				}
				for _, r := range st.Ranks {
					if got := r.Stopped != ""; got != (r.Rank == 3) {
						t.Errorf("rank %d: stopped %q", r.Rank, r.Stopped)
					}
				}
				_, table, _ := runOutput(t, bin, nil, "status", "-p", strconv.Itoa(stopped))
				if !strings.Contains(table, "stopped by SIGSTOP") {
					t.Errorf("the table does not show rank 3 stopped:\n%s", table)
				}
			})
		}
	}
}
