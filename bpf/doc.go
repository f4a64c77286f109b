// Package bpf holds mpiprobe's BPF programs and the Go bindings bpf2go
// generates from them (mpiprobe_x86_bpfel.go and .o, committed so that a
// fresh clone builds without clang).
//
// The C is one object, built from mpiprobe.bpf.c, which includes one header
// per feature:
//
//   - common.h: the includes, the traced map and its flags, the drops
//     counters and drop(), reading arguments and user memory, BITS (a
//     cookie field) and PROBE_TWINS (a program for uprobe links and its
//     twin for uprobe_multi links, from one function).
//   - counters.h: catalog event counting into the counts map: count_event
//     and its condition, the catalog cookie layout, and the detail
//     programs (stash_arg, the gates, free_list_grow, free_list_at_max,
//     mpi_error, async_event_ret); empty is the benchmark's baseline.
//   - lifecycle.h: the fork, exec and exit tracepoints, the proc_events
//     ring buffer, the exits kept for the agent (watch_all), and
//     startup_mark with the startups map.
//   - trace.h: trace mode. trace_enter and trace_exit record every MPI call
//     (thread state in a trace_owned slot indexed by tid, owned by the
//     task, or task-local storage when another thread holds the slot;
//     trace_thread_exit frees a thread's slot), staged per CPU in
//     trace_stages and moved 32 at a time into the trace_events ring
//     buffer, counting per process what did not fit in trace_lost;
//     trace_fortran_enter makes the next C call of a Fortran binding take
//     the binding's call site.
//   - collectives.h: collective tracking (--collectives): communicator
//     slots, per-collective counters, nonblocking requests and their
//     completion.
//   - status.h: mpiprobe status: the dump_regs task iterator and
//     status_enter.
//
// headers/mpiprobe_kernel.h declares the few kernel types the programs
// read, for CO-RE.
//
// The values and bit layouts both sides use are C enums, exported to Go
// with bpf2go -type (gen.go): the proc_event types, the drop reasons, the
// traced flags, the startup marks, the comparisons, the error-handler and
// datatype kinds, the communicator layout kinds and flags, and the shifts
// and widths of every attach cookie's fields. The Go side defines its names
// from the generated constants (MpiprobeProcEventTypePROC_FORK, ...)
// instead of copying numbers. Run `go generate ./bpf` (or make generate)
// after changing the C; make check-generate fails when the committed object
// is stale.
package bpf
