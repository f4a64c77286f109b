// Package monitor runs one mpiprobe session: it checks the kernel, loads the
// BPF programs, attaches the probe catalog to the MPI libraries of the
// targets (processes given by pid or job, or a command it starts), follows
// their processes, applies the C/T rule to the counters it reads, and builds
// the per-job summary when the targets are gone or the context ends.
//
// Everything that can be decided without the kernel lives in other packages
// (procfs, identity, probes, thresholds, agg); this package is the thin edge
// that ties them to the BPF maps.
package monitor
