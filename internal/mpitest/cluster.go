package mpitest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// clusterRun is where .ci/cluster keeps the simulated cluster's state:
// each node's holder pid and network namespace, its configuration, and
// nsrsh, the cluster's rsh.
const clusterRun = "/run/mpiprobe-cluster"

// clusterInstall is what .ci/run installs for the cluster.
const clusterInstall = "apt-get install -y slurmd slurmctld slurm-client munge iproute2, as .ci/run does"

// SimCluster is the simulated cluster of .ci/cluster: compute nodes n1,
// n2, n3 with their own network, UTS, IPC and mount namespaces on the
// host's PID namespace, cabled to a bridge, each with munged and slurmd
// (slurmctld on n1). Paths under / are the host's in every node except
// /etc/hosts, /etc/slurm, /dev/shm and clusterRun's node-local
// directories: a program built in a test's temporary directory runs in
// every node as it is. docs/cluster-sim.md describes it.
type SimCluster struct {
	nodes   []string
	holders map[string]int
	wd      string
}

// Cluster returns the simulated cluster, bringing it up with .ci/cluster
// up if it is not (and down again when the test ends; a cluster that was
// up already, as .ci/run brings it up, stays up). What it needs missing
// skips the test, or fails it under MPIPROBE_E2E=require, naming the
// packages to install.
func Cluster(t testing.TB) *SimCluster {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (namespaces, mounts and daemons of the simulated cluster)")
	}
	for _, bin := range []string{"unshare", "nsenter", "ip", "ss", "munged", "slurmd", "slurmctld", "srun"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin+" not installed ("+clusterInstall+")")
		}
	}
	Require(t, missing...)
	script := filepath.Join(RepoRoot(t), ".ci", "cluster")
	if err := exec.Command(script, "status").Run(); err != nil {
		if out, err := exec.Command(script, "up").CombinedOutput(); err != nil {
			t.Fatalf(".ci/cluster up: %v\n%s", err, out)
		}
		t.Cleanup(func() {
			if out, err := exec.Command(script, "down").CombinedOutput(); err != nil {
				t.Errorf(".ci/cluster down: %v\n%s", err, out)
			}
		})
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	c := &SimCluster{nodes: []string{"n1", "n2", "n3"}, holders: map[string]int{}, wd: wd}
	for _, n := range c.nodes {
		b, err := os.ReadFile(filepath.Join(clusterRun, n, "holder"))
		if err != nil {
			t.Fatalf("the cluster is up but its node %s is not: %v (.ci/cluster status)", n, err)
		}
		if c.holders[n], err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
			t.Fatalf("%s/%s/holder: %v", clusterRun, n, err)
		}
	}
	return c
}

// Nodes returns the names (and host names) of the compute nodes, in order.
func (c *SimCluster) Nodes() []string { return append([]string(nil), c.nodes...) }

// Argv returns the command line that runs argv inside node, in the
// caller's environment and working directory.
func (c *SimCluster) Argv(node string, argv ...string) []string {
	pid, ok := c.holders[node]
	if !ok {
		panic("mpitest: no node " + node + " in the simulated cluster")
	}
	return append([]string{"nsenter", "--target", strconv.Itoa(pid), "--net", "--uts", "--ipc", "--mount", "--wd=" + c.wd, "--"}, argv...)
}

// Command returns the command running argv inside node.
func (c *SimCluster) Command(node string, argv ...string) *exec.Cmd {
	a := c.Argv(node, argv...)
	return exec.Command(a[0], a[1:]...)
}

// NetNS returns node's network namespace as /proc/PID/ns/net names it
// ("net:[4026532320]"): a process lives in node when its own link reads
// the same.
func (c *SimCluster) NetNS(t testing.TB, node string) string {
	t.Helper()
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", c.holders[node]))
	if err != nil {
		t.Fatalf("node %s: %v (.ci/cluster status)", node, err)
	}
	return ns
}

// NodeOf returns the node whose network namespace process pid lives in,
// or "" if none (the host's, or the process is gone).
func (c *SimCluster) NodeOf(t testing.TB, pid int) string {
	t.Helper()
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return ""
	}
	for _, n := range c.nodes {
		if c.NetNS(t, n) == ns {
			return n
		}
	}
	return ""
}

// rsh is the cluster's rsh: nsrsh NODE COMMAND runs COMMAND in NODE as
// sshd would (a clean environment, out of the caller's process tree).
func (c *SimCluster) rsh() string { return filepath.Join(clusterRun, "nsrsh") }

// hostfile writes a hostfile naming every node with perNode slots, one
// line per node made by line, and returns its path.
func (c *SimCluster) hostfile(t testing.TB, line func(node string, perNode int) string, perNode int) string {
	t.Helper()
	var b bytes.Buffer
	for _, n := range c.nodes {
		b.WriteString(line(n, perNode) + "\n")
	}
	f := filepath.Join(t.TempDir(), "hostfile")
	if err := os.WriteFile(f, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// hostOnly fails the test for an implementation in another root: the
// nodes run the host's MPI.
func hostOnly(t testing.TB, impl Impl) {
	t.Helper()
	if impl.Root != "" {
		t.Fatalf("the simulated cluster runs the host's MPI, not %s's", impl.Root)
	}
}

// Mpirun returns the command line, to run in the first node, of an Open
// MPI job of perNode ranks on every node: mpirun --hostfile (NODE
// slots=perNode) --mca plm_rsh_agent nsrsh, which starts orted in the
// other nodes through the cluster's rsh.
func (c *SimCluster) Mpirun(t testing.TB, impl Impl, perNode int, prog string, args ...string) []string {
	t.Helper()
	hostOnly(t, impl)
	hf := c.hostfile(t, func(n string, k int) string { return fmt.Sprintf("%s slots=%d", n, k) }, perNode)
	return impl.Command(perNode*len(c.nodes), []string{"--hostfile", hf, "--mca", "plm_rsh_agent", c.rsh()}, prog, args...)
}

// Hydra returns the command line, to run in the first node, of an MPICH
// job of perNode ranks on every node: mpiexec (hydra) -launcher rsh
// -launcher-exec nsrsh -f (NODE:perNode) -ppn perNode, which starts
// hydra_pmi_proxy in the other nodes through the cluster's rsh (and
// forks the first node's).
func (c *SimCluster) Hydra(t testing.TB, impl Impl, perNode int, prog string, args ...string) []string {
	t.Helper()
	hostOnly(t, impl)
	hf := c.hostfile(t, func(n string, k int) string { return fmt.Sprintf("%s:%d", n, k) }, perNode)
	opts := []string{"-launcher", "rsh", "-launcher-exec", c.rsh(), "-f", hf, "-ppn", strconv.Itoa(perNode)}
	argv := append([]string{impl.Launcher}, impl.LauncherArgs...)
	argv = append(argv, opts...)
	argv = append(argv, "-n", strconv.Itoa(perNode*len(c.nodes)), prog)
	return append(argv, args...)
}

// Srun returns the command line, to run in any node, of a Slurm job step
// of perNode tasks on every node with srun --mpi=mpi: "pmix" for Open
// MPI (Slurm's mpi/pmix_v4 and Open MPI's ext3x PMIx component), "pmi2"
// for MPICH (Slurm's mpi/pmi2 serves MPICH's PMI-1 client). Open MPI
// under pmi2 fails in MPI_Init (Debian's Open MPI has no s1/s2
// component), and MPICH under pmix starts singletons, each rank 0 of 1
// (its PMI is PMI-1). The job is cancelled when the
// test ends, so that its allocation does not outlive a killed srun.
func (c *SimCluster) Srun(t testing.TB, mpi string, perNode int, prog string, args ...string) []string {
	t.Helper()
	name := fmt.Sprintf("mpitest-%d-%s", os.Getpid(), strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()))
	t.Cleanup(func() { _ = c.Command(c.nodes[0], "scancel", "--full", "--name", name).Run() })
	argv := []string{"srun", "--job-name", name, "-N", strconv.Itoa(len(c.nodes)), "-n", strconv.Itoa(perNode * len(c.nodes)),
		"--ntasks-per-node", strconv.Itoa(perNode), "--mpi=" + mpi, prog}
	return append(argv, args...)
}

// StartJob is StartJob with the launcher argv run inside node: it waits
// until n processes of prog, in any node, map lib.
func (c *SimCluster) StartJob(t testing.TB, node string, argv []string, prog string, n int, lib string) *Job {
	t.Helper()
	return StartJob(t, c.Argv(node, argv...), prog, n, lib)
}

// Addr returns node's address on the cluster's bridge (.ci/cluster:
// 10.77.0.N for node nN): what a host outside the nodes' /etc/hosts, as
// the switch's, reaches it at.
func (c *SimCluster) Addr(node string) string { return "10.77.0." + strings.TrimPrefix(node, "n") }

// switchAddr is the address of the switch's bridge (.ci/cluster), where a
// monitoring host of the cluster listens.
const switchAddr = "10.77.0.254"

// Prometheus starts a Prometheus server in the switch's network
// namespace, listening on the bridge's address (port 9090) with the
// configuration config (relative paths read from dir): it scrapes the
// nodes over the bridge as a cluster's monitoring host does. The test
// queries it through connections made in that namespace.
func (c *SimCluster) Prometheus(t testing.TB, dir, config string) *Prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		Require(t, "prometheus (Debian package prometheus)")
	}
	b, err := os.ReadFile(filepath.Join(clusterRun, "switch", "holder"))
	if err != nil {
		t.Fatalf("the cluster's switch: %v (.ci/cluster status)", err)
	}
	holder := strings.TrimSpace(string(b))
	ns := filepath.Join("/proc", holder, "ns", "net")
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		err := procfs.FS{}.InNamespace(ns, unix.CLONE_NEWNET, func() (err error) {
			conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return conn, err
	}
	client := &http.Client{Transport: &http.Transport{DialContext: dial}, Timeout: 30 * time.Second}
	wrap := []string{"nsenter", "--target", holder, "--net"}
	return startPrometheus(t, bin, dir, config, net.JoinHostPort(switchAddr, "9090"), wrap, client)
}
