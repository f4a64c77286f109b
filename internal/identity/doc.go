// Package identity names an MPI process by host, job and rank, reading only
// facts: the environment the process was started with
// (/proc/PID/environ) and, for MPICH hydra, its chain of parent processes.
// A field that cannot be read is Unknown ("?"); nothing is ever guessed.
//
// # Decision table
//
// FromEnv and Resolve look at these variables:
//
//	OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_MCA_ess_base_jobid  Open MPI mpirun
//	PMIX_NAMESPACE, PMIX_RANK                                            PMIx (Open MPI mpirun, srun --mpi=pmix)
//	PMI_RANK, PMI_SIZE, MPI_LOCALRANKID                                  PMI (hydra; PMI_RANK/PMI_SIZE also srun --mpi=pmi2)
//	SLURM_JOB_ID, SLURM_STEP_ID, SLURM_PROCID, SLURM_STEP_NUM_TASKS      Slurm
//
// The first matching row wins:
//
//	#  condition                                        Launcher  Job                         Rank                  Size
//	1  OMPI_COMM_WORLD_RANK or                          openmpi   A(PMIX_NAMESPACE, else      OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE
//	   OMPI_MCA_ess_base_jobid set                                OMPI_MCA_ess_base_jobid)    else PMIX_RANK
//	2  PMIX_NAMESPACE starts with "slurm.pmix."         slurm     "<job>.<step>" from         PMIX_RANK             SLURM_STEP_NUM_TASKS
//	                                                              slurm.pmix.<job>.<step>
//	3  parent chain has hydra_pmi_proxy, or PMI_RANK    hydra     A("hydra-<mpiexec pid>")    PMI_RANK              PMI_SIZE
//	   set and any of: MPI_LOCALRANKID set,
//	   SLURM_STEP_ID unset, SLURM_PROCID != PMI_RANK
//	4  PMI_RANK set (so: in a Slurm step, SLURM_PROCID  slurm     "<SLURM_JOB_ID>.<SLURM_STEP_ID>"  PMI_RANK        PMI_SIZE
//	   == PMI_RANK, no hydra sign): srun --mpi=pmi2
//	5  PMIX_RANK set, SLURM_STEP_ID set and             slurm     "<SLURM_JOB_ID>.<SLURM_STEP_ID>"  PMIX_RANK       SLURM_STEP_NUM_TASKS
//	   SLURM_PROCID == PMIX_RANK
//	6  PMIX_RANK set (another PMIx launcher, e.g. PRRTE) ""       A(PMIX_NAMESPACE)           PMIX_RANK             ?
//	7  SLURM_STEP_ID and SLURM_PROCID set, no MPI       slurm     "<SLURM_JOB_ID>.<SLURM_STEP_ID>"  SLURM_PROCID    SLURM_STEP_NUM_TASKS
//	   variable: srun --mpi=none, where an MPI built
//	   on Slurm's libpmi takes SLURM_PROCID as rank
//	8  anything else (no launcher, Open MPI singleton)  ""        ?                           ?                     ?
//
// A(x) is the launcher's own job x inside a Slurm allocation: when
// SLURM_JOB_ID is set (salloc or sbatch, then mpirun or mpiexec), the job
// is "<SLURM_JOB_ID>/<x>", where x may be "?" (hydra on a node without
// mpiexec); otherwise it is x.
//
// Why this order:
//   - Open MPI's mpirun runs its remote daemons with srun, so ranks it
//     starts inside an allocation inherit SLURM_STEP_ID and SLURM_PROCID of
//     the daemons' step: SLURM_PROCID there is the daemon's index, not the
//     rank. OMPI_COMM_WORLD_RANK is set by mpirun only (srun never sets it),
//     so row 1 comes first and ignores SLURM_PROCID and SLURM_STEP_ID.
//   - srun --mpi=pmix names its PMIx namespace slurm.pmix.<job>.<step> and
//     does not set OMPI_COMM_WORLD_RANK, which tells it from Open MPI's
//     mpirun (whose namespace is its own) in row 2.
//   - Both hydra and srun --mpi=pmi2 set PMI_RANK. srun also sets
//     SLURM_STEP_ID and SLURM_PROCID equal to PMI_RANK for each task, and
//     never MPI_LOCALRANKID, which hydra's proxy sets. A hydra rank inside
//     an allocation may carry SLURM_STEP_ID and SLURM_PROCID of the step
//     that runs its proxies (SLURM_PROCID is then the proxy's index), hence
//     row 3 takes any hydra sign, and a missing or different SLURM_PROCID,
//     as hydra; the parent chain is the surest sign.
//   - Hydra sets no job variable. Resolve walks up from the process (at
//     most 32 steps, stopping at pid 1 or at the first unreadable stat) to
//     a "hydra_pmi_proxy" (the kernel keeps 15 bytes of the command name;
//     that name is exactly 15), skips Intel MPI's "hydra_bstrap_pr"oxy, and
//     takes the proxy's parent as mpiexec if its command name starts with
//     "mpiexec" or "mpirun" (mpiexec, mpiexec.hydra, mpiexec.mpich,
//     mpirun...). On nodes where proxies were started over ssh or srun
//     there is no mpiexec to find and the job is "?".
//
// Values are checked, never repaired: a rank must be a decimal number in
// [0, 2^31), a size in [1, 2^31), Slurm ids decimal numbers, and a job name
// at most 255 bytes of valid UTF-8 without control characters; anything
// else is "?". Leading zeros are dropped from numbers. When a row names
// two variables for a field (e.g. OMPI_COMM_WORLD_RANK, else PMIX_RANK),
// the first one present decides, even when its value is garbage.
package identity
