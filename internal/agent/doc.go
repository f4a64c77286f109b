// Package agent is mpiprobe's node-wide agent: one process per node that
// watches every MPI job on it, without being told which.
//
// # Finding MPI processes
//
// At start the agent attaches the probe catalog and the startup probes
// (probes.StartupAttacher) to every MPI library file ldconfig and the
// configured library paths know, and to those mapped by the processes
// running now. A file is attached once, by (device, inode). The BPF side
// runs with watch_all set: a process entering MPI_Init is added to the
// traced set there and then (so the pid filter in BPF holds from its first
// event), and every exec is notified so that the agent reads the new
// process's memory map shortly after: a library file never seen before (a
// new install, a container's own copy, opened through /proc/PID/map_files)
// is attached then. Every Rescan the memory maps of all processes are read
// again, for libraries opened with dlopen.
//
// # Jobs
//
// Processes are grouped into jobs by their identity (package identity:
// Open MPI, MPICH hydra, Slurm); a process without one is a job of its own.
// Warnings go through the C/T rule to a journal.Sink with HOST, JOB, RANK,
// PID, EVENT and COUNT fields. When a job's last local rank ends (its exit
// code or signal is taken from the kernel's exit record), its summary, with
// MPI_Init, modex and MPI_Finalize times per rank, is written to
// <state dir>/jobs/<job>.json (package jobstore) and to the journal, what
// was never reported is summed up, and the job's kernel entries are freed
// once the summary is stored: a summary that cannot be written (a full
// state directory) is tried again every RunningEvery, the job kept meanwhile,
// also across a restart. A rank that called MPI_Abort has it named, with
// its error code, in its end. Running jobs' summaries are rewritten every
// RunningEvery. With a SharedDir, each write of a job's summary (but for
// processes without a job id) also writes the node's part of the job there
// (report.Part, jobstore.Shared), final once the job ended on the node,
// with the job's node list read from its first rank's environment
// (SLURM_STEP_NODELIST, else SLURM_JOB_NODELIST; package hostlist); a part
// that cannot be written is logged once per job and tried again at the
// next write.
//
// # Restarts
//
// Maps, tracepoint links and uprobe links are pinned under
// <pin dir>/<bpf.BuildID()>. A stopped agent leaves them in place while MPI
// processes run, so the probes keep counting, exits keep being recorded,
// and processes entering MPI_Init keep being traced; the next agent of the
// same build reuses them, and reads agent-state.json for the jobs and the
// C/T state. A rank that started and ended while no agent ran is named from
// what the BPF side recorded when it entered MPI_Init (its environment's
// tail, parent chain and start time, the pinned idents map), as a live one
// is from /proc (but a hydra job by its mpiexec's pid, and on the agent's
// host: no record keeps a proxy's command line or a UTS namespace). With
// no MPI process running, a stop removes the pins. A
// second agent on the same state directory refuses to start (an flock on
// agent.lock, released by the kernel when an agent dies).
package agent
