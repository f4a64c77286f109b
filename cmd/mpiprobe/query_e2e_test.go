package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// TestStatusThroughAgent: a user who is not root sees their own hung job.
// nobody starts a 3-rank ring of receives (MPICH); an agent runs with its
// query socket; nobody's `status --job J --json` goes through the agent
// and gives root's verdict, the cycle 0->2->1->0. Another user gets one
// line saying a rank is not theirs for -p, and no rank of the job for
// --job; without an agent, one line names the socket and how to start it.
func TestStatusThroughAgent(t *testing.T) {
	impl := mpitest.MPICH()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	u := mpitest.StartUserJob(t, bin, impl, nobody, "ring_recv_cycle", 3)
	job := u.Job
	id := jobOfPS(t, bin, job.Ranks[0])

	statusAs := func(cred *syscall.Credential, args ...string) (int, string, string) {
		t.Helper()
		return runOutput(t, bin, cred, append([]string{"status", "--query-socket", u.Query}, args...)...)
	}
	decode := func(who, stdout string) statusJSON {
		t.Helper()
		var st statusJSON
		if err := json.Unmarshal([]byte(stdout), &st); err != nil {
			t.Fatalf("%s: %v\n%s", who, err, stdout)
		}
		return st
	}
	start := time.Now()
	code, stdout, stderr := statusAs(nil, "--job", id, "--json")
	rootTook := time.Since(start)
	if code != 0 {
		t.Fatalf("root's status: exit %d\n%s", code, stderr)
	}
	root := decode("root", stdout)
	start = time.Now()
	code, stdout, stderr = statusAs(nobody, "--job", id, "--json")
	userTook := time.Since(start)
	if code != 0 {
		t.Fatalf("nobody's status through the agent: exit %d\n%s", code, stderr)
	}
	user := decode("nobody", stdout)
	t.Logf("status --job, 3 ranks, window 1 s: root %.2f s, nobody through the agent %.2f s", rootTook.Seconds(), userTook.Seconds())
	if len(root.Cycles) != 1 || !slices.Equal(root.Cycles[0], []int{0, 2, 1}) {
		t.Errorf("root's cycles %v, want [[0 2 1]]\n%s", root.Cycles, root.Verdict)
	}
	if user.Verdict != root.Verdict || fmt.Sprint(user.Cycles) != fmt.Sprint(root.Cycles) || len(user.Ranks) != 3 {
		t.Errorf("nobody's status through the agent: verdict %q, cycles %v, %d ranks; root's: %q, %v",
			user.Verdict, user.Cycles, len(user.Ranks), root.Verdict, root.Cycles)
	}

	// The table and the node facts (what a fanned-out status runs on
	// each node) through the agent are root's too: the same verdict
	// line, the same ranks in the same classes.
	verdictLine := func(who, out string) string {
		t.Helper()
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "Verdict: ") {
				return l
			}
		}
		t.Fatalf("%s's status table has no verdict line:\n%s", who, out)
		return ""
	}
	_, rootTable, _ := statusAs(nil, "--job", id)
	code, userTable, stderr := statusAs(nobody, "--job", id)
	if code != 0 || verdictLine("nobody", userTable) != verdictLine("root", rootTable) {
		t.Errorf("nobody's status table through the agent (exit %d, %s):\n%s\nroot's:\n%s", code, stderr, userTable, rootTable)
	}
	classes := func(who, out string) string {
		t.Helper()
		var nf struct {
			Kind      string `json:"kind"`
			RankCount int    `json:"rank_count"`
			Classes   []struct {
				Ranks [][2]int        `json:"ranks"`
				PIDs  []int           `json:"pids"`
				Call  json.RawMessage `json:"call"`
			} `json:"classes"`
		}
		if err := json.Unmarshal([]byte(out), &nf); err != nil || nf.Kind != "node_facts" || nf.RankCount != 3 {
			t.Fatalf("%s's --node-facts: %v, kind %q, %d ranks\n%s", who, err, nf.Kind, nf.RankCount, out)
		}
		b, _ := json.Marshal(nf.Classes)
		return string(b)
	}
	_, rootFacts, _ := statusAs(nil, "--job", id, "--node-facts")
	code, userFacts, stderr := statusAs(nobody, "--job", id, "--node-facts")
	if code != 0 {
		t.Fatalf("nobody's --node-facts through the agent: exit %d\n%s", code, stderr)
	}
	if u, r := classes("nobody", userFacts), classes("root", rootFacts); u != r {
		t.Errorf("nobody's node facts through the agent:\n%s\nroot's:\n%s", u, r)
	}

	// Another user: not theirs.
	pid := job.Ranks[0]
	code, stdout, stderr = statusAs(mpitest.Other, "-p", fmt.Sprint(pid), "--json")
	want := fmt.Sprintf("pid %d is not yours: it is owned by uid %d, you are uid %d", pid, nobody.Uid, mpitest.Other.Uid)
	if code == 0 || !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || stdout != "" {
		t.Errorf("status -p %d as uid %d: exit %d, stdout %q, stderr %q: want one line %q", pid, mpitest.Other.Uid, code, stdout, stderr, want)
	}
	code, stdout, stderr = statusAs(mpitest.Other, "--job", id, "--json")
	if code == 0 || !strings.Contains(stderr, "that is yours") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || strings.Contains(stdout, `"pid"`) {
		t.Errorf("status --job %s as uid %d: exit %d, stdout %q, stderr %q: want one line saying no rank of the job is theirs", id, mpitest.Other.Uid, code, stdout, stderr)
	}

	// No agent at the socket.
	none := filepath.Join(filepath.Dir(u.Query), "none.sock")
	code, _, stderr = runOutput(t, bin, nobody, "status", "--query-socket", none, "--job", id)
	if code == 0 || !strings.Contains(stderr, "no agent answers at "+none) || !strings.Contains(stderr, "systemctl start mpiprobe") ||
		strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("status as nobody without an agent: exit %d, stderr %q: want one line naming %s and how to start the agent", code, stderr, none)
	}
}
