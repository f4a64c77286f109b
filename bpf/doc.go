// Package bpf holds mpiprobe's BPF programs (mpiprobe.bpf.c) and the Go
// bindings bpf2go generates from them (mpiprobe_x86_bpfel.go and .o, committed
// so that a fresh clone builds without clang).
//
// The programs count catalog events per (tgid, event) in the counts map,
// filter by the traced map, and report process fork, exec and exit through
// the proc_events ring buffer; empty is the benchmark's baseline. In trace
// mode, trace_enter and trace_exit record every MPI call (thread state in
// task-local storage) into the trace_events ring buffer, counting per process
// what did not fit in trace_lost; trace_fortran_enter makes the next C call
// of a Fortran binding take the binding's call site. Run
// `go generate ./bpf` (or make generate) to rebuild them.
package bpf
