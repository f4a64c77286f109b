// Package session runs one mpiprobe session: it checks the kernel, loads the
// BPF programs, attaches the probe catalog to the MPI libraries of the
// targets (processes given by pid or job, or a command it starts), follows
// their processes, applies the C/T rule to the counters it reads, and builds
// the per-job summary when the targets are gone or the context ends.
//
// In trace mode (Config.Trace) it attaches the trace programs instead of the
// catalog and records every MPI call of the targets to a trace file: a
// recorder goroutine drains the trace ring buffer (and, at the end, the
// calls still staged per CPU), symbolizes call sites and writes the file;
// processes are read (identity, memory map, code files) on
// their first MPI call, while they live.
//
// Everything that can be decided without the kernel lives in other packages
// (procfs, identity, probes, counters, thresholds, agg), and what touches
// the kernel for every mode (preflight, loading, process notifications,
// reading the counters) in package kernel; this package ties them together
// for one session.
package session
