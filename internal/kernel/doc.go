// Package kernel is mpiprobe's thin edge to the kernel: everything that
// touches BPF or the kernel's clocks and is shared by the modes (a session,
// trace mode, the agent, status and the `mpiprobe probes` listing), and
// nothing that can be decided without it.
//
//   - Preflight checks that this kernel and this process can load and
//     attach mpiprobe's programs; ExplainLoad turns a load or attach
//     failure into a line that says what to do.
//   - Load is the one loader of bpf/'s object: each mode names the programs
//     and maps it uses (a struct of ebpf-tagged fields) and, in Options,
//     the map sizes and constants to rewrite and the maps to take over
//     (the agent's pinned ones).
//   - ProcEvents reads the process notifications of the proc_events ring
//     buffer; DecodeExit says how a process ended.
//   - ReadCounters reads the counts map as plain Go readings for package
//     counters; ReadDrops follows the drops map.
//   - Timebase converts BPF timestamps (CLOCK_MONOTONIC) to wall-clock time.
//   - MountBPFFS mounts the BPF file system where pins go.
//
// What the modes do with these (attaching the catalog, the C/T rule, jobs,
// summaries) lives in their own packages.
package kernel
