// Package identity names an MPI process by host, job and rank, reading only
// facts: the environment the process was started with
// (/proc/PID/environ), for MPICH hydra its chain of parent processes and
// its proxy's command line, and the host name of its UTS namespace (its
// node's, Reader.Hostname; mpiprobe's own only when that cannot be read).
// A field that cannot be read is Unknown ("?"); nothing is ever guessed.
//
// A job has one key on every node it runs on, so that the lines and
// summaries of its nodes can be put together: the key names the launcher
// (its address, or its Slurm cluster), not anything of the node.
//
// # Decision table
//
// FromEnv and Resolve look at these variables:
//
//	OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_MCA_ess_base_jobid  Open MPI mpirun
//	PMIX_NAMESPACE, PMIX_RANK                                            PMIx (Open MPI mpirun, srun --mpi=pmix)
//	PMI_RANK, PMI_SIZE, MPI_LOCALRANKID                                  PMI (hydra; PMI_RANK/PMI_SIZE also srun --mpi=pmi2)
//	OMPI_MCA_orte_hnp_uri                                                Open MPI 4.x mpirun's contact
//	SLURM_JOB_ID, SLURM_STEP_ID, SLURM_PROCID, SLURM_STEP_NUM_TASKS      Slurm
//	SLURM_CLUSTER_NAME                                                   Slurm (multi-cluster)
//	SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID                              Slurm job arrays (--job only)
//
// The first matching row wins:
//
//	#  condition                                        Launcher  Job                         Rank                  Size
//	1  OMPI_COMM_WORLD_RANK or                          openmpi   A(H(PMIX_NAMESPACE, else    OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE
//	   OMPI_MCA_ess_base_jobid set                                OMPI_MCA_ess_base_jobid))   else PMIX_RANK
//	2  PMIX_NAMESPACE starts with "slurm.pmix."         slurm     S(<job>, <step>) from       PMIX_RANK             SLURM_STEP_NUM_TASKS
//	                                                              slurm.pmix.<job>.<step>
//	3  parent chain has hydra_pmi_proxy, or PMI_RANK    hydra     A("hydra-<control>"), else  PMI_RANK              PMI_SIZE
//	   set and any of: MPI_LOCALRANKID set,                       A("hydra-<mpiexec pid>")
//	   SLURM_STEP_ID unset, SLURM_PROCID != PMI_RANK
//	4  PMI_RANK set (so: in a Slurm step, SLURM_PROCID  slurm     S(SLURM_JOB_ID,             PMI_RANK              PMI_SIZE
//	   == PMI_RANK, no hydra sign): srun --mpi=pmi2                 SLURM_STEP_ID)
//	5  PMIX_RANK set, SLURM_STEP_ID set and             slurm     S(SLURM_JOB_ID,             PMIX_RANK             SLURM_STEP_NUM_TASKS
//	   SLURM_PROCID == PMIX_RANK                                    SLURM_STEP_ID)
//	6  PMIX_RANK set (another PMIx launcher, e.g. PRRTE) ""       A(PMIX_NAMESPACE)           PMIX_RANK             ?
//	7  SLURM_STEP_ID and SLURM_PROCID set, no MPI       slurm     S(SLURM_JOB_ID,             SLURM_PROCID          SLURM_STEP_NUM_TASKS
//	   variable: srun --mpi=none, where an MPI built                SLURM_STEP_ID)
//	   on Slurm's libpmi takes SLURM_PROCID as rank
//	8  anything else (no launcher, Open MPI singleton)  ""        ?                           ?                     ?
//
// C is "<SLURM_CLUSTER_NAME>:" when that is set to 1 to 64 ASCII letters,
// digits, '-' or '_', else "" (a malformed name is ignored).
//
// S(job, step) is a Slurm step: "C<job>.<step>", e.g. "hpc:12345.2", or
// "12345.2" without a cluster name; "?" unless both are decimal ids.
//
// A(x) is the launcher's own job x inside a Slurm allocation: when
// SLURM_JOB_ID is set (salloc or sbatch, then mpirun or mpiexec), the job
// is "C<SLURM_JOB_ID>/<x>"; otherwise it is x.
//
// H(j) is an Open MPI 4.x job qualified by its mpirun's contact, the first
// TCP address and its port in OMPI_MCA_orte_hnp_uri, which every daemon
// hands on to its ranks: "<j>@<addr>:<port>", e.g. hnp_uri
// "46268416.0;tcp://192.0.2.2:46979;tcp6://[fd00::2]:36275" (Open MPI
// 4.1.4) gives "46268417@192.0.2.2:46979", and
// "3123642368.0;tcp://10.77.0.1,172.17.0.2:41237" gives
// "…@10.77.0.1:41237". The bare job id is a hash of the mpirun's host and
// pid, so two login hosts may give the same one. H(j) is j when j is "?"
// or hnp_uri has no well-formed TCP contact; Open MPI 5.0 sets no hnp_uri,
// and its namespace names the launcher already ("prterun-<host>-<pid>@1").
// The PMIX_SERVER_URI* variables name each node's own daemon: not used.
//
// <control> is the --control-port HOST:PORT on the command line of the
// rank's hydra_pmi_proxy (e.g. "vm:39587", MPICH 4.0.2 and 4.2.1): the
// mpiexec's host and port, the same for every proxy of the job, also on
// nodes where no mpiexec runs. When the proxy's command line does not
// name it (not readable, or not given), the job is named by the pid of
// the mpiexec above the proxy as before, and is "?" where there is none.
//
// # Names --job accepts
//
// Matches takes a job's key, and (ResolveKeys) the names mpiprobe gave it
// before keys named launchers, where users may have typed them: an Open
// MPI 4 job's bare id ("46268417", "<SLURM_JOB_ID>/46268417"); a hydra
// job's "hydra-<mpiexec pid>" on the node of its mpiexec; a Slurm step's
// "<job>.<step>" without the cluster. And in a Slurm job, the job id
// squeue shows, "<SLURM_JOB_ID>" or "<cluster>:<SLURM_JOB_ID>" (and for a
// task of a job array "<SLURM_ARRAY_JOB_ID>_<SLURM_ARRAY_TASK_ID>"), which
// matches every step of the job and every launcher's job in its
// allocation.
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
//     mpirun...), and reads the proxy's --control-port. On nodes where
//     proxies were started over ssh or srun there is no mpiexec to find:
//     the control port names the job there.
//
// Values are checked, never repaired: a rank must be a decimal number in
// [0, 2^31), a size in [1, 2^31), Slurm ids decimal numbers, and a job name
// at most 255 bytes of valid UTF-8 without control characters; anything
// else is "?". Leading zeros are dropped from numbers. When a row names
// two variables for a field (e.g. OMPI_COMM_WORLD_RANK, else PMIX_RANK),
// the first one present decides, even when its value is garbage.
package identity
