package identity

import (
	"slices"
	"strings"
	"testing"
)

// Launcher variables of real runs on this project's test machines (Debian
// 12 host, Debian 11 and 13 roots; docs in the package documentation).
const (
	// Open MPI 4.1.4, mpirun -np 2 on the host.
	hnpURI414 = "46268416.0;tcp://192.0.2.2:46979;tcp6://[fd00::2]:36275"
	// Open MPI 4.1.0 (Debian 11), mpirun -np 2.
	hnpURI410 = "492306432.0;tcp://192.0.2.2:35347"
	// Open MPI 4.1 on a node with two interfaces (issue 31's sample).
	hnpURITwo = "3123642368.0;tcp://10.77.0.1,172.17.0.2:41237"
	// Open MPI 5.0.7 (Debian 13): no hnp_uri; its namespace names the
	// launcher's host and pid already.
	pmixNS507 = "prterun-vm-28873@1"
)

// ompi41 is the environment of rank 1 of an Open MPI 4.1 mpirun job
// 46268417 whose mpirun's contact is uri.
func ompi41(uri string, extra ...string) map[string]string {
	return env(append([]string{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "PMIX_NAMESPACE=46268417", "PMIX_RANK=1",
		"OMPI_MCA_ess_base_jobid=46268417", "PMIX_SERVER_URI4=46268416.0;tcp4://127.0.0.1:44855", "OMPI_MCA_orte_hnp_uri=" + uri}, extra...)...)
}

// TestKeys covers the rows of the decision table whose key names the
// launcher (Open MPI 4's mpirun address, Slurm's cluster), and the other
// names --job accepts.
func TestKeys(t *testing.T) {
	const q = Unknown
	tests := []struct {
		name    string
		env     map[string]string
		job     string
		accepts []string // names Matches takes besides job
		refuses []string
	}{
		{"open mpi 4.1.4", ompi41(hnpURI414), "46268417@192.0.2.2:46979", []string{"46268417"}, []string{"46268416", "192.0.2.2:46979", q}},
		{"open mpi 4.1.0", ompi41(hnpURI410), "46268417@192.0.2.2:35347", []string{"46268417"}, nil},
		{"open mpi 4.1, two addresses: the first", ompi41(hnpURITwo), "46268417@10.77.0.1:41237", []string{"46268417"}, []string{"46268417@172.17.0.2:41237"}},
		{"open mpi 4.1, ipv6 first", ompi41("1.0;tcp6://[fd00::2]:36275;tcp://192.0.2.2:1"), "46268417@[fd00::2]:36275", nil, nil},
		{"open mpi 4.1, usock before tcp", ompi41("1.0;usock;tcp://10.0.0.1:5"), "46268417@10.0.0.1:5", nil, nil},
		{"open mpi 4.1, no tcp contact", ompi41("46268416.0;usock"), "46268417", nil, nil},
		{"open mpi 4.1, port missing", ompi41("46268416.0;tcp://10.0.0.1"), "46268417", nil, nil},
		{"open mpi 4.1, port garbage", ompi41("46268416.0;tcp://10.0.0.1:99999"), "46268417", nil, nil},
		{"open mpi 4.1, empty uri", ompi41(""), "46268417", nil, nil},
		{"open mpi 4.1, address with a space", ompi41("1.0;tcp://a b:5"), "46268417", nil, nil},
		{"open mpi 4.1, control character", ompi41("1.0;tcp://a\x1b:5"), "46268417", nil, nil},
		{"open mpi 4.1 in an allocation", ompi41(hnpURI414, "SLURM_JOB_ID=777", "SLURM_CLUSTER_NAME=hpc"), "hpc:777/46268417@192.0.2.2:46979",
			[]string{"777", "hpc:777", "777/46268417", "hpc:777/46268417"}, []string{"778", "hpc:777.0"}},
		{"open mpi 5.0.7: the namespace as it is", env("OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2", "PMIX_NAMESPACE="+pmixNS507, "PMIX_RANK=0",
			"PMIX_SERVER_URI4=prterun-vm-28873@0.0;tcp4://192.0.2.2:43819"), pmixNS507, nil, nil},
		{"slurm, cluster", env("SLURM_JOB_ID=12345", "SLURM_STEP_ID=2", "SLURM_PROCID=3", "SLURM_CLUSTER_NAME=hpc", "PMIX_NAMESPACE=slurm.pmix.12345.2", "PMIX_RANK=3"),
			"hpc:12345.2", []string{"12345.2", "12345", "hpc:12345"}, []string{"hpc:12345.3", "12345.3", "1234", "other:12345"}},
		{"slurm pmi2, cluster", env("SLURM_JOB_ID=12345", "SLURM_STEP_ID=0", "SLURM_PROCID=3", "PMI_RANK=3", "SLURM_CLUSTER_NAME=c_2-x"), "c_2-x:12345.0", []string{"12345", "c_2-x:12345", "12345.0"}, nil},
		{"slurm pmix other namespace, cluster", env("SLURM_JOB_ID=9", "SLURM_STEP_ID=4", "SLURM_PROCID=3", "PMIX_RANK=3", "SLURM_CLUSTER_NAME=hpc"), "hpc:9.4", []string{"9", "hpc:9", "9.4"}, nil},
		{"slurm no pmi, cluster", env("SLURM_JOB_ID=9", "SLURM_STEP_ID=4", "SLURM_PROCID=7", "SLURM_CLUSTER_NAME=hpc"), "hpc:9.4", []string{"9", "hpc:9"}, nil},
		{"slurm array task", env("SLURM_JOB_ID=9", "SLURM_STEP_ID=4", "SLURM_PROCID=7", "SLURM_CLUSTER_NAME=hpc", "SLURM_ARRAY_JOB_ID=8", "SLURM_ARRAY_TASK_ID=3"),
			"hpc:9.4", []string{"9", "hpc:9", "8_3", "hpc:8_3"}, []string{"8", "8_4", "9_3"}},
		{"open mpi in an array task", ompi41(hnpURI414, "SLURM_JOB_ID=9", "SLURM_ARRAY_JOB_ID=8", "SLURM_ARRAY_TASK_ID=3"),
			"9/46268417@192.0.2.2:46979", []string{"9", "8_3", "9/46268417"}, []string{"8"}},
		{"slurm array, malformed task", env("SLURM_JOB_ID=9", "SLURM_STEP_ID=4", "SLURM_PROCID=7", "SLURM_ARRAY_JOB_ID=8", "SLURM_ARRAY_TASK_ID=x"),
			"9.4", []string{"9"}, []string{"8_x", "8_"}},
		{"slurm pmix namespace of another job than SLURM_JOB_ID", env("SLURM_JOB_ID=9", "SLURM_STEP_ID=4", "SLURM_PROCID=3", "PMIX_NAMESPACE=slurm.pmix.10.4", "PMIX_RANK=3"),
			"10.4", []string{"10"}, []string{"9"}},
		{"slurm, no cluster: as before", env("SLURM_JOB_ID=9", "SLURM_STEP_ID=4", "SLURM_PROCID=7"), "9.4", []string{"9"}, []string{":9"}},
		{"slurm, malformed cluster ignored", env("SLURM_JOB_ID=9", "SLURM_STEP_ID=4", "SLURM_PROCID=7", "SLURM_CLUSTER_NAME=a:b"), "9.4", []string{"9"}, []string{"a:b:9"}},
		{"slurm, empty cluster ignored", env("SLURM_JOB_ID=9", "SLURM_STEP_ID=4", "SLURM_PROCID=7", "SLURM_CLUSTER_NAME="), "9.4", []string{"9"}, nil},
		{"slurm, malformed step: nothing matches", env("SLURM_JOB_ID=9", "SLURM_STEP_ID=x", "SLURM_PROCID=7", "SLURM_CLUSTER_NAME=hpc"), q, nil, []string{"9", "hpc:9", q}},
		{"prterun in an allocation, cluster", env("SLURM_JOB_ID=5", "SLURM_CLUSTER_NAME=hpc", "PMIX_NAMESPACE=prterun-n-1@1", "PMIX_RANK=1"), "hpc:5/prterun-n-1@1",
			[]string{"5", "hpc:5", "5/prterun-n-1@1"}, nil},
		{"hydra in an allocation without the chain", env("SLURM_JOB_ID=5", "SLURM_CLUSTER_NAME=hpc", "PMI_RANK=1", "MPI_LOCALRANKID=1"), "hpc:5/?", []string{"5", "hpc:5"}, []string{"6", "5/?"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, keys := classify(tt.env, hydraChain{})
			if id.Job != tt.job {
				t.Fatalf("job = %q, want %q", id.Job, tt.job)
			}
			if id.Job != q && !Matches(id.Job, id, keys) {
				t.Errorf("Matches(%q) = false", id.Job)
			}
			for _, a := range tt.accepts {
				if !Matches(a, id, keys) {
					t.Errorf("Matches(%q) = false, want true (keys %q)", a, keys)
				}
			}
			for _, a := range tt.refuses {
				if Matches(a, id, keys) {
					t.Errorf("Matches(%q) = true, want false (keys %q)", a, keys)
				}
			}
			if slices.Contains(keys, id.Job) || slices.Contains(keys, q) {
				t.Errorf("keys %q repeat the job or hold %q", keys, q)
			}
		})
	}
}

// TestResolveHydraControlPort names a hydra job by its proxies'
// --control-port (hydra_pmi_proxy's command line of MPICH 4.0.2, 4.2.1),
// on the node with mpiexec and on one without.
func TestResolveHydraControlPort(t *testing.T) {
	proxy402 := []string{"/usr/bin/hydra_pmi_proxy", "--control-port", "vm:39587", "--rmk", "user", "--launcher", "ssh", "--demux", "poll",
		"--pgid", "0", "--retries", "10", "--usize", "-2", "--pmi-port", "0", "--gpus-per-proc", "-2", "--proxy-id", "0"}
	proxy421 := []string{"/usr/bin/hydra_pmi_proxy", "--control-port", "vm:45599", "--rmk", "user", "--launcher", "ssh", "--demux", "poll",
		"--pgid", "0", "--retries", "10", "--usize", "-2", "--pmi-port", "0", "--gpus-per-proc", "-2", "--gpu-subdevs-per-proc", "-2", "--proxy-id", "0"}
	remote := func(args []string, rankEnv map[string]string) map[int]fakeProcess {
		return map[int]fakeProcess{
			1:   {ppid: 0, comm: "systemd", env: env()},
			60:  {ppid: 1, comm: "sshd", env: env()},
			90:  {ppid: 60, comm: "hydra_pmi_proxy", env: env(), args: args},
			100: {ppid: 90, comm: "a.out", env: rankEnv, host: "node2"},
		}
	}
	withArgs := func(args []string, rankEnv map[string]string) map[int]fakeProcess {
		procs := hydraTree("mpiexec.hydra", rankEnv)
		p := procs[90]
		p.args = args
		procs[90] = p
		return procs
	}
	tests := []struct {
		name    string
		procs   map[int]fakeProcess
		job     string
		host    string
		accepts []string
	}{
		{"4.0.2, first node", withArgs(proxy402, hydraEnv), "hydra-vm:39587", "node1", []string{"hydra-80"}},
		{"4.2.1, first node", withArgs(proxy421, hydraEnv), "hydra-vm:45599", "node1", []string{"hydra-80"}},
		{"remote node: same key, no mpiexec", remote(proxy402, hydraEnv), "hydra-vm:39587", "node2", nil},
		{"--control-port=", remote([]string{"hydra_pmi_proxy", "--control-port=h:1"}, hydraEnv), "hydra-h:1", "node2", nil},
		{"in an allocation", withArgs(proxy402, env("SLURM_JOB_ID=5", "PMI_RANK=2", "PMI_SIZE=4", "MPI_LOCALRANKID=2")), "5/hydra-vm:39587", "node1", []string{"5", "5/hydra-80"}},
		{"no control port: the mpiexec pid", withArgs([]string{"hydra_pmi_proxy", "--proxy-id", "0"}, hydraEnv), "hydra-80", "node1", nil},
		{"control port without port", withArgs([]string{"hydra_pmi_proxy", "--control-port", "vm"}, hydraEnv), "hydra-80", "node1", nil},
		{"control port with a bad port", withArgs([]string{"hydra_pmi_proxy", "--control-port", "vm:0"}, hydraEnv), "hydra-80", "node1", nil},
		{"control port last, no value", remote([]string{"hydra_pmi_proxy", "--control-port"}, hydraEnv), Unknown, "node2", nil},
		{"control port with a space", remote([]string{"hydra_pmi_proxy", "--control-port", "a b:5"}, hydraEnv), Unknown, "node2", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			procs := tt.procs
			if p := procs[100]; p.host == "" {
				p.host = "node1"
				procs[100] = p
			}
			id, keys := ResolveKeys(100, &fakeProc{procs: procs}, "fallback")
			if id.Job != tt.job || id.Host != tt.host || id.Rank != "2" {
				t.Fatalf("ResolveKeys = %+v, want job %q on %q, rank 2", id, tt.job, tt.host)
			}
			for _, a := range tt.accepts {
				if !Matches(a, id, keys) {
					t.Errorf("Matches(%q) = false (keys %q)", a, keys)
				}
			}
		})
	}
}

// TestResolveHost takes the host from the process's UTS namespace, and
// the caller's host only when that cannot be read.
func TestResolveHost(t *testing.T) {
	procs := map[int]fakeProcess{
		10: {ppid: 1, comm: "a.out", env: env("OMPI_COMM_WORLD_RANK=0"), host: "nodeA"},
		11: {ppid: 1, comm: "a.out", env: env("OMPI_COMM_WORLD_RANK=0")},
	}
	r := &fakeProc{procs: procs}
	for _, tt := range []struct {
		pid            int
		fallback, want string
	}{{10, "mine", "nodeA"}, {10, "", "nodeA"}, {11, "mine", "mine"}, {11, "", Unknown}} {
		if got := Resolve(tt.pid, r, tt.fallback).Host; got != tt.want {
			t.Errorf("Resolve(%d, fallback %q).Host = %q, want %q", tt.pid, tt.fallback, got, tt.want)
		}
	}
}

// FuzzKeys checks, for any launcher values, that a job key is "?" or a
// sane name, that --job takes the key, and that its other names are
// neither the key nor unknown.
func FuzzKeys(f *testing.F) {
	f.Add(hnpURI414, "46268417", "", "", "vm:39587", false)
	f.Add(hnpURITwo, "", "hpc", "12", "", true)
	f.Add("1.0;tcp://[::1]:5", "j", "a:b", "x", "h:", true)
	f.Fuzz(func(t *testing.T, uri, ns, cluster, slurmJob, control string, hydra bool) {
		e := map[string]string{"OMPI_MCA_orte_hnp_uri": uri, "SLURM_CLUSTER_NAME": cluster, "SLURM_JOB_ID": slurmJob, "SLURM_STEP_ID": "1", "SLURM_PROCID": "0"}
		if hydra {
			e["PMI_RANK"], e["MPI_LOCALRANKID"] = "0", "0"
		} else {
			e["OMPI_COMM_WORLD_RANK"], e["PMIX_NAMESPACE"] = "0", ns
		}
		id, keys := classify(e, hydraChain{proxy: hydra, control: controlPort([]string{"--control-port", control})})
		if id.Job != Unknown && !strings.HasSuffix(id.Job, "/"+Unknown) && (!validJobName(id.Job) || !Matches(id.Job, id, keys)) {
			t.Fatalf("job %q: not a valid name, or --job does not take it (keys %q)", id.Job, keys)
		}
		if slices.Contains(keys, id.Job) || slices.Contains(keys, Unknown) {
			t.Fatalf("keys %q of job %q hold the job or %q", keys, id.Job, Unknown)
		}
	})
}
