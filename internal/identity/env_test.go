package identity

import (
	"strings"
	"testing"
)

// env builds an environment from "KEY=VALUE" strings.
func env(kv ...string) map[string]string {
	m := make(map[string]string, len(kv))
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		m[k] = v
	}
	return m
}

// want builds the expected Identity of FromEnv (Host Unknown).
func want(launcher, job, rank, size string) Identity {
	return Identity{Host: Unknown, Job: job, Rank: rank, Size: size, Launcher: launcher}
}

func TestFromEnv(t *testing.T) {
	const q = Unknown
	tests := []struct {
		name string
		env  map[string]string
		want Identity
	}{
		// Row 8: nothing to go on.
		{"nil env", nil, want("", q, q, q)},
		{"empty env", env(), want("", q, q, q)},
		{"open mpi singleton", env("PATH=/usr/bin", "OMPI_MCA_btl=self,vader", "OMPI_MCA_pml=ob1", "HOME=/home/alice"), want("", q, q, q)},
		{"salloc shell, no launcher", env("SLURM_JOB_ID=12345", "SLURM_NTASKS=8"), want("", q, q, q)},

		// Row 1: Open MPI mpirun.
		{"open mpi 4 mpirun", env("OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=8", "OMPI_COMM_WORLD_LOCAL_RANK=3",
			"PMIX_NAMESPACE=2883059713", "PMIX_RANK=3", "OMPI_MCA_ess_base_jobid=2883059713", "OMPI_MCA_ess_base_vpid=3"),
			want("openmpi", "2883059713", "3", "8")},
		{"open mpi 5 mpirun", env("OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2", "PMIX_NAMESPACE=prterun-node1-51234@1", "PMIX_RANK=0"),
			want("openmpi", "prterun-node1-51234@1", "0", "2")},
		{"open mpi, job only from ess jobid", env("OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_MCA_ess_base_jobid=12345@0"),
			want("openmpi", "12345@0", "1", "2")},
		{"open mpi, rank from PMIX_RANK", env("OMPI_MCA_ess_base_jobid=99", "PMIX_RANK=4"), want("openmpi", "99", "4", q)},
		{"salloc + mpirun, local node", env("SLURM_JOB_ID=12345", "SLURM_NTASKS=8", "OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=8", "PMIX_NAMESPACE=prterun-node1-51234@1", "PMIX_RANK=2"),
			want("openmpi", "12345/prterun-node1-51234@1", "2", "8")},
		{"salloc + mpirun, remote node: SLURM_PROCID of the daemons' step ignored",
			env("SLURM_JOB_ID=12345", "SLURM_STEP_ID=0", "SLURM_PROCID=1", "PMI_RANK=1", "PMIX_RANK=6", "OMPI_COMM_WORLD_RANK=6", "OMPI_COMM_WORLD_SIZE=8", "PMIX_NAMESPACE=2883059713"),
			want("openmpi", "12345/2883059713", "6", "8")},
		{"srun launching mpirun", env("SLURM_JOB_ID=12345", "SLURM_STEP_ID=3", "SLURM_PROCID=0", "PMIX_NAMESPACE=slurm.pmix.12345.3", "OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=8"),
			want("openmpi", "12345/slurm.pmix.12345.3", "5", "8")},

		// Row 2: srun --mpi=pmix.
		{"srun pmix", env("SLURM_JOB_ID=12345", "SLURM_STEP_ID=2", "SLURM_PROCID=3", "SLURM_STEP_NUM_TASKS=8", "PMIX_NAMESPACE=slurm.pmix.12345.2", "PMIX_RANK=3"),
			want("slurm", "12345.2", "3", "8")},
		{"srun pmix, namespace only", env("PMIX_NAMESPACE=slurm.pmix.77.0", "PMIX_RANK=0"), want("slurm", "77.0", "0", q)},
		{"srun pmix, malformed namespace", env("PMIX_NAMESPACE=slurm.pmix.12345", "PMIX_RANK=3", "SLURM_JOB_ID=12345", "SLURM_STEP_ID=2", "SLURM_PROCID=3"),
			want("slurm", q, "3", q)},
		{"srun pmix, garbage step", env("PMIX_NAMESPACE=slurm.pmix.12345.x", "PMIX_RANK=3"), want("slurm", q, "3", q)},

		// Row 3: hydra.
		{"hydra, no slurm", env("PMI_RANK=2", "PMI_SIZE=4", "PMI_FD=6", "MPI_LOCALRANKID=2", "MPI_LOCALNRANKS=4"), want("hydra", q, "2", "4")},
		{"hydra in allocation (salloc + mpiexec)", env("SLURM_JOB_ID=12345", "PMI_RANK=2", "PMI_SIZE=4", "MPI_LOCALRANKID=2"), want("hydra", "12345/?", "2", "4")},
		{"hydra with slurm bootstrap: SLURM_PROCID is the proxy's",
			env("SLURM_JOB_ID=12345", "SLURM_STEP_ID=1", "SLURM_PROCID=1", "PMI_RANK=5", "PMI_SIZE=8", "MPI_LOCALRANKID=1"),
			want("hydra", "12345/?", "5", "8")},
		{"hydra with slurm bootstrap, rank equal to proxy index: MPI_LOCALRANKID decides",
			env("SLURM_JOB_ID=12345", "SLURM_STEP_ID=1", "SLURM_PROCID=0", "PMI_RANK=0", "PMI_SIZE=8", "MPI_LOCALRANKID=0"),
			want("hydra", "12345/?", "0", "8")},
		{"PMI_RANK in a step with a different SLURM_PROCID", env("SLURM_JOB_ID=12345", "SLURM_STEP_ID=1", "SLURM_PROCID=0", "PMI_RANK=3"), want("hydra", "12345/?", "3", q)},

		// Row 4: srun --mpi=pmi2.
		{"srun pmi2", env("SLURM_JOB_ID=12345", "SLURM_STEP_ID=0", "SLURM_PROCID=3", "SLURM_STEP_NUM_TASKS=8", "PMI_RANK=3", "PMI_SIZE=8", "PMI_FD=7", "PMI_JOBID=12345.0"),
			want("slurm", "12345.0", "3", "8")},
		{"srun pmi2, step without job id", env("SLURM_STEP_ID=0", "SLURM_PROCID=3", "PMI_RANK=3"), want("slurm", q, "3", q)},

		// Row 5: srun with PMIx under an unexpected namespace.
		{"srun, pmix, other namespace", env("SLURM_JOB_ID=12345", "SLURM_STEP_ID=4", "SLURM_PROCID=3", "SLURM_STEP_NUM_TASKS=8", "PMIX_NAMESPACE=other", "PMIX_RANK=3"),
			want("slurm", "12345.4", "3", "8")},

		// Row 6: another PMIx launcher.
		{"prterun", env("PMIX_NAMESPACE=prterun-node1-4242@1", "PMIX_RANK=1"), want("", "prterun-node1-4242@1", "1", q)},
		{"prterun in allocation", env("SLURM_JOB_ID=12345", "PMIX_NAMESPACE=prterun-node1-4242@1", "PMIX_RANK=1"), want("", "12345/prterun-node1-4242@1", "1", q)},

		// Row 7: srun --mpi=none.
		{"srun, no pmi", env("SLURM_JOB_ID=12345", "SLURM_STEP_ID=4", "SLURM_PROCID=7", "SLURM_STEP_NUM_TASKS=16"), want("slurm", "12345.4", "7", "16")},

		// Partial variables.
		{"open mpi rank without job", env("OMPI_COMM_WORLD_RANK=3"), want("openmpi", q, "3", q)},
		{"pmi rank without job", env("PMI_RANK=3"), want("hydra", q, "3", q)},
		{"pmix rank without job", env("PMIX_RANK=3"), want("", q, "3", q)},
		{"namespace without rank", env("PMIX_NAMESPACE=prterun-x@1"), want("", q, q, q)},
		{"size without rank", env("OMPI_COMM_WORLD_SIZE=8", "PMI_SIZE=8"), want("", q, q, q)},

		// Garbage: never repaired, never guessed.
		{"non-numeric rank", env("OMPI_COMM_WORLD_RANK=three", "OMPI_COMM_WORLD_SIZE=8", "PMIX_NAMESPACE=j"), want("openmpi", "j", q, "8")},
		{"garbage rank does not fall back to PMIX_RANK", env("OMPI_COMM_WORLD_RANK=x", "PMIX_RANK=3"), want("openmpi", q, q, q)},
		{"negative rank", env("PMI_RANK=-1", "PMI_SIZE=4", "MPI_LOCALRANKID=0"), want("hydra", q, q, "4")},
		{"signed rank", env("OMPI_COMM_WORLD_RANK=+3"), want("openmpi", q, q, q)},
		{"rank with spaces", env("OMPI_COMM_WORLD_RANK= 3"), want("openmpi", q, q, q)},
		{"empty rank", env("OMPI_COMM_WORLD_RANK="), want("openmpi", q, q, q)},
		{"huge rank", env("OMPI_COMM_WORLD_RANK=99999999999999999999999"), want("openmpi", q, q, q)},
		{"rank 2^31", env("OMPI_COMM_WORLD_RANK=2147483648"), want("openmpi", q, q, q)},
		{"hex rank", env("OMPI_COMM_WORLD_RANK=0x3"), want("openmpi", q, q, q)},
		{"leading zeros dropped", env("OMPI_COMM_WORLD_RANK=007", "OMPI_COMM_WORLD_SIZE=0010"), want("openmpi", q, "7", "10")},
		{"size zero", env("OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=0"), want("openmpi", q, "0", q)},
		{"control character in namespace", env("OMPI_COMM_WORLD_RANK=0", "PMIX_NAMESPACE=job\n1"), want("openmpi", q, "0", q)},
		{"escape sequence in namespace", env("OMPI_COMM_WORLD_RANK=0", "PMIX_NAMESPACE=\x1b[31mred"), want("openmpi", q, "0", q)},
		{"invalid utf-8 in namespace", env("OMPI_COMM_WORLD_RANK=0", "PMIX_NAMESPACE=\xff\xfe"), want("openmpi", q, "0", q)},
		{"overlong namespace", env("OMPI_COMM_WORLD_RANK=0", "PMIX_NAMESPACE="+strings.Repeat("j", 256)), want("openmpi", q, "0", q)},
		{"empty namespace", env("OMPI_COMM_WORLD_RANK=0", "PMIX_NAMESPACE=", "OMPI_MCA_ess_base_jobid=5"), want("openmpi", q, "0", q)},
		{"namespace with a space is kept", env("OMPI_COMM_WORLD_RANK=0", "PMIX_NAMESPACE=my job"), want("openmpi", "my job", "0", q)},
		{"garbage SLURM_JOB_ID ignored as allocation", env("SLURM_JOB_ID=12a", "OMPI_COMM_WORLD_RANK=0", "PMIX_NAMESPACE=j"), want("openmpi", "j", "0", q)},
		{"garbage SLURM_JOB_ID in a step", env("SLURM_JOB_ID=abc", "SLURM_STEP_ID=0", "SLURM_PROCID=3", "PMI_RANK=3"), want("slurm", q, "3", q)},
		{"garbage PMI_RANK in a step is not srun's", env("SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_PROCID=3", "PMI_RANK=x"), want("hydra", "1/?", q, q)},
		{"garbage SLURM_PROCID", env("SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_PROCID=-3"), want("slurm", "1.0", q, q)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FromEnv(tt.env); got != tt.want {
				t.Fatalf("FromEnv:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
