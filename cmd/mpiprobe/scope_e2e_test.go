package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// scopePs is what the scope test reads of ps --json.
type scopePs struct {
	Jobs []struct {
		Job       string `json:"job"`
		Processes []struct {
			PID  int    `json:"pid"`
			Host string `json:"host"`
		} `json:"processes"`
	} `json:"jobs"`
}

// scopeRanks runs ps --json with args (through prefix, e.g. nsenter) and
// returns the host and job of every process it lists, by pid.
func scopeRanks(t *testing.T, prefix []string, bin string, args ...string) map[int][2]string {
	t.Helper()
	argv := slices.Concat(prefix, []string{bin, "ps", "--json"}, args)
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(argv, " "), err)
	}
	var l scopePs
	if err := json.Unmarshal(out, &l); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	got := map[int][2]string{}
	for _, j := range l.Jobs {
		for _, p := range j.Processes {
			got[p.PID] = [2]string{p.Host, j.Job}
		}
	}
	return got
}

// TestScopeNetns runs one job of each MPI as a simulated node — a network
// namespace with loopback alone and a UTS namespace named nodeA — and one
// on the host. ps --scope netns in nodeA's namespace lists exactly that
// job's ranks; from the host, --scope host lists them on host nodeA with
// a key that names their launcher on nodeA, and --scope netns leaves them
// out (and -p of one says why in one line).
func TestScopeNetns(t *testing.T) {
	ompi, mpich := mpitest.OpenMPI(), mpitest.MPICH()
	mpitest.RequireE2E(t, ompi, mpich)
	mpitest.Require(t, lookPaths("unshare", "nsenter", "ip")...)
	bin := mpitest.BuildMpiprobe(t)
	me, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	for _, impl := range []mpitest.Impl{ompi, mpich} {
		t.Run(impl.Name, func(t *testing.T) {
			flood := mpitest.Build(t, impl, "flood")
			cmd := impl.Command(2, nil, flood, "-n", "10", "-p", "60000")
			node := onNodeA(cmd)
			in := mpitest.StartJob(t, node, flood, 2, impl.Lib).Ranks
			// The host's job: WaitRanks finds the ranks of both.
			both := mpitest.StartJob(t, cmd, flood, 4, impl.Lib).Ranks
			host := slices.DeleteFunc(slices.Clone(both), func(pid int) bool { return slices.Contains(in, pid) })
			if len(host) != 2 {
				t.Fatalf("ranks %v in nodeA, %v in all: want two on the host", in, both)
			}
			nsenter := []string{"nsenter", "--net=/proc/" + strconv.Itoa(in[0]) + "/ns/net"}

			// In nodeA, --scope netns: nodeA's ranks, nothing of the host.
			got := scopeRanks(t, nsenter, bin, "--scope", "netns")
			for _, pid := range in {
				if _, ok := got[pid]; !ok {
					t.Errorf("ps --scope netns in nodeA: rank %d missing (%v)", pid, got)
				}
			}
			for pid := range got {
				if !slices.Contains(in, pid) {
					t.Errorf("ps --scope netns in nodeA lists pid %d, not of nodeA's job (%v)", pid, in)
				}
			}

			// From the host, --scope host: both jobs, each on its node, the
			// ranks of nodeA under one key naming nodeA's launcher.
			got = scopeRanks(t, nil, bin)
			key := got[in[0]][1]
			for _, pid := range in {
				if h := got[pid]; h[0] != "nodeA" || h[1] != key {
					t.Errorf("ps from the host: nodeA's rank %d on host %q job %q, want nodeA, job %q", pid, h[0], h[1], key)
				}
			}
			for _, pid := range host {
				if h := got[pid]; h[0] != me {
					t.Errorf("ps from the host: host rank %d on %q, want %q", pid, h[0], me)
				}
			}
			wantKey := map[string]string{"openmpi": "@127.0.0.1:", "mpich": "hydra-nodeA:"}[impl.Name]
			if !strings.Contains(key, wantKey) {
				t.Errorf("nodeA's job key %q does not name its launcher (%q)", key, wantKey)
			}

			// From the host, --scope netns: the host's job alone.
			got = scopeRanks(t, nil, bin, "--scope", "netns")
			for _, pid := range in {
				if _, ok := got[pid]; ok {
					t.Errorf("ps --scope netns from the host lists nodeA's rank %d", pid)
				}
			}
			for _, pid := range host {
				if _, ok := got[pid]; !ok {
					t.Errorf("ps --scope netns from the host: host rank %d missing", pid)
				}
			}

			// -p of nodeA's rank under --scope netns: one line, cause and fix.
			code, _, stderr := runOutput(t, bin, nil, "probes", "--scope", "netns", "-p", strconv.Itoa(in[0]))
			if code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 ||
				!strings.Contains(stderr, "another network namespace") || !strings.Contains(stderr, "nsenter --net=/proc/"+strconv.Itoa(in[0])+"/ns/net") {
				t.Errorf("probes --scope netns -p %d: exit %d, %q", in[0], code, stderr)
			}
			// --job with the key reaches nodeA's ranks from inside.
			argv := slices.Concat(nsenter, []string{bin, "status", "--scope", "netns", "--json", "--window", "200ms", "--job", key})
			sout, err := exec.Command(argv[0], argv[1:]...).Output()
			if err != nil || !strings.Contains(string(sout), `"pid": `+strconv.Itoa(in[0])) {
				t.Errorf("status --job %s in nodeA: %v\n%s", key, err, sout)
			}
		})
	}
}

// TestAgentScopeNetns runs the agent on the host with scope = netns in
// its configuration file, a job in nodeA's network namespace first and one
// on the host then: the agent tracks the host's ranks and never nodeA's,
// though BPF traced those at MPI_Init and the exec watch saw them.
func TestAgentScopeNetns(t *testing.T) {
	ompi := mpitest.OpenMPI()
	mpitest.RequireE2E(t, ompi)
	mpitest.Require(t, lookPaths("unshare", "ip")...)
	bin := mpitest.BuildMpiprobe(t)
	d := mpitest.NewAgentDirs(t)
	conf, err := os.OpenFile(d.Config, os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = conf.WriteString("scope = netns\n")
		conf.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	ag := mpitest.StartAgent(t, bin, d, "")
	flood := mpitest.Build(t, ompi, "flood")
	cmd := ompi.Command(2, nil, flood, "-n", "10", "-p", "4000")
	node := onNodeA(cmd)
	in := mpitest.StartJob(t, node, flood, 2, ompi.Lib).Ranks
	both := mpitest.StartJob(t, cmd, flood, 4, ompi.Lib).Ranks
	host := slices.DeleteFunc(slices.Clone(both), func(pid int) bool { return slices.Contains(in, pid) })
	for _, pid := range host {
		waitLog(t, ag, `msg="MPI process" pid=`+strconv.Itoa(pid)+" ")
	}
	// nodeA's ranks entered MPI_Init before the host's, and the exec
	// watch's second look comes 2 s after exec: past both now.
	time.Sleep(2500 * time.Millisecond)
	log := ag.Log(t)
	for _, pid := range in {
		if strings.Contains(log, "pid="+strconv.Itoa(pid)+" ") {
			t.Errorf("the agent with scope = netns names nodeA's rank %d:\n%s", pid, log)
		}
	}
}

// onNodeA returns the command line that runs cmd as a simulated node
// nodeA: in a network namespace of its own with loopback alone, and a UTS
// namespace whose host name is nodeA.
func onNodeA(cmd []string) []string {
	return slices.Concat([]string{"unshare", "--net", "--uts", "sh", "-c", `ip link set lo up && hostname nodeA && exec "$@"`, "sh"}, cmd)
}

// lookPaths returns a "needs PROG" for each program not in $PATH.
func lookPaths(progs ...string) []string {
	var missing []string
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p+" (util-linux, iproute2)")
		}
	}
	return missing
}
