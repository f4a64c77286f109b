package identity

import (
	"slices"
	"strings"
)

// maxWalk bounds the walk up the parent chain.
const maxWalk = 32

// Command names (as the kernel keeps them, at most 15 bytes) met on the
// way from a hydra rank up to mpiexec.
const (
	commHydraProxy     = "hydra_pmi_proxy" // exactly 15 bytes, never truncated
	commHydraBootstrap = "hydra_bstrap_pr" // Intel MPI's hydra_bstrap_proxy, truncated
)

// Resolve names process pid: FromEnv of its environment, plus the parent
// chain for MPICH hydra jobs (see the package documentation), on the host
// r.Hostname names, else on host. Whatever r cannot read is Unknown, as is
// Host when neither names one. pid is in r's pid namespace; so is the
// mpiexec pid in an old hydra job name.
func Resolve(pid int, r Reader, host string) Identity {
	id, _ := ResolveKeys(pid, r, host)
	return id
}

// ResolveKeys is Resolve, also returning the other names --job accepts
// for the process's job (Matches): the keys older mpiprobe releases gave
// it, and for a process of a Slurm job that job's id, with and without
// its cluster.
func ResolveKeys(pid int, r Reader, host string) (Identity, []string) {
	env, err := r.Environ(pid)
	if err != nil {
		env = nil
	}
	var chain hydraChain
	if needChain(env) {
		chain = walk(pid, r)
	}
	id, keys := classify(env, chain)
	id.Host = Unknown
	if h, err := r.Hostname(pid); err == nil && h != "" {
		host = h
	}
	if host != "" {
		id.Host = host
	}
	return id, keys
}

// Matches reports whether job, as given to --job, names the job of id,
// whose other names are keys (ResolveKeys).
func Matches(job string, id Identity, keys []string) bool {
	return job != Unknown && (job == id.Job || slices.Contains(keys, job))
}

// needChain reports whether the parent chain can change what classify
// decides for env: not for rows 1 and 2, which come before hydra.
func needChain(env map[string]string) bool {
	_, ompiRank := env[envOMPIRank]
	_, ompiJob := env[envOMPIJob]
	return !ompiRank && !ompiJob && !strings.HasPrefix(env[envPMIxNamespace], slurmPMIxPrefix)
}

// walk goes up from pid's parent, at most maxWalk steps and stopping
// after pid 1 (which may be mpiexec when r reads a container's /proc) or
// at the first error, looking for a hydra proxy and the mpiexec above it.
func walk(pid int, r Reader) hydraChain {
	var chain hydraChain
	st, err := r.Stat(pid)
	if err != nil {
		return chain
	}
	for cur, steps := pid, 0; cur != 1 && steps < maxWalk; steps++ {
		ppid := st.PPID
		if ppid <= 0 || ppid == cur {
			return chain
		}
		if st, err = r.Stat(ppid); err != nil {
			return chain
		}
		cur = ppid
		switch {
		case !chain.proxy:
			chain.proxy = st.Comm == commHydraProxy
			if chain.proxy {
				args, _ := r.Cmdline(cur)
				chain.control = controlPort(args)
			}
		case st.Comm == commHydraBootstrap:
			// Intel MPI: mpiexec.hydra -> hydra_bstrap_proxy -> hydra_pmi_proxy.
		default:
			if isMpiexec(st.Comm) {
				chain.mpiexec = cur
			}
			return chain
		}
	}
	return chain
}

// isMpiexec reports whether comm names a hydra mpiexec: mpiexec,
// mpiexec.hydra, mpiexec.mpich, mpirun, mpirun.mpich...
func isMpiexec(comm string) bool {
	return strings.HasPrefix(comm, "mpiexec") || strings.HasPrefix(comm, "mpirun")
}
