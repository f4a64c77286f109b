// Package bench measures what mpiprobe costs a running MPI job, as Go
// benchmarks that run real Open MPI jobs (as root; `make bench`):
//
//   - BenchmarkDefaultOverhead: the ratio of a workload's own time traced by
//     mpiprobe's default probe set to its time untraced, in interleaved pairs
//     within one run, on an 8-byte MPI_Allreduce loop and on the flood program.
//   - BenchmarkTracerCPU: the CPU mpiprobe's own process takes, as a share
//     of one CPU, during a window inside a long allreduce loop traced with
//     the default set, and the events the probes counted: the two parts of
//     the overhead, each measured without the run-to-run noise of wall time.
//   - BenchmarkPerHitCost: what the counting program every catalog probe runs
//     costs per hit, against an empty program on the same symbol and against
//     no probe at all.
//   - BenchmarkTraceRecording: trace mode's cost per MPI_Allreduce call
//     taken apart (floor, thread state and arguments, record and reader,
//     every function and the real recorder) beside --collectives and,
//     when MPIPROBE_MPIP (MPIPROBE_MPIP_TRIXIE) names libmpiP.so, mpiP, as
//     ratios to the floor (on single and on uprobe_multi links) within
//     each round; see docs/trace-cost.md.
//   - BenchmarkCollectives: --collectives against the same floor and mpiP.
//
// Those two run a sub-benchmark per Open MPI build: Debian 12's on the
// host, and Debian 13's, built with CET, in its root (.ci/roots; skipped,
// saying so, where it is missing). The floor of each is an empty uprobe
// and uretprobe where mpiprobe puts its own (x86.EntryPoint: past a CET
// build's endbr64); the same pair at the function's first instruction is
// measured beside it. The loop runs at one rank and is timed in CPU time,
// so that the waits of a loaded machine stay out (docs/bench.md).
//   - BenchmarkLocalCalls: what trace mode costs MPI_Wtime and
//     MPI_Comm_rank, against probes at their entry.
//   - BenchmarkEndbrStep: what an empty uprobe costs per hit on the endbr64
//     that begins every function of a CET build, which the kernel
//     single-steps, against one past it, on an emulated push (no MPI).
//   - BenchmarkTraceFixedCost: the startup and shutdown `mpiprobe trace`
//     adds to any command.
//   - BenchmarkStatusThroughAgent: a user's `mpiprobe status` through the
//     agent's query socket against root's own, on a hung 3-rank job.
//
// The tables are printed with medians; each benchmark reports its key ratio
// as a metric too.
package bench
