package identity

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// fakeProc is a Reader over a made-up process table. It counts Stat calls.
type fakeProc struct {
	procs map[int]fakeProcess
	stats int
}

type fakeProcess struct {
	ppid int
	comm string
	env  map[string]string // nil: environ unreadable
	args []string          // the command line
	host string            // its UTS namespace's host name; "": unreadable
}

func (p *fakeProc) Environ(pid int) (map[string]string, error) {
	proc, ok := p.procs[pid]
	if !ok {
		return nil, fmt.Errorf("read environ of %d: %w", pid, fs.ErrNotExist)
	}
	if proc.env == nil {
		return nil, fmt.Errorf("read environ of %d: %w", pid, fs.ErrPermission)
	}
	return proc.env, nil
}

func (p *fakeProc) Cmdline(pid int) ([]string, error) {
	proc, ok := p.procs[pid]
	if !ok {
		return nil, fmt.Errorf("read cmdline of %d: %w", pid, fs.ErrNotExist)
	}
	return proc.args, nil
}

func (p *fakeProc) Hostname(pid int) (string, error) {
	proc, ok := p.procs[pid]
	if !ok || proc.host == "" {
		return "", fmt.Errorf("read uts namespace of %d: %w", pid, fs.ErrNotExist)
	}
	return proc.host, nil
}

func (p *fakeProc) Stat(pid int) (procfs.Stat, error) {
	p.stats++
	proc, ok := p.procs[pid]
	if !ok {
		return procfs.Stat{}, fmt.Errorf("read stat of %d: %w", pid, fs.ErrNotExist)
	}
	return procfs.Stat{PID: pid, PPID: proc.ppid, Comm: proc.comm, State: 'S'}, nil
}

// hydraTree is mpiexec (80) -> hydra_pmi_proxy (90) -> rank (100), under a
// shell (70) under init.
func hydraTree(mpiexecComm string, rankEnv map[string]string) map[int]fakeProcess {
	return map[int]fakeProcess{
		1:   {ppid: 0, comm: "systemd", env: env()},
		70:  {ppid: 1, comm: "bash", env: env()},
		80:  {ppid: 70, comm: mpiexecComm, env: env()},
		90:  {ppid: 80, comm: "hydra_pmi_proxy", env: env()},
		100: {ppid: 90, comm: "a.out", env: rankEnv},
	}
}

var hydraEnv = env("PMI_RANK=2", "PMI_SIZE=4", "MPI_LOCALRANKID=2", "PMI_FD=6")

func TestResolveHydra(t *testing.T) {
	for _, comm := range []string{"mpiexec", "mpiexec.hydra", "mpiexec.mpich", "mpirun", "mpirun.mpich"} {
		t.Run(comm, func(t *testing.T) {
			r := &fakeProc{procs: hydraTree(comm, hydraEnv)}
			got := Resolve(100, r, "node1")
			w := Identity{Host: "node1", Job: "hydra-80", Rank: "2", Size: "4", Launcher: "hydra"}
			if got != w {
				t.Fatalf("Resolve:\n got %+v\nwant %+v", got, w)
			}
		})
	}
}

func TestResolveHydraVariants(t *testing.T) {
	tests := []struct {
		name  string
		procs func() map[int]fakeProcess
		want  Identity
	}{
		{
			name: "in an allocation",
			procs: func() map[int]fakeProcess {
				return hydraTree("mpiexec", env("SLURM_JOB_ID=12345", "SLURM_NTASKS=4", "PMI_RANK=2", "PMI_SIZE=4", "MPI_LOCALRANKID=2"))
			},
			want: Identity{Host: "node1", Job: "12345/hydra-80", Rank: "2", Size: "4", Launcher: "hydra"},
		},
		{
			name: "wrapper script between proxy and rank",
			procs: func() map[int]fakeProcess {
				p := hydraTree("mpiexec.hydra", hydraEnv)
				p[95] = fakeProcess{ppid: 90, comm: "bash", env: env()}
				p[100] = fakeProcess{ppid: 95, comm: "a.out", env: hydraEnv}
				return p
			},
			want: Identity{Host: "node1", Job: "hydra-80", Rank: "2", Size: "4", Launcher: "hydra"},
		},
		{
			name: "intel mpi bootstrap proxy",
			procs: func() map[int]fakeProcess {
				p := hydraTree("mpiexec.hydra", hydraEnv)
				p[85] = fakeProcess{ppid: 80, comm: "hydra_bstrap_pr", env: env()}
				p[90] = fakeProcess{ppid: 85, comm: "hydra_pmi_proxy", env: env()}
				return p
			},
			want: Identity{Host: "node1", Job: "hydra-80", Rank: "2", Size: "4", Launcher: "hydra"},
		},
		{
			name: "remote node: proxy under sshd, no mpiexec",
			procs: func() map[int]fakeProcess {
				return hydraTree("sshd", hydraEnv)
			},
			want: Identity{Host: "node1", Job: Unknown, Rank: "2", Size: "4", Launcher: "hydra"},
		},
		{
			name: "proxy's parent gone (orphaned to init)",
			procs: func() map[int]fakeProcess {
				p := hydraTree("mpiexec", hydraEnv)
				p[90] = fakeProcess{ppid: 1, comm: "hydra_pmi_proxy", env: env()}
				return p
			},
			want: Identity{Host: "node1", Job: Unknown, Rank: "2", Size: "4", Launcher: "hydra"},
		},
		{
			name: "mpiexec is pid 1 of a container's /proc",
			procs: func() map[int]fakeProcess {
				p := hydraTree("mpiexec", hydraEnv)
				p[1] = fakeProcess{ppid: 0, comm: "mpiexec", env: env()}
				p[90] = fakeProcess{ppid: 1, comm: "hydra_pmi_proxy", env: env()}
				return p
			},
			want: Identity{Host: "node1", Job: "hydra-1", Rank: "2", Size: "4", Launcher: "hydra"},
		},
		{
			name: "the chain overrides a srun-looking environment",
			procs: func() map[int]fakeProcess {
				return hydraTree("mpiexec", env("SLURM_JOB_ID=12345", "SLURM_STEP_ID=0", "SLURM_PROCID=2", "PMI_RANK=2", "PMI_SIZE=4"))
			},
			want: Identity{Host: "node1", Job: "12345/hydra-80", Rank: "2", Size: "4", Launcher: "hydra"},
		},
		{
			name: "environ unreadable: job from the chain, rank unknown",
			procs: func() map[int]fakeProcess {
				return hydraTree("mpiexec", nil)
			},
			want: Identity{Host: "node1", Job: "hydra-80", Rank: Unknown, Size: Unknown, Launcher: "hydra"},
		},
		{
			name: "parent of the proxy is not an mpiexec",
			procs: func() map[int]fakeProcess {
				return hydraTree("python3", hydraEnv)
			},
			want: Identity{Host: "node1", Job: Unknown, Rank: "2", Size: "4", Launcher: "hydra"},
		},
		{
			name: "truncated proxy name of another program does not count",
			procs: func() map[int]fakeProcess {
				p := hydraTree("mpiexec", env("SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_PROCID=2", "PMI_RANK=2"))
				p[90] = fakeProcess{ppid: 80, comm: "hydra_pmi_prox", env: env()}
				return p
			},
			want: Identity{Host: "node1", Job: "1.0", Rank: "2", Size: Unknown, Launcher: "slurm"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Resolve(100, &fakeProc{procs: tt.procs()}, "node1")
			if got != tt.want {
				t.Fatalf("Resolve:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestResolveNoChainNeeded(t *testing.T) {
	for name, e := range map[string]map[string]string{
		"open mpi":   env("OMPI_COMM_WORLD_RANK=1", "PMIX_NAMESPACE=j"),
		"srun pmix":  env("PMIX_NAMESPACE=slurm.pmix.1.2", "PMIX_RANK=1"),
		"ompi jobid": env("OMPI_MCA_ess_base_jobid=5"),
	} {
		r := &fakeProc{procs: hydraTree("mpiexec", e)}
		id := Resolve(100, r, "h")
		if r.stats != 0 {
			t.Errorf("%s: %d Stat calls, want none", name, r.stats)
		}
		if c, _ := classify(e, hydraChain{}); id != c.withHost("h") {
			t.Errorf("%s: Resolve = %+v", name, id)
		}
	}
}

// withHost returns id with Host set, for comparisons.
func (id Identity) withHost(h string) Identity { id.Host = h; return id }

func TestResolveMissingProcess(t *testing.T) {
	r := &fakeProc{procs: map[int]fakeProcess{}}
	got := Resolve(4242, r, "")
	w := Identity{Host: Unknown, Job: Unknown, Rank: Unknown, Size: Unknown}
	if got != w {
		t.Fatalf("Resolve = %+v, want %+v", got, w)
	}
}

func TestResolveWalkBounded(t *testing.T) {
	t.Run("long chain", func(t *testing.T) {
		// 1000 <- 999 <- ... <- 2, with a proxy and mpiexec far above the
		// 32-step limit: not found.
		procs := map[int]fakeProcess{1: {ppid: 0, comm: "init"}}
		for pid := 2; pid <= 1000; pid++ {
			procs[pid] = fakeProcess{ppid: pid - 1, comm: "sh", env: env()}
		}
		procs[10] = fakeProcess{ppid: 9, comm: "hydra_pmi_proxy", env: env()}
		procs[9] = fakeProcess{ppid: 8, comm: "mpiexec", env: env()}
		procs[1000] = fakeProcess{ppid: 999, comm: "a.out", env: hydraEnv}
		r := &fakeProc{procs: procs}
		got := Resolve(1000, r, "n")
		if got.Job != Unknown || got.Launcher != "hydra" {
			t.Errorf("Resolve = %+v", got)
		}
		if r.stats > 1+maxWalk {
			t.Errorf("%d Stat calls, want at most %d", r.stats, 1+maxWalk)
		}
	})
	t.Run("within the limit", func(t *testing.T) {
		procs := map[int]fakeProcess{1: {ppid: 0, comm: "init"}}
		for pid := 2; pid <= 100; pid++ {
			procs[pid] = fakeProcess{ppid: pid - 1, comm: "sh", env: env()}
		}
		// The proxy is the 31st ancestor of 100, mpiexec the 32nd.
		procs[69] = fakeProcess{ppid: 68, comm: "hydra_pmi_proxy"}
		procs[68] = fakeProcess{ppid: 67, comm: "mpiexec"}
		procs[100] = fakeProcess{ppid: 99, comm: "a.out", env: hydraEnv}
		r := &fakeProc{procs: procs}
		if got := Resolve(100, r, "n"); got.Job != "hydra-68" {
			t.Errorf("Resolve = %+v", got)
		}
	})
	t.Run("cycle", func(t *testing.T) {
		r := &fakeProc{procs: map[int]fakeProcess{
			100: {ppid: 101, comm: "a.out", env: hydraEnv},
			101: {ppid: 100, comm: "sh"},
		}}
		Resolve(100, r, "n")
		if r.stats > 1+maxWalk {
			t.Errorf("%d Stat calls, want at most %d", r.stats, 1+maxWalk)
		}
	})
	t.Run("own parent", func(t *testing.T) {
		r := &fakeProc{procs: map[int]fakeProcess{100: {ppid: 100, comm: "a.out", env: hydraEnv}}}
		Resolve(100, r, "n")
		if r.stats != 1 {
			t.Errorf("%d Stat calls, want 1", r.stats)
		}
	})
	t.Run("stops at pid 1", func(t *testing.T) {
		r := &fakeProc{procs: map[int]fakeProcess{
			1:   {ppid: 50, comm: "init"}, // a lying pid 1 must not be followed
			50:  {ppid: 1, comm: "hydra_pmi_proxy"},
			100: {ppid: 1, comm: "a.out", env: hydraEnv},
		}}
		Resolve(100, r, "n")
		if r.stats != 2 {
			t.Errorf("%d Stat calls, want 2", r.stats)
		}
	})
	t.Run("stops at an error", func(t *testing.T) {
		r := &fakeProc{procs: map[int]fakeProcess{
			100: {ppid: 90, comm: "a.out", env: hydraEnv},
			80:  {ppid: 1, comm: "hydra_pmi_proxy"},
		}}
		got := Resolve(100, r, "n")
		if r.stats != 2 || got.Job != Unknown {
			t.Errorf("%d Stat calls, Resolve = %+v", r.stats, got)
		}
	})
}

// TestResolveRealProc resolves this test process through the real /proc:
// nothing launched it, so all but Host is Unknown, and Host is this
// node's name, read from its own UTS namespace, not the fallback.
func TestResolveRealProc(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc:", err)
	}
	for _, k := range []string{envOMPIRank, envOMPIJob, envPMIxNamespace, envPMIxRank, envPMIRank, envSlurmJob, envSlurmStep, envSlurmProcID} {
		if _, ok := os.LookupEnv(k); ok {
			t.Skipf("test runs under a launcher (%s is set)", k)
		}
	}
	var r Reader = procfs.FS{}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	got := Resolve(os.Getpid(), r, "fallback")
	w := Identity{Host: host, Job: Unknown, Rank: Unknown, Size: Unknown}
	if got != w {
		t.Fatalf("Resolve = %+v, want %+v", got, w)
	}
	if _, err := r.Environ(1 << 30); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Environ of a missing pid: %v", err)
	}
}
