// Process lifecycle: fork, exec and exit tracepoints, the proc_events ring
// buffer that tells user space about them, the exits kept for the agent,
// and the marks of a rank's start and end (startup_mark).

#ifndef MPIPROBE_LIFECYCLE_H
#define MPIPROBE_LIFECYCLE_H

#include "common.h"

enum proc_event_type {
	PROC_FORK = 1,
	PROC_EXEC = 2,
	PROC_EXIT = 3,
	PROC_MPI = 4, // first MPI call of a process in trace mode
};

struct proc_event {
	__u32 type;
	__u32 tgid;
	__u32 ppid;
	__s32 exit_code;
	__u64 ts_ns;
};

// Set by the node-wide agent before loading: every process that enters
// MPI_Init is traced from then on (without it only processes the loader
// named are), every exec is notified so that new library files are found,
// and exits are also kept in the exits map, which survives a restart of
// the agent.
volatile const __u32 watch_all = 0;

// Points in a rank's start and end, recorded once each by startup_mark
// (the attach cookie is the index).
enum mark {
	MARK_INIT_ENTER = 0, // MPI_Init / MPI_Init_thread entered
	MARK_INIT_EXIT = 1,
	MARK_PMIX_START = 2, // Open MPI: the first PMIx fence (the modex)
	MARK_PMIX_END = 3,   // Open MPI: ompi_proc_complete_init, right after it
	MARK_UCX_START = 4,  // MPICH: ucp_worker_get_address
	MARK_UCX_END = 5,    // MPICH: the first ucp_ep_create, once addresses were exchanged
	MARK_FIN_ENTER = 6,  // MPI_Finalize entered
	MARK_FIN_EXIT = 7,
	MARK_ABORT = 8,      // MPI_Abort entered; its error code is kept too
	MARK_MAX = 9,
};

// CLOCK_MONOTONIC times of each mark, 0 while not seen, and the error
// code MPI_Abort was called with (meaningful once ns[MARK_ABORT] is set).
struct startup {
	__u64 ns[MARK_MAX];
	__s32 abort_code;
	__u32 pad;
};

// How a process ended, kept until the agent has read it.
struct exit_rec {
	__s32 code;
	__u32 pad;
	__u64 ts_ns;
};

// What identifies a rank, recorded when it enters MPI_Init (watch_all
// only) and kept until the agent has read it: a rank that starts and ends
// while no agent runs is still named by its job and rank. The agent parses
// env as it parses /proc/PID/environ and walks chain as it walks the
// parent chain in /proc.
enum ident_limit {
	IDENT_ENV = 16384, // bytes of environment kept: the last ones when it is longer (launchers append theirs)
	IDENT_CHAIN = 4,   // the process and its ancestors: proxy, (bootstrap,) mpiexec
};

_Static_assert((IDENT_ENV & (IDENT_ENV - 1)) == 0, "IDENT_ENV must be a power of two");

struct ident_proc {
	__u32 tgid;
	__u32 ppid;
	char comm[16];
};

struct ident {
	__u64 start_boottime; // ns after boot, as /proc/PID/stat's start time
	__u32 env_len;        // bytes of env read; 0 when unreadable
	__u32 env_cut;        // 1 when env is the tail of a longer environment
	__u32 chain_len;
	__u32 pad;
	struct ident_proc chain[IDENT_CHAIN]; // chain[0] is the process itself
	char env[IDENT_ENV];
};

// Force bpf2go to emit Go types for these.
const struct ident *unused_ident __attribute__((unused));
const enum ident_limit *unused_ident_limit __attribute__((unused));
const struct proc_event *unused_proc_event __attribute__((unused));
const struct startup *unused_startup __attribute__((unused));
const struct exit_rec *unused_exit_rec __attribute__((unused));
const enum proc_event_type *unused_proc_event_type __attribute__((unused));
const enum mark *unused_mark __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32); // tgid
	__type(value, struct startup);
} startups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32); // tgid
	__type(value, struct exit_rec);
} exits SEC(".maps");

// Allocated as ranks start (no preallocation: an entry is 16 KiB).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32); // tgid
	__type(value, struct ident);
} idents SEC(".maps");

// Where record_ident builds an entry (too big for the stack).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ident);
} ident_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} proc_events SEC(".maps");

// notify_flags tells user space about a process; flags are
// bpf_ringbuf_submit's (BPF_RB_NO_WAKEUP leaves the record for the
// reader's next read instead of waking it).
static __always_inline void notify_flags(__u32 type, __u32 tgid, __u32 ppid, __s32 code, __u64 flags)
{
	struct proc_event *e = bpf_ringbuf_reserve(&proc_events, sizeof(*e), 0);
	if (!e) {
		drop(DROP_RINGBUF_FULL);
		return;
	}
	e->type = type;
	e->tgid = tgid;
	e->ppid = ppid;
	e->exit_code = code;
	e->ts_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(e, flags);
}

// notify tells user space at once. The wakeup is forced: records left
// without one (the agent's execs) may precede this one, and the kernel's
// adaptive wakeup would then assume the reader busy with them, while a
// short process's identity must be read before it exits.
static __always_inline void notify(__u32 type, __u32 tgid, __u32 ppid, __s32 code)
{
	notify_flags(type, tgid, ppid, code, BPF_RB_FORCE_WAKEUP);
}

// Children of a traced process with the follow flag are traced from their
// first instruction, before the loader could notice them.
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	if (ptgid == ctgid)
		return 0; // a new thread, not a new process
	__u32 *flags = bpf_map_lookup_elem(&traced, &ptgid);
	if (!flags || !(*flags & TRACED_FOLLOW))
		return 0;
	__u32 f = TRACED_FOLLOW;
	if (bpf_map_update_elem(&traced, &ctgid, &f, BPF_ANY) != 0) {
		drop(DROP_TRACED_FULL);
		return 0;
	}
	notify(PROC_FORK, ctgid, ptgid, 0);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	__u32 *flags = bpf_map_lookup_elem(&traced, &tgid);
	if (!flags) {
		// Every exec of the node: the agent reads them in batches (its
		// reader reads on a timer), a wakeup each would cost it more than
		// the rest of its work on a busy node.
		if (watch_all)
			notify_flags(PROC_EXEC, tgid, BPF_CORE_READ(p, real_parent, tgid), 0, BPF_RB_NO_WAKEUP);
		return 0;
	}
	*flags &= ~TRACED_SEEN; // a new program: its first MPI call is news again
	notify(PROC_EXEC, tgid, BPF_CORE_READ(p, real_parent, tgid), 0);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	if (!bpf_map_lookup_elem(&traced, &tgid))
		return 0;
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0; // other threads of the process still run
	__s32 code = BPF_CORE_READ(p, exit_code);
	if (watch_all) {
		struct exit_rec r = { .code = code, .ts_ns = bpf_ktime_get_ns() };
		bpf_map_update_elem(&exits, &tgid, &r, BPF_ANY);
	}
	notify(PROC_EXIT, tgid, 0, code);
	bpf_map_delete_elem(&traced, &tgid);
	return 0;
}

// record_ident keeps what identifies the current process (struct ident),
// once: its start time, its environment and its parent chain.
static __always_inline void record_ident(__u32 tgid)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 started = BPF_CORE_READ(task, group_leader, start_boottime);
	struct ident *old = bpf_map_lookup_elem(&idents, &tgid);
	if (old && old->start_boottime == started)
		return; // recorded already; an entry of an earlier process with this pid is replaced
	__u32 zero = 0;
	struct ident *id = bpf_map_lookup_elem(&ident_scratch, &zero);
	if (!id)
		return;
	id->start_boottime = started;
	unsigned long start = BPF_CORE_READ(task, mm, env_start);
	unsigned long end = BPF_CORE_READ(task, mm, env_end);
	__u64 len = end > start ? end - start : 0;
	id->env_cut = 0;
	if (len > IDENT_ENV) {
		start = end - IDENT_ENV;
		len = IDENT_ENV;
		id->env_cut = 1;
	}
	id->env_len = 0;
	if (len > 0 && bpf_probe_read_user(id->env, ((len - 1) & (IDENT_ENV - 1)) + 1, (void *)start) == 0)
		id->env_len = len;
	id->chain_len = 0;
	struct task_struct *t = task;
	for (int i = 0; i < IDENT_CHAIN; i++) {
		if (!t)
			break;
		struct task_struct *parent = BPF_CORE_READ(t, real_parent);
		id->chain[i].tgid = BPF_CORE_READ(t, tgid);
		id->chain[i].ppid = parent ? BPF_CORE_READ(parent, tgid) : 0;
		BPF_CORE_READ_STR_INTO(&id->chain[i].comm, t, group_leader, comm);
		id->chain_len = i + 1;
		if (id->chain[i].tgid <= 1)
			break;
		t = parent;
	}
	bpf_map_update_elem(&idents, &tgid, id, BPF_ANY);
}

// startup_mark records, once per process, when a point of MPI's start or
// end was reached (the cookie says which). Under watch_all, entering
// MPI_Init also makes the process traced and tells the loader.
SEC("uprobe")
int startup_mark(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 mark = bpf_get_attach_cookie(ctx) & 0xff;
	if (mark >= MARK_MAX)
		return 0;
	if (!bpf_map_lookup_elem(&traced, &tgid)) {
		if (mark != MARK_INIT_ENTER || !watch_all)
			return 0;
		__u32 f = 0;
		if (bpf_map_update_elem(&traced, &tgid, &f, BPF_NOEXIST) != 0) {
			drop(DROP_TRACED_FULL);
			return 0;
		}
		notify(PROC_MPI, tgid, 0, 0);
	}
	if (mark == MARK_INIT_ENTER && watch_all)
		record_ident(tgid);
	__u64 now = bpf_ktime_get_ns();
	struct startup *s = bpf_map_lookup_elem(&startups, &tgid);
	if (!s) {
		struct startup z = {};
		bpf_map_update_elem(&startups, &tgid, &z, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&startups, &tgid);
		if (!s)
			return 0;
	}
	if (mark >= MARK_MAX || s->ns[mark] != 0) // checked again: the verifier forgets the first check
		return 0;
	if (mark == MARK_ABORT)
		s->abort_code = (__s32)arg(ctx, 2); // MPI_Abort(comm, errorcode)
	s->ns[mark] = now;
	return 0;
}

#endif // MPIPROBE_LIFECYCLE_H
