// Package bpf holds mpiprobe's BPF programs (mpiprobe.bpf.c) and the Go
// bindings bpf2go generates from them (mpiprobe_x86_bpfel.go and .o, committed
// so that a fresh clone builds without clang).
//
// The programs count catalog events per (tgid, event) in the counts map,
// filter by the traced map, keep per-thread scope depths for conditions such
// as "not inside a retry loop", and report process fork, exec and exit through
// the proc_events ring buffer. Run `go generate ./bpf` to rebuild them.
package bpf
