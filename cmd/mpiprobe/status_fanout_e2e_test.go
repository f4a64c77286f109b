package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// TestStatusFanout runs status across "nodes" that are this one: each
// host of --hosts runs the real node command here through a generic
// template, on a real hung job (a ring of MPI_Ssend, 4 ranks under Open
// MPI). Nodes that fail, time out or are not there are named and the
// verdict says it is partial.
func TestStatusFanout(t *testing.T) {
	ompi := mpitest.OpenMPI()
	mpitest.RequireE2E(t, ompi)
	bin := mpitest.BuildMpiprobe(t)
	prog := mpitest.BuildSource(t, ompi, filepath.Join(mpitest.RepoRoot(t), "testdata", "deadlock", "ring_ssend_cycle.c"))
	job := mpitest.StartJob(t, ompi.Command(4, nil, prog), prog, 4, "libmpi.so.40")
	id := jobOfPS(t, bin, job.Ranks[0])
	self, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	const local = `sh -c 'exec "$@"' %h` // every host runs the node command here
	type fanned struct {
		Verdict string   `json:"verdict"`
		Nodes   []string `json:"nodes"`
		Missing []struct {
			Host   string `json:"host"`
			Reason string `json:"reason"`
		} `json:"missing_nodes"`
		Notes []string `json:"notes"`
		Ranks []struct {
			Rank int    `json:"rank"`
			Host string `json:"host"`
		} `json:"ranks"`
	}
	status := func(t *testing.T, args ...string) (fanned, string, time.Duration) {
		t.Helper()
		start := time.Now()
		code, stdout, stderr := runOutput(t, bin, nil, append([]string{"status", "--json", "--job", id}, args...)...)
		took := time.Since(start)
		if code != 0 {
			t.Fatalf("status %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
		}
		var st fanned
		if err := json.Unmarshal([]byte(stdout), &st); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		return st, stdout, took
	}
	const cycle = "deadlock cycle: rank 0 waits for 1 (MPI_Ssend tag 4 at "
	// The ranks are in their sends for a window before the fan-outs are
	// asked: a plain status names the cycle first (a status begun as they
	// entered sees them inside for less than its window).
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, raw, _ := status(t)
		if strings.HasPrefix(st.Verdict, cycle) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ring never hung in its sends:\n%s", raw)
		}
	}

	t.Run("every node answers", func(t *testing.T) {
		st, raw, took := status(t, "--hosts", "n1", "--fanout", local)
		t.Logf("fanned-out status of 1 node, window 1 s: %.2f s", took.Seconds())
		if !strings.HasPrefix(st.Verdict, cycle) || len(st.Missing) != 0 || len(st.Nodes) != 1 || st.Nodes[0] != "n1" {
			t.Errorf("verdict %q, nodes %v, missing %v; want the cycle from n1\n%s", st.Verdict, st.Nodes, st.Missing, raw)
		}
		for _, r := range st.Ranks {
			if r.Host != "n1" {
				t.Errorf("rank %d on %q, want n1 (the node asked)", r.Rank, r.Host)
			}
		}
	})
	t.Run("a node fails", func(t *testing.T) {
		st, raw, _ := status(t, "--hosts", "n1,n2", "--fanout", `sh -c 'case $0 in n2) echo "ssh: connect to host n2: No route to host" >&2; exit 255;; esac; exec "$@"' %h`)
		want := "partial: 1 of 2 nodes did not answer (n2: exit status 255: ssh: connect to host n2: No route to host): " + cycle
		if !strings.HasPrefix(st.Verdict, want) || len(st.Missing) != 1 || st.Missing[0].Host != "n2" {
			t.Errorf("verdict %q, missing %v; want it to start %q\n%s", st.Verdict, st.Missing, want, raw)
		}
	})
	t.Run("a node is slow", func(t *testing.T) {
		st, raw, took := status(t, "--hosts", "n1,n2", "--fanout-timeout", "4s",
			"--fanout", `sh -c 'case $0 in n2) sleep 60;; esac; exec "$@"' %h`)
		want := "partial: 1 of 2 nodes did not answer (n2: no answer within 4."
		if !strings.HasPrefix(st.Verdict, want) || took > 20*time.Second {
			t.Errorf("verdict %q after %s; want it to start %q, within the timeout\n%s", st.Verdict, took, want, raw)
		}
	})
	t.Run("one node twice", func(t *testing.T) {
		st, raw, _ := status(t, "--hosts", "n1,n2", "--fanout", local)
		want := "ranks 0-3 are claimed by both n1 and n2: both are the same node (the same host name and pids): list it once in --hosts; the verdict uses n1's"
		if len(st.Notes) == 0 || st.Notes[0] != want || !strings.HasPrefix(st.Verdict, cycle) {
			t.Errorf("notes %q, verdict %q; want the note %q and the cycle\n%s", st.Notes, st.Verdict, want, raw)
		}
	})
	t.Run("one launch for every node", func(t *testing.T) {
		// A launcher that runs the node command on every host at once
		// (srun) prints one document per node; here the one node
		// there is answers, the other asked does not.
		st, raw, _ := status(t, "--hosts", self+",ghost", "--fanout-each", "--fanout", `sh -c '"$@"; exit 1' %H`)
		want := "partial: 1 of 2 nodes did not answer (ghost: exit status 1): " + cycle
		if !strings.HasPrefix(st.Verdict, want) {
			t.Errorf("verdict %q, want it to start %q\n%s", st.Verdict, want, raw)
		}
	})
	t.Run("no node answers", func(t *testing.T) {
		code, _, stderr := runOutput(t, bin, nil, "status", "--job", id, "--hosts", "n1,n2", "--fanout", "false")
		if code == 0 || !strings.Contains(stderr, "no node answered (2 asked); n1: exit status 1: try the node command by hand: ") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("exit %d, stderr %q: want one line naming n1's failure", code, stderr)
		}
	})
}

// jobOfPS is the job id `mpiprobe ps` gives the process pid.
func jobOfPS(t *testing.T, bin string, pid int) string {
	t.Helper()
	code, stdout, stderr := runOutput(t, bin, nil, "ps", "--json")
	if code != 0 {
		t.Fatalf("ps: exit %d\n%s", code, stderr)
	}
	var ps struct {
		Jobs []struct {
			Job       string `json:"job"`
			Processes []struct {
				PID int `json:"pid"`
			} `json:"processes"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(stdout), &ps); err != nil {
		t.Fatal(err)
	}
	for _, j := range ps.Jobs {
		for _, p := range j.Processes {
			if p.PID == pid {
				return j.Job
			}
		}
	}
	t.Fatalf("pid %d is in no job of ps:\n%s", pid, stdout)
	return ""
}
