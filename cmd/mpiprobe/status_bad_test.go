package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// TestStatusBadInput: targets status cannot use are refused with one line
// naming the cause.
func TestStatusBadInput(t *testing.T) {
	mpitest.RequireE2E(t)
	bin := mpitest.BuildMpiprobe(t)
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"status"}, 2, "no target: give -p PID or --job JOBID"},
		{[]string{"status", "-p", "999999999"}, 2, `"999999999" is not a process id (the largest is 4194304`},
		{[]string{"status", "-p", strconv.Itoa(freePID(t))}, 1, "no process with pid "},
		{[]string{"status", "-p", strconv.Itoa(sleeper.Process.Pid)}, 1, "maps no MPI library"},
		{[]string{"status", "--job", "no-such-job"}, 1, `no rank of job "no-such-job" runs on this node`},
		{[]string{"status", "-p", "1", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"status", "-p", "1", "--hosts", "n1", "--fanout", "ssh %h"}, 2, "--hosts/--fanout need --job JOBID"},
		{[]string{"status", "--job", "1", "--hosts", "n1"}, 2, "--hosts without --fanout: say how to reach a node"},
		{[]string{"status", "--job", "1", "--fanout", "ssh %h"}, 2, "--fanout without --hosts: give the job's nodes"},
		{[]string{"status", "--job", "1", "--hosts", "n1,,n2", "--fanout", "ssh %h"}, 2, `--hosts n1,,n2: hostlist "n1,,n2": an empty name`},
		{[]string{"status", "--job", "1", "--hosts", "n[1-3", "--fanout", "ssh %h"}, 2, `--hosts n[1-3: hostlist "n[1-3": '[' at byte 1 is not closed`},
		{[]string{"status", "--job", "1", "--hosts", "n[1-2],x", "--fanout", "false"}, 1, "no node answered (3 asked); n1: exit status 1"},
		{[]string{"status", "--job", "1", "--hosts", "n1", "--fanout", "ssh %h", "--node-facts"}, 2, "--node-facts and --hosts/--fanout both given"},
		{[]string{"status", "--job", "1", "--hosts", "n1", "--fanout", "ssh %h", "--fanout-parallel", "0"}, 2, "--fanout-parallel 0: give 1 or more"},
		{[]string{"status", "--job", "1", "--hosts", "n1,n2", "--fanout", "false"}, 1, "no node answered (2 asked); n1: exit status 1: try the node command by hand: "},
	}
	for _, tc := range tests {
		code, _, stderr := runOutput(t, bin, nil, tc.args...)
		// One line; a usage error (exit 2) adds the hint to the help.
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != tc.code || !strings.Contains(lines[0], tc.want) || len(lines) != tc.code ||
			tc.code == 2 && lines[1] != "Run 'mpiprobe status --help' for usage." {
			t.Errorf("mpiprobe %s: exit %d, stderr %q; want exit %d and one line containing %q",
				strings.Join(tc.args, " "), code, stderr, tc.code, tc.want)
		}
	}
}

// TestStatusRankExits kills the odd rank of a hung job while status watches:
// status says the rank ended instead of calling it computing.
func TestStatusRankExits(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	pids := hungJob(t, bin, impl, "skip", 4, false)
	var ps []string
	for _, p := range pids {
		ps = append(ps, strconv.Itoa(p))
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, "status", "--json", "--window", "3s", "-p", strings.Join(ps, ","))
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	last := pids[len(pids)-1] // WaitRanks returns pids in /proc order: the highest is the last rank started
	if err := syscall.Kill(last, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("status: %v\n%s", err, errb.String())
	}
	var st statusJSON
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, r := range st.Ranks {
		if r.PID != last {
			continue
		}
		if r.Ended == "" {
			t.Errorf("the killed rank %d (pid %d) is not reported as ended:\n%s", r.Rank, r.PID, out.String())
		}
		if strings.Contains(st.Verdict, "rank "+strconv.Itoa(r.Rank)+" is computing") {
			t.Errorf("verdict calls the killed rank computing: %q", st.Verdict)
		}
		return
	}
	t.Errorf("pid %d missing from the result:\n%s", last, out.String())
}

// TestStatusThreads: with MPI_THREAD_MULTIPLE, ranks have two threads in
// MPI calls; both are listed, a note says which one the verdict uses, and
// the verdict still names the barrier.
func TestStatusThreads(t *testing.T) {
	for _, impl := range []mpitest.Impl{mpitest.OpenMPI(), mpitest.MPICH()} {
		t.Run(impl.Name, func(t *testing.T) {
			mpitest.RequireE2E(t, impl)
			bin := mpitest.BuildMpiprobe(t)
			pids := hungJob(t, bin, impl, "threads", 4, false)
			st, raw := runStatus(t, bin, pids)
			two := 0
			for _, r := range st.Ranks {
				if len(r.Threads) == 2 {
					two++
					calls := r.Threads[0].Call + "," + r.Threads[1].Call
					if calls != "MPI_Barrier,MPI_Recv" && calls != "MPI_Recv,MPI_Barrier" {
						t.Errorf("rank %d: threads in %s, want MPI_Barrier and MPI_Recv", r.Rank, calls)
					}
				}
			}
			if two != 3 {
				t.Errorf("%d ranks with two threads in MPI calls, want 3:\n%s", two, raw)
			}
			notes := strings.Join(st.Notes, "\n")
			if strings.Count(notes, "threads in MPI calls") != 3 {
				t.Errorf("notes %q: want one per rank with two threads", notes)
			}
			if !strings.HasPrefix(st.Verdict, "ranks 0-2 wait in MPI_Barrier on WORLD (size 4) for at least") {
				t.Errorf("verdict %q", st.Verdict)
			}
		})
	}
}

// TestUnknownBuild runs Open MPI with a copy of libmpi whose build id is
// not in the layout table (mpitest.UnknownBuild): status and --collectives infer its layout from
// the ranks, so status names the communicator the ranks wait in and no
// communicator is flagged as a local handle.
func TestUnknownBuild(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	ompi := mpitest.UnknownBuild(t, impl)

	pids := hungJob(t, bin, ompi, "skip", 4, false)
	st, raw := runStatus(t, bin, pids)
	// The layout is inferred from the ranks themselves: status names the
	// communicator the waiting ranks are in, as with a verified build.
	if strings.Contains(raw, "unknown libmpi.so.40 build") {
		t.Errorf("status did not infer the layout of the unknown build:\n%s", raw)
	}
	named := 0
	for _, r := range st.Ranks {
		for _, th := range r.Threads {
			if th.Comm != nil && th.Comm.Name == "WORLD" && th.Comm.Size == 4 {
				named++
			}
		}
	}
	if named < 3 {
		t.Errorf("%d threads wait in a named WORLD of 4 ranks, want the 3 waiting ranks':\n%s", named, raw)
	}

	prog := mpitest.Build(t, impl, "colls")
	// "300": colls sleeps after MPI_Init, so that the layout is inferred
	// before it frees its communicators (a freed one keeps its handle).
	code, stdout, stderr := runOutput(t, bin, nil, append([]string{"-v", "--collectives", "--json", "--lib", ompi.Lib, "--"}, ompi.Command(2, nil, prog, "1", "300")...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "communicator layout inferred") {
		t.Errorf("no line about the inferred layout:\n%s", stderr)
	}
	var sum summaryJSON
	if err := json.Unmarshal([]byte(stdout[strings.Index(stdout, "{"):]), &sum); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, j := range sum.Jobs {
		for _, r := range j.Ranks {
			for _, c := range r.Collectives {
				n++
				if c.Local {
					t.Errorf("rank %s: communicator %+v flagged local although its layout was inferred", r.Rank, c)
				}
			}
		}
	}
	if n == 0 {
		t.Errorf("no communicator counted:\n%s", stdout)
	}
}
