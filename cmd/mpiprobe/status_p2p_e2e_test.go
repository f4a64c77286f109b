package main

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// TestStatusP2P hangs testdata/deadlock/p2p_deadlock.c in point-to-point
// deadlocks under Open MPI (ob1) and MPICH and checks that status reads
// the peer and tag each rank waits for and reports the cycle.
func TestStatusP2P(t *testing.T) {
	cases := []struct {
		mode string
		// want are substrings of the output, per implementation;
		// unknown, when given, replaces them on a build the tables do
		// not hold.
		want, unknown map[string][]string
	}{
		{"recvrecv", map[string][]string{
			"": {"MPI_Recv from 1 tag 7", "MPI_Recv from 0 tag 7",
				"deadlock cycle: rank 0 waits for 1 (MPI_Recv tag 7 at p2p_deadlock.c:", "), rank 1 waits for 0 (MPI_Recv tag 7 at p2p_deadlock.c:", ") [peers read from the MPI library]"}},
			nil},
		{"waitwait", map[string][]string{
			"":        {"MPI_Waitall send to 1 tag 9", "MPI_Waitall recv from 0 tag 10", "deadlock cycle: rank 0 waits for 1 (MPI_Waitall send tag 9"},
			"openmpi": {"[peers read from the MPI library]"},
			// Under UCX MPICH's send requests do not hold their
			// destination (1 of 2 read); ch3's do (both read).
			"mpich": {"peers read from the MPI library]"}},
			// Rank 0's send on WORLD: a UCX tag of context id 0 and source
			// 0 cannot be told from other words of the request of a libucp
			// build the table does not hold; its destination is inferred
			// (WORLD of two), its tag not read.
			map[string][]string{"mpich": {"MPI_Waitall send to 1", "MPI_Waitall recv from 0 tag 10",
				"deadlock cycle: rank 0 waits for 1 (MPI_Waitall send at p2p_deadlock.c:"}}},
		{"wrongtag", map[string][]string{
			"": {"MPI_Recv from 1 tag 3", "MPI_Recv from 0 tag 2", "deadlock cycle: rank 0 waits for 1 (MPI_Recv tag 3 at p2p_deadlock.c:", "), rank 1 waits for 0 (MPI_Recv tag 2 at p2p_deadlock.c:"}},
			nil},
		{"wrongsrc", map[string][]string{
			"": {"MPI_Recv from 1 tag 4", "deadlock cycle: rank 1 waits for 1 (MPI_Recv tag 4 at p2p_deadlock.c:"}},
			nil},
		{"anysrc", map[string][]string{
			"": {"MPI_Recv from any tag 6", "rank 1 waits for any rank (MPI_Recv from any source tag 6 at p2p_deadlock.c:", "), and rank 0 "}},
			nil},
		{"dup", map[string][]string{
			"": {"deadlock cycle: rank 0 waits for 1 (MPI_Recv tag 8 on comm ", "rank 1 waits for 0 (MPI_Recv tag 8 on comm "}},
			nil},
	}
	for _, b := range builds() {
		t.Run(b.label, func(t *testing.T) {
			mpitest.RequireE2E(t, b.impl)
			impl := b.use(t)
			bin := mpitest.BuildMpiprobe(t)
			prog := filepath.Join(t.TempDir(), "p2p_deadlock."+impl.Name)
			src := filepath.Join(mpitest.RepoRoot(t), "testdata", "deadlock", "p2p_deadlock.c")
			if b, err := exec.Command(impl.CC, "-O2", "-g", "-o", prog, src).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", impl.CC, err, b)
			}
			var opts []string
			if impl.Name == "openmpi" {
				opts = []string{"--mca", "pml", "ob1"}
			}
			for _, c := range cases {
				t.Run(c.mode, func(t *testing.T) {
					// A binary of its own per mode: the ranks of the previous
					// mode, killed, may still be seen exiting.
					exe := prog + "." + c.mode
					if b, err := exec.Command("cp", prog, exe).CombinedOutput(); err != nil {
						t.Fatalf("cp: %v\n%s", err, b)
					}
					job := mpitest.StartJob(t, impl.Command(2, opts, exe, c.mode), exe, 2, impl.Lib)
					job.WaitPrinted(t, "hung", 30*time.Second) // past MPI_Init and the barrier
					time.Sleep(500 * time.Millisecond)         // the ranks reach the calls that hang
					var ps []string
					for _, p := range job.Ranks {
						ps = append(ps, strconv.Itoa(p))
					}
					// The ranks block right after a barrier: a window of 2 s
					// sees them inside their calls. On a loaded machine a
					// rank can still be on its way into the call that hangs
					// when the window opens ("(progressing)"): the job is
					// sampled again, up to three times, and a later sample
					// is logged.
					var out string
					for try := 1; try <= 3; try++ {
						code, o, stderr := runOutput(t, bin, nil, "status", "--window", "2s", "-p", strings.Join(ps, ","))
						if code != 0 {
							t.Fatalf("exit %d\n%s", code, stderr)
						}
						out = o
						if !strings.Contains(out, "(progressing)") {
							if try > 1 {
								t.Logf("no rank progressing at sample %d of 3", try)
							}
							break
						}
					}
					want := append(c.want[""], c.want[impl.Name]...)
					if u, ok := c.unknown[impl.Name]; ok && b.unknown {
						want = u
					}
					for _, w := range want {
						if !strings.Contains(out, w) {
							t.Errorf("output lacks %q:\n%s", w, out)
						}
					}
				})
			}
		})
	}
}
