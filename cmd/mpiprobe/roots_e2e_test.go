package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// Jobs inside another root: a chroot or unshare --root of another Debian
// release (.ci/roots), with that release's own Open MPI and MPICH, as
// chroot and container jobs run. mpiprobe runs on the host and is given
// the command that enters the root; the ranks map libraries mpiprobe's own
// ldconfig knows nothing of.

// rootBuild is the Open MPI or MPICH of one root.
type rootBuild struct {
	name string
	impl func(t *testing.T) mpitest.Impl
	// loaded is in the path of a library each rank maps once MPI_Init
	// has loaded its components.
	loaded string
}

// rootBuilds lists the four builds of the roots: Debian 13's Open MPI
// 5.0.7 and MPICH 4.2.1, Debian 11's Open MPI 4.1.0 and MPICH 3.4.1.
func rootBuilds() []rootBuild {
	return []rootBuild{
		{"openmpi-trixie", func(t *testing.T) mpitest.Impl { return mpitest.RootOpenMPI(t, "trixie") }, "libmpi.so.40"},
		{"mpich-trixie", func(t *testing.T) mpitest.Impl { return mpitest.RootMPICH(t, "trixie") }, "libmpich"},
		{"openmpi-bullseye", func(t *testing.T) mpitest.Impl { return mpitest.RootOpenMPI(t, "bullseye") }, "mca_pml_ob1"},
		{"mpich-bullseye", func(t *testing.T) mpitest.Impl { return mpitest.RootMPICH(t, "bullseye") }, "libmpich"},
	}
}

// rootFlood runs the send-pending flood of TestFloodWarnsByCT inside the
// root of impl under `mpiprobe -- ...` and returns rank 0's new pending
// sends and passes over the queue.
func rootFlood(t *testing.T, impl mpitest.Impl) (news, drains uint64, stderr string) {
	t.Helper()
	bin := mpitest.BuildMpiprobe(t)
	flood := mpitest.Build(t, impl, "flood")
	const rounds = 4
	job := impl.Command(2, floodMCA(true), flood, "-n", strconv.Itoa(floodMessages), "-d", "600", "-r", strconv.Itoa(rounds))
	res := runMpiprobe(t, bin, append([]string{"-C", "100", "-T", "1s", "--interval", "100ms", "--"}, job...)...)
	news, _ = res.sum.count("0", "ob1.send_pending.new")
	drains, ok := res.sum.count("0", "ob1.send_pending.drain")
	if !ok {
		t.Fatalf("no rank 0 in the summary of %s\n%s", strings.Join(job, " "), res.stderr)
	}
	if n, _ := res.sum.count("1", "ob1.send_pending.new"); n != 0 {
		t.Errorf("rank 1 (the receiver) new pending sends = %d, want 0", n)
	}
	return news, drains, res.stderr
}

// The counts of the flood with -n 2000 -r 4 and 64 fragments: each round
// queues every message past the 64th (exact), and passes over the queue
// once more per round than it queued (README's demo; see checkRootFlood).
const (
	floodNew   = 4 * (floodMessages - freeListMax) // 7,744
	floodDrain = floodNew + 4                      // 7,748
)

// TestRootFloodCounts: `mpiprobe -- chroot ROOT mpirun ...` counts the
// flood of a root's Open MPI exactly: Open MPI 4.1.0 (Debian 11) and 5.0.7
// (Debian 13) alike. On 5.0.7 ob1.send_pending.new is found in the
// unnamed out-of-line copy of ob1's send path that mca_pml_ob1_isend and
// _send share (docs/events.md, "Open MPI 5.0").
func TestRootFloodCounts(t *testing.T) {
	for _, suite := range []string{"trixie", "bullseye"} {
		t.Run(suite, func(t *testing.T) {
			impl := mpitest.RootOpenMPI(t, suite)
			news, drains, stderr := rootFlood(t, impl)
			checkRootFlood(t, impl, news, drains, stderr)
		})
	}
}

// TestRootFloodUnshare is TestRootFloodCounts's trixie flood started
// through unshare --mount --root: a mount namespace of its own, as a
// container's.
func TestRootFloodUnshare(t *testing.T) {
	impl := mpitest.RootOpenMPI(t, "trixie").Unshared()
	news, drains, stderr := rootFlood(t, impl)
	checkRootFlood(t, impl, news, drains, stderr)
}

func checkRootFlood(t *testing.T, impl mpitest.Impl, news, drains uint64, stderr string) {
	t.Helper()
	// A pass is made when a BTL returns fragments while sends wait: when
	// two come back before ob1 progresses, one pass sends both. So the
	// passes are 7,748 on an idle machine (Debian 12's host build, 4 of 4
	// runs) and were seen one short, 7,747, in 2 of ~10 runs in the roots
	// on this shared 2-core machine: one merged pass per round at most.
	if drains > floodDrain || drains < floodDrain-4 {
		t.Errorf("%s: rank 0 passes over the pending queue = %d, want %d (at most one fewer per round)\n%s", impl.Name, drains, floodDrain, stderr)
	} else if drains != floodDrain {
		t.Logf("%s: %d passes over the pending queue, %d short of the idle machine's %d", impl.Name, drains, floodDrain-drains, floodDrain)
	}
	if news != floodNew {
		t.Errorf("%s: rank 0 new pending sends = %d, want %d\n%s", impl.Name, news, floodNew, stderr)
	}
}

// TestRootTrace: `mpiprobe trace -- chroot ROOT launcher loops` records
// exactly the program's calls, with their source lines, for the Open MPI
// and MPICH of each root, and once through unshare --root.
func TestRootTrace(t *testing.T) {
	cases := append(rootBuilds(), rootBuild{"mpich-trixie-unshare", func(t *testing.T) mpitest.Impl { return mpitest.RootMPICH(t, "trixie").Unshared() }, "libmpich"})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			impl := tc.impl(t)
			bin := mpitest.BuildMpiprobe(t)
			prog := mpitest.Build(t, impl, "loops")
			const iters, ms = 5, 10
			var opts []string
			if strings.HasPrefix(impl.Name, "openmpi") {
				// The root has no network of its own to pair: keep the
				// TCP BTL's complaint out.
				opts = []string{"--mca", "btl", "self,vader"}
			}
			s, _ := traceAndShow(t, bin, nil, append([]string{"--"}, impl.Command(2, opts, prog, strconv.Itoa(iters), strconv.Itoa(ms))...)...)
			checkLoopsTrace(t, s, iters)
		})
	}
}

// TestRootProbesList: `mpiprobe probes -p` on a rank of a root names its
// libraries by the paths the rank sees, not by the host's path into the
// root, and finds the components inside the root. The listing is logged:
// which events attach in each build.
func TestRootProbesList(t *testing.T) {
	for _, tc := range rootBuilds() {
		t.Run(tc.name, func(t *testing.T) {
			impl := tc.impl(t)
			bin := mpitest.BuildMpiprobe(t)
			flood := mpitest.Build(t, impl, "flood")
			// -p: the ranks pause after MPI_Init, with their components loaded.
			job := mpitest.StartJob(t, impl.Command(2, nil, flood, "-n", "10", "-p", "60000"), flood, 2, tc.loaded)
			time.Sleep(500 * time.Millisecond)
			code, out, stderr := runOutput(t, bin, nil, "probes", "-p", strconv.Itoa(job.Ranks[0]))
			if code != 0 {
				t.Fatalf("probes -p %d: exit %d\n%s\n%s", job.Ranks[0], code, out, stderr)
			}
			t.Logf("%s:\n%s", impl.Name, out)
			if strings.Contains(out, impl.Root) {
				t.Errorf("paths shown through the host's %s, not as the rank sees them:\n%s", impl.Root, out)
			}
			if !regexp.MustCompile(`attached +│ /usr/lib/x86_64-linux-gnu/`).MatchString(out) {
				t.Errorf("no event attached in a library under the rank's /usr/lib/x86_64-linux-gnu:\n%s", out)
			}
		})
	}
}

// TestTracePrivateLibrary: a command that sets $LD_LIBRARY_PATH itself
// (env LD_LIBRARY_PATH=DIR mpiexec ...) has its ranks map a private copy of
// libmpich that neither ldconfig nor mpiprobe's environment names: trace
// finds it when the launcher runs, before any rank calls MPI, and records
// every call from MPI_Init on.
func TestTracePrivateLibrary(t *testing.T) {
	impl := mpitest.MPICH()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	prog := mpitest.Build(t, impl, "loops")
	lib, err := filepath.EvalSymlinks("/usr/lib/x86_64-linux-gnu/libmpich.so.12")
	if err != nil {
		mpitest.Require(t, "Debian's libmpich.so.12: "+err.Error())
	}
	priv := t.TempDir()
	b, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(priv, "libmpich.so.12"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	const iters = 5
	cmd := append([]string{"--", "env", "LD_LIBRARY_PATH=" + priv}, impl.Command(2, nil, prog, strconv.Itoa(iters), "10")...)
	s, _ := traceAndShow(t, bin, nil, cmd...)
	want := fmt.Sprintf("Init0 Comm_rank1 Bcast2 Barrier3 (Allreduce4)[%d] Finalize5", iters)
	for _, r := range []string{"0", "1"} {
		if s.structure[r] != want {
			t.Errorf("rank %s: %q, want %q\n%s", r, s.structure[r], want, s.text)
		}
	}
}

// TestRootTraceWithoutHostMPI: with no MPI where mpiprobe's own ldconfig
// looks (its /etc/ld.so.cache hidden in a mount namespace of its own),
// nothing is attached ahead of time and every call name is learnt from
// the root's libraries as the launcher starts: the trace is still exact.
func TestRootTraceWithoutHostMPI(t *testing.T) {
	impl := mpitest.RootOpenMPI(t, "trixie")
	real := mpitest.BuildMpiprobe(t)
	bin := filepath.Join(t.TempDir(), "mpiprobe-without-cache")
	script := "#!/bin/sh\nexec unshare --mount sh -c 'mount --bind /dev/null /etc/ld.so.cache && exec \"$0\" \"$@\"' " + real + " \"$@\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	prog := mpitest.Build(t, impl, "loops")
	const iters = 5
	s, _ := traceAndShow(t, bin, nil, append([]string{"--"}, impl.Command(2, []string{"--mca", "btl", "self,vader"}, prog, strconv.Itoa(iters), "10")...)...)
	checkLoopsTrace(t, s, iters)
}
