package identity

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Environment variables read by FromEnv; see the package documentation.
const (
	envOMPIRank       = "OMPI_COMM_WORLD_RANK"
	envOMPISize       = "OMPI_COMM_WORLD_SIZE"
	envOMPIJob        = "OMPI_MCA_ess_base_jobid"
	envPMIxNamespace  = "PMIX_NAMESPACE"
	envPMIxRank       = "PMIX_RANK"
	envPMIRank        = "PMI_RANK"
	envPMISize        = "PMI_SIZE"
	envHydraLocalRank = "MPI_LOCALRANKID"
	envSlurmJob       = "SLURM_JOB_ID"
	envSlurmStep      = "SLURM_STEP_ID"
	envSlurmProcID    = "SLURM_PROCID"
	envSlurmStepTasks = "SLURM_STEP_NUM_TASKS"
	envSlurmCluster   = "SLURM_CLUSTER_NAME"
	envSlurmArrayJob  = "SLURM_ARRAY_JOB_ID"
	envSlurmArrayTask = "SLURM_ARRAY_TASK_ID"
	envOMPIHNPURI     = "OMPI_MCA_orte_hnp_uri"
)

// slurmPMIxPrefix starts the PMIx namespace of srun --mpi=pmix:
// slurm.pmix.<job>.<step>.
const slurmPMIxPrefix = "slurm.pmix."

// maxJobLen bounds a job name taken from the environment (PMIx allows 255).
const maxJobLen = 255

// hydraChain is what the parent chain says about MPICH hydra.
type hydraChain struct {
	// proxy is set when an ancestor is hydra_pmi_proxy.
	proxy bool
	// mpiexec is the pid of the mpiexec above the proxy, 0 if not found.
	mpiexec int
	// control is the proxy's --control-port HOST:PORT, the address of the
	// mpiexec it serves, "" when not read.
	control string
}

// FromEnv names a process from the environment it was started with,
// following the decision table in the package documentation without the
// parent chain (so a hydra job is Unknown). Host is Unknown: the
// environment does not say which node the process runs on. Every field not
// present, or present with a malformed value, is Unknown.
func FromEnv(env map[string]string) Identity {
	id, _ := classify(env, hydraChain{})
	return id
}

// classify applies the decision table to env and what the parent chain
// found. It also returns the other names --job accepts for the job (see
// ResolveKeys).
func classify(env map[string]string, h hydraChain) (Identity, []string) {
	id := Identity{Host: Unknown, Job: Unknown, Rank: Unknown, Size: Unknown}
	has := func(k string) bool { _, ok := env[k]; return ok }
	var alias []string // the job's names besides id.Job

	switch {
	case has(envOMPIRank) || has(envOMPIJob): // 1: Open MPI mpirun
		id.Launcher = LauncherOpenMPI
		job := jobName(env, envPMIxNamespace, envOMPIJob)
		id.Job = inAllocation(env, atLauncher(job, hnpAddress(env[envOMPIHNPURI])))
		alias = append(allocationNames(env), inAllocation(env, job), legacyAllocation(env, job))
		id.Rank = number(env, 0, envOMPIRank, envPMIxRank)
		id.Size = number(env, 1, envOMPISize)

	case strings.HasPrefix(env[envPMIxNamespace], slurmPMIxPrefix): // 2: srun --mpi=pmix
		id.Launcher = LauncherSlurm
		job, step := slurmPMIxIDs(env[envPMIxNamespace])
		id.Job, alias = slurmStep(env, job, step)
		id.Rank = number(env, 0, envPMIxRank)
		id.Size = number(env, 1, envSlurmStepTasks)

	case h.proxy || has(envPMIRank) && (has(envHydraLocalRank) || !has(envSlurmStep) || env[envSlurmProcID] != env[envPMIRank]): // 3: hydra
		id.Launcher = LauncherHydra
		id.Job = inAllocation(env, Unknown)
		alias = allocationNames(env)
		if h.mpiexec > 0 {
			old := "hydra-" + strconv.Itoa(h.mpiexec)
			id.Job = inAllocation(env, old)
			alias = append(alias, legacyAllocation(env, old))
		}
		if h.control != "" {
			if id.Job != Unknown {
				alias = append(alias, id.Job)
			}
			id.Job = inAllocation(env, "hydra-"+h.control)
		}
		id.Rank = number(env, 0, envPMIRank)
		id.Size = number(env, 1, envPMISize)

	case has(envPMIRank): // 4: srun --mpi=pmi2
		id.Launcher = LauncherSlurm
		id.Job, alias = slurmStep(env, env[envSlurmJob], env[envSlurmStep])
		id.Rank = number(env, 0, envPMIRank)
		id.Size = number(env, 1, envPMISize)

	case has(envPMIxRank) && has(envSlurmStep) && env[envSlurmProcID] == env[envPMIxRank]: // 5: srun, PMIx
		id.Launcher = LauncherSlurm
		id.Job, alias = slurmStep(env, env[envSlurmJob], env[envSlurmStep])
		id.Rank = number(env, 0, envPMIxRank)
		id.Size = number(env, 1, envSlurmStepTasks)

	case has(envPMIxRank): // 6: another PMIx launcher
		job := jobName(env, envPMIxNamespace)
		id.Job = inAllocation(env, job)
		alias = append(allocationNames(env), legacyAllocation(env, job))
		id.Rank = number(env, 0, envPMIxRank)

	case has(envSlurmStep) && has(envSlurmProcID): // 7: srun --mpi=none
		id.Launcher = LauncherSlurm
		id.Job, alias = slurmStep(env, env[envSlurmJob], env[envSlurmStep])
		id.Rank = number(env, 0, envSlurmProcID)
		id.Size = number(env, 1, envSlurmStepTasks)
	}
	return id, names(id.Job, alias)
}

// names returns the aliases that are real names of a job: neither its key
// nor unknown, each once.
func names(key string, alias []string) []string {
	var out []string
	for _, a := range alias {
		if a != key && a != Unknown && !strings.HasSuffix(a, "/"+Unknown) && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// number returns the value of the first of keys present in env as a
// normalized decimal in [min, 2^31), or Unknown when none is present or
// the value is malformed.
func number(env map[string]string, min uint64, keys ...string) string {
	for _, k := range keys {
		if v, ok := env[k]; ok {
			return decimal(v, min, 1<<31-1)
		}
	}
	return Unknown
}

// decimal returns s, made only of ASCII digits, as a decimal number
// without leading zeros when it lies in [min, max], else Unknown.
func decimal(s string, min, max uint64) string {
	if s == "" || len(s) > 20 {
		return Unknown
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return Unknown
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v < min || v > max {
		return Unknown
	}
	return strconv.FormatUint(v, 10)
}

// slurmID returns a Slurm job or step id as a normalized decimal, or
// Unknown.
func slurmID(s string) string { return decimal(s, 0, 1<<32-1) }

// jobName returns the value of the first of keys present in env when it is
// a sane job name (see validJobName), else Unknown.
func jobName(env map[string]string, keys ...string) string {
	for _, k := range keys {
		if v, ok := env[k]; ok {
			if !validJobName(v) {
				return Unknown
			}
			return v
		}
	}
	return Unknown
}

// validJobName reports whether s is 1 to maxJobLen bytes of valid UTF-8
// without control characters.
func validJobName(s string) bool {
	if s == "" || len(s) > maxJobLen || !utf8.ValidString(s) {
		return false
	}
	return strings.IndexFunc(s, unicode.IsControl) < 0
}

// inAllocation prefixes a launcher's own job with the Slurm allocation it
// runs in, if any: "[<SLURM_CLUSTER_NAME>:]<SLURM_JOB_ID>/<job>". A
// malformed SLURM_JOB_ID is ignored.
func inAllocation(env map[string]string, job string) string {
	if alloc := slurmID(env[envSlurmJob]); alloc != Unknown {
		return clusterPrefix(env) + alloc + "/" + job
	}
	return job
}

// legacyAllocation is inAllocation without the cluster: the key before
// cluster names were added.
func legacyAllocation(env map[string]string, job string) string {
	if alloc := slurmID(env[envSlurmJob]); alloc != Unknown {
		return alloc + "/" + job
	}
	return job
}

// allocationNames returns the names squeue gives the Slurm job a process
// runs in: "<SLURM_JOB_ID>" and, with a cluster, "<cluster>:<SLURM_JOB_ID>";
// for a task of a job array also "<SLURM_ARRAY_JOB_ID>_<SLURM_ARRAY_TASK_ID>"
// (with the cluster too). None outside Slurm.
func allocationNames(env map[string]string) []string {
	alloc := slurmID(env[envSlurmJob])
	if alloc == Unknown {
		return nil
	}
	c := clusterPrefix(env)
	names := []string{alloc, c + alloc}
	// A task of a job array: squeue shows it as <array job>_<task>.
	if a, t := slurmID(env[envSlurmArrayJob]), slurmID(env[envSlurmArrayTask]); a != Unknown && t != Unknown {
		names = append(names, a+"_"+t, c+a+"_"+t)
	}
	return names
}

// clusterPrefix returns "<SLURM_CLUSTER_NAME>:" when the cluster name is
// well-formed (see validCluster), else "".
func clusterPrefix(env map[string]string) string {
	if c := env[envSlurmCluster]; validCluster(c) {
		return c + ":"
	}
	return ""
}

// validCluster reports whether s is a Slurm cluster name mpiprobe puts in
// a key: 1 to 64 ASCII letters, digits, '-' or '_' (Slurm's own are lower
// case letters, digits and '_').
func validCluster(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// slurmStep returns the key of a Slurm step, "[<cluster>:]<job>.<step>"
// (Unknown unless job and step are well-formed), and its other names:
// "<job>.<step>" without the cluster, and the job's (allocationNames),
// which match every step of it.
func slurmStep(env map[string]string, job, step string) (string, []string) {
	j, s := slurmID(job), slurmID(step)
	if j == Unknown || s == Unknown {
		return Unknown, nil
	}
	c := clusterPrefix(env)
	alias := []string{j + "." + s}
	if j == slurmID(env[envSlurmJob]) {
		alias = append(alias, allocationNames(env)...)
	} else {
		alias = append(alias, j, c+j)
	}
	return c + j + "." + s, alias
}

// slurmPMIxIDs returns job and step from a namespace
// slurm.pmix.<job>.<step>, "" when it is not of that form.
func slurmPMIxIDs(ns string) (job, step string) {
	rest, ok := strings.CutPrefix(ns, slurmPMIxPrefix)
	if !ok {
		return "", ""
	}
	job, step, _ = strings.Cut(rest, ".")
	return job, step
}

// atLauncher qualifies an Open MPI job id with the address of the mpirun
// that runs it: "<job>@<addr>:<port>", so that the same job has the same
// key on every node and jobs of two login hosts do not meet. An unknown
// job, or no address, leave job as it is.
func atLauncher(job, addr string) string {
	if job == Unknown || addr == "" || !validJobName(job+"@"+addr) {
		return job
	}
	return job + "@" + addr
}

// hnpAddress returns "<first address>:<port>" of the first TCP contact
// in Open MPI 4.x's OMPI_MCA_orte_hnp_uri, the mpirun's (HNP's) out-of-band
// contact, identical on every node of the job, e.g.
// "46268416.0;tcp://192.0.2.2:46979;tcp6://[fd00::2]:36275" gives
// "192.0.2.2:46979", and "…;tcp://10.77.0.1,172.17.0.2:41237" gives
// "10.77.0.1:41237". "" when it holds no well-formed TCP contact.
func hnpAddress(uri string) string {
	parts := strings.Split(uri, ";")
	for _, p := range parts[1:] {
		rest, ok := strings.CutPrefix(p, "tcp://")
		if !ok {
			rest, ok = strings.CutPrefix(p, "tcp6://")
		}
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, ':')
		if i <= 0 {
			return ""
		}
		addrs, port := rest[:i], rest[i+1:]
		addr, _, _ := strings.Cut(addrs, ",")
		if addr == "" || decimal(port, 1, 65535) != port || strings.ContainsAny(addr, " /@") {
			return ""
		}
		return addr + ":" + port
	}
	return ""
}

// controlPort returns the HOST:PORT of a hydra proxy's command line
// (--control-port HOST:PORT, or --control-port=HOST:PORT): where its
// mpiexec listens, the same for every proxy of the job. "" when absent or
// malformed.
func controlPort(args []string) string {
	v := ""
	for i, a := range args {
		if a == "--control-port" && i+1 < len(args) {
			v = args[i+1]
			break
		}
		if rest, ok := strings.CutPrefix(a, "--control-port="); ok {
			v = rest
			break
		}
	}
	i := strings.LastIndexByte(v, ':')
	if i <= 0 {
		return ""
	}
	host, port := v[:i], v[i+1:]
	if decimal(port, 1, 65535) != port || strings.ContainsAny(host, " /@") || !validJobName(v) {
		return ""
	}
	return v
}
