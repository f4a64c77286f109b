package identity

import (
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
}

// FromEnv names a process from the environment it was started with,
// following the decision table in the package documentation without the
// parent chain (so a hydra job is Unknown). Host is Unknown: the
// environment does not say which node the process runs on. Every field not
// present, or present with a malformed value, is Unknown.
func FromEnv(env map[string]string) Identity {
	return classify(env, hydraChain{})
}

// classify applies the decision table to env and what the parent chain
// found.
func classify(env map[string]string, h hydraChain) Identity {
	id := Identity{Host: Unknown, Job: Unknown, Rank: Unknown, Size: Unknown}
	has := func(k string) bool { _, ok := env[k]; return ok }

	switch {
	case has(envOMPIRank) || has(envOMPIJob): // 1: Open MPI mpirun
		id.Launcher = LauncherOpenMPI
		id.Job = inAllocation(env, jobName(env, envPMIxNamespace, envOMPIJob))
		id.Rank = number(env, 0, envOMPIRank, envPMIxRank)
		id.Size = number(env, 1, envOMPISize)

	case strings.HasPrefix(env[envPMIxNamespace], slurmPMIxPrefix): // 2: srun --mpi=pmix
		id.Launcher = LauncherSlurm
		id.Job = slurmPMIxJob(env[envPMIxNamespace])
		id.Rank = number(env, 0, envPMIxRank)
		id.Size = number(env, 1, envSlurmStepTasks)

	case h.proxy || has(envPMIRank) && (has(envHydraLocalRank) || !has(envSlurmStep) || env[envSlurmProcID] != env[envPMIRank]): // 3: hydra
		id.Launcher = LauncherHydra
		job := Unknown
		if h.mpiexec > 0 {
			job = "hydra-" + strconv.Itoa(h.mpiexec)
		}
		id.Job = inAllocation(env, job)
		id.Rank = number(env, 0, envPMIRank)
		id.Size = number(env, 1, envPMISize)

	case has(envPMIRank): // 4: srun --mpi=pmi2
		id.Launcher = LauncherSlurm
		id.Job = slurmStepJob(env)
		id.Rank = number(env, 0, envPMIRank)
		id.Size = number(env, 1, envPMISize)

	case has(envPMIxRank) && has(envSlurmStep) && env[envSlurmProcID] == env[envPMIxRank]: // 5: srun, PMIx
		id.Launcher = LauncherSlurm
		id.Job = slurmStepJob(env)
		id.Rank = number(env, 0, envPMIxRank)
		id.Size = number(env, 1, envSlurmStepTasks)

	case has(envPMIxRank): // 6: another PMIx launcher
		id.Job = inAllocation(env, jobName(env, envPMIxNamespace))
		id.Rank = number(env, 0, envPMIxRank)

	case has(envSlurmStep) && has(envSlurmProcID): // 7: srun --mpi=none
		id.Launcher = LauncherSlurm
		id.Job = slurmStepJob(env)
		id.Rank = number(env, 0, envSlurmProcID)
		id.Size = number(env, 1, envSlurmStepTasks)
	}
	return id
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
// runs in, if any: "<SLURM_JOB_ID>/<job>". A malformed SLURM_JOB_ID is
// ignored.
func inAllocation(env map[string]string, job string) string {
	if alloc := slurmID(env[envSlurmJob]); alloc != Unknown {
		return alloc + "/" + job
	}
	return job
}

// slurmStepJob returns "<SLURM_JOB_ID>.<SLURM_STEP_ID>", or Unknown unless
// both are well-formed.
func slurmStepJob(env map[string]string) string {
	return slurmJobStep(env[envSlurmJob], env[envSlurmStep])
}

// slurmPMIxJob returns "<job>.<step>" from a namespace
// slurm.pmix.<job>.<step>, or Unknown if it is not of that form.
func slurmPMIxJob(ns string) string {
	rest, ok := strings.CutPrefix(ns, slurmPMIxPrefix)
	if !ok {
		return Unknown
	}
	job, step, ok := strings.Cut(rest, ".")
	if !ok {
		return Unknown
	}
	return slurmJobStep(job, step)
}

// slurmJobStep returns "<job>.<step>" when both are well-formed Slurm ids,
// else Unknown.
func slurmJobStep(job, step string) string {
	j, s := slurmID(job), slurmID(step)
	if j == Unknown || s == Unknown {
		return Unknown
	}
	return j + "." + s
}
