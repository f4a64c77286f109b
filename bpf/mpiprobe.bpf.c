//go:build ignore

// mpiprobe's BPF side: counters of unusual MPI library events keyed by
// (tgid, event), filtered by a map of traced processes, plus process
// lifecycle notifications (fork, exec, exit) through a ring buffer.
//
// One program serves every catalog entry: the uprobe's attach cookie says
// which event it counts and under which condition (see struct cookie layout
// below and probes/cookie.go, which must agree).

#include <linux/types.h>
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "mpiprobe_kernel.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// Cookie layout (64 bits), written by probes.Cookie:
//   bits  0-15  event id (index into the catalog)
//   bits 16-19  comparison: 0 always, 1 ==, 2 !=, 3 <, 4 > (signed 32-bit)
//   bits 20-23  operand source: 0 return value, 1..5 argument 1..5
//   bits 24-27  count_event: peak source, 0 none or n: the u32 that argument n points to;
//               the detail programs: their parameter (stash slot, library layout)
//   bits 32-63  operand (signed 32-bit); free_list_grow and free_list_at_max:
//               the library's opal_free_list_t layout (see FL_MAX_TO_ALLOC)
#define CMP_ALWAYS 0
#define CMP_EQ 1
#define CMP_NE 2
#define CMP_LT 3
#define CMP_GT 4
#define CMP_EQ8 5 // low byte == operand: a C bool return, whose upper bits are undefined

// Indexes of the drops array: what could not be recorded because a map was full.
enum drop_reason {
	DROP_COUNTS_FULL = 0,
	DROP_TRACED_FULL = 1,
	DROP_RINGBUF_FULL = 2,
	DROP_COLL_FULL = 3,
	DROP_MAX = 4,
};

enum proc_event_type {
	PROC_FORK = 1,
	PROC_EXEC = 2,
	PROC_EXIT = 3,
	PROC_MPI = 4, // first MPI call of a process in trace mode
};

// Flags of a traced process.
#define TRACED_FOLLOW 1 // add its children to the traced set
#define TRACED_SEEN 2   // trace mode: its first MPI call was notified

// An event's counter in one process. detail tells instances of one event
// apart (a free list's class, an error class and API); 0 for most events.
struct count_key {
	__u32 tgid;
	__u32 event;
	__u64 detail;
};

#define NAME_LEN 40

// name is what detail stands for, read from the process when the entry is
// created (a class name, an API name); empty for most events. peak is the
// largest value the event carried (a list's size, an SRQ's max_wr).
struct count_val {
	__u64 count;
	__u64 first_ns;
	__u64 last_ns;
	__u64 peak;
	char name[NAME_LEN];
};

struct proc_event {
	__u32 type;
	__u32 tgid;
	__u32 ppid;
	__s32 exit_code;
	__u64 ts_ns;
};

// One MPI call of a traced thread, sent through trace_events at its return
// (trace mode). Field order keeps it free of padding: 64 bytes.
struct trace_event {
	__u32 tgid;
	__u32 tid;
	__u64 site;     // return address into the caller (for Fortran: the binding's caller)
	__u64 enter_ns;
	__u64 exit_ns;
	__s64 count;    // element count argument, TRACE_NONE if the call has none
	__s32 peer;     // peer rank argument, TRACE_NONE if none
	__s32 root;     // root argument, TRACE_NONE if none
	__s32 elem_size; // bytes per element, 0 if unknown
	__s32 ret;      // the call's return value
	__u16 call;     // index into the loader's call table
	__u16 flags;
	__u32 pad;
};

// Per-thread state of trace mode, in task-local storage (cheaper than a
// hash keyed by tid, and freed with the thread): the call in flight
// between its entry and its return, and a Fortran binding entered but not
// yet in the C function it implements.
struct trace_thread {
	__u64 site;
	__u64 enter_ns;
	__s64 count;
	__s32 peer;
	__s32 root;
	__s32 elem_size;
	__u32 depth;        // 0: no call in flight; >1: MPI calls made from inside the outermost one, not recorded
	__u64 fortran_site; // the binding's return address, in the application
	__u32 fortran_call; // call index of the C function the binding implements
	__u32 fortran;      // 1 while a binding waits for its C call
};

// Set by the node-wide agent before loading: every process that enters
// MPI_Init is traced from then on (without it only processes the loader
// named are), every exec is notified so that new library files are found,
// and exits are also kept in the exits map, which survives a restart of
// the agent.
volatile const __u32 watch_all = 0;

// Points in a rank's start and end, recorded once each by startup_mark
// (the attach cookie is the index).
enum startup_mark {
	MARK_INIT_ENTER = 0, // MPI_Init / MPI_Init_thread entered
	MARK_INIT_EXIT = 1,
	MARK_PMIX_START = 2, // Open MPI: the first PMIx fence (the modex)
	MARK_PMIX_END = 3,   // Open MPI: ompi_proc_complete_init, right after it
	MARK_UCX_START = 4,  // MPICH: ucp_worker_get_address
	MARK_UCX_END = 5,    // MPICH: the first ucp_ep_create, once addresses were exchanged
	MARK_FIN_ENTER = 6,  // MPI_Finalize entered
	MARK_FIN_EXIT = 7,
	MARK_MAX = 8,
};

// CLOCK_MONOTONIC times of each mark, 0 while not seen.
struct startup {
	__u64 ns[MARK_MAX];
};

// How a process ended, kept until the agent has read it.
struct exit_rec {
	__s32 code;
	__u32 pad;
	__u64 ts_ns;
};

// Force bpf2go to emit Go types for these.
const struct trace_event *unused_trace_event __attribute__((unused));
const struct proc_event *unused_proc_event __attribute__((unused));
const struct count_key *unused_count_key __attribute__((unused));
const struct count_val *unused_count_val __attribute__((unused));
const struct startup *unused_startup __attribute__((unused));
const struct exit_rec *unused_exit_rec __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u32);
} traced SEC(".maps");

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

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct count_key);
	__type(value, struct count_val);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DROP_MAX);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} proc_events SEC(".maps");

// Trace mode. The ring buffer's size is set by the loader before loading.
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} trace_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct trace_thread);
} trace_threads SEC(".maps");

// Calls that could not be recorded (ring buffer full), per process.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32); // tgid
	__type(value, __u64);
} trace_lost SEC(".maps");

static __always_inline void drop(__u32 reason)
{
	__u64 *n = bpf_map_lookup_elem(&drops, &reason);
	if (n)
		*n += 1;
}

static __always_inline __s32 operand_value(struct pt_regs *ctx, __u32 src)
{
	// The verifier allows only constant offsets into the context, so every
	// register is loaded at its own fixed offset and then selected.
	__s32 v[6];
	v[0] = (__s32)PT_REGS_RC(ctx);
	v[1] = (__s32)PT_REGS_PARM1(ctx);
	v[2] = (__s32)PT_REGS_PARM2(ctx);
	v[3] = (__s32)PT_REGS_PARM3(ctx);
	v[4] = (__s32)PT_REGS_PARM4(ctx);
	v[5] = (__s32)PT_REGS_PARM5(ctx);
	asm volatile("" : : "r"(v) : "memory");
	return v[src < 6 ? src : 0];
}

// arg_value returns argument n (1 to 5) in full, 0 for any other n.
static __always_inline __u64 arg_value(struct pt_regs *ctx, __u32 n)
{
	__u64 v[6];
	v[0] = 0;
	v[1] = PT_REGS_PARM1(ctx);
	v[2] = PT_REGS_PARM2(ctx);
	v[3] = PT_REGS_PARM3(ctx);
	v[4] = PT_REGS_PARM4(ctx);
	v[5] = PT_REGS_PARM5(ctx);
	asm volatile("" : : "r"(v) : "memory");
	return v[n < 6 ? n : 0];
}

static __always_inline int condition_holds(struct pt_regs *ctx, __u64 cookie)
{
	__u32 cmp = (cookie >> 16) & 0xf;
	if (cmp == CMP_ALWAYS)
		return 1;
	__s32 v = operand_value(ctx, (cookie >> 20) & 0xf);
	__s32 want = (__s32)(cookie >> 32);
	switch (cmp) {
	case CMP_EQ:
		return v == want;
	case CMP_NE:
		return v != want;
	case CMP_LT:
		return v < want;
	case CMP_GT:
		return v > want;
	case CMP_EQ8:
		return (__u8)v == (__u8)want;
	}
	return 0;
}

// count_hit adds one hit to (tgid, event, detail), raising its peak to at
// least peak. name, a user address or 0, is read into a new entry.
static __always_inline void count_hit(__u32 tgid, __u32 event, __u64 detail, __u64 peak, __u64 name)
{
	struct count_key key = { .tgid = tgid, .event = event, .detail = detail };
	__u64 now = bpf_ktime_get_ns();
	struct count_val *v = bpf_map_lookup_elem(&counts, &key);
	if (!v) {
		struct count_val init = { .first_ns = now };
		if (name)
			bpf_probe_read_user_str(init.name, sizeof(init.name), (void *)name);
		// BPF_NOEXIST fails when another CPU created the entry first, or
		// when the map is full.
		bpf_map_update_elem(&counts, &key, &init, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&counts, &key);
		if (!v) {
			drop(DROP_COUNTS_FULL);
			return;
		}
	}
	__sync_fetch_and_add(&v->count, 1);
	v->last_ns = now;
	if (peak > v->peak)
		v->peak = peak; // racy across CPUs: a peak may be lost to a concurrent larger one
}

// count_event serves every counting entry of the catalog, as uprobe or uretprobe.
SEC("uprobe")
int count_event(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	if (!bpf_map_lookup_elem(&traced, &tgid))
		return 0;

	__u64 cookie = bpf_get_attach_cookie(ctx);
	if (!condition_holds(ctx, cookie))
		return 0;
	__u64 peak = 0;
	__u32 psrc = (cookie >> 24) & 0xf;
	if (psrc) {
		__u32 p = 0;
		__u64 addr = arg_value(ctx, psrc);
		if (addr)
			bpf_probe_read_user(&p, sizeof(p), (void *)addr);
		peak = p;
	}
	count_hit(tgid, cookie & 0xffff, 0, peak, 0);
	return 0;
}

static __always_inline void notify(__u32 type, __u32 tgid, __u32 ppid, __s32 code)
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
	bpf_ringbuf_submit(e, 0);
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
		if (watch_all)
			notify(PROC_EXEC, tgid, BPF_CORE_READ(p, real_parent, tgid), 0);
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
	__u64 now = bpf_ktime_get_ns();
	struct startup *s = bpf_map_lookup_elem(&startups, &tgid);
	if (!s) {
		struct startup z = {};
		bpf_map_update_elem(&startups, &tgid, &z, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&startups, &tgid);
		if (!s)
			return 0;
	}
	if (s->ns[mark & (MARK_MAX - 1)] == 0)
		s->ns[mark & (MARK_MAX - 1)] = now;
	return 0;
}

// Trace cookie layout (64 bits), written by probes.TraceCookie:
//   bits  0-15  call index
//   bits 16-19  argument holding the peer rank (0 none, 1..12)
//   bits 20-23  argument holding the element count
//   bits 24-27  argument holding the datatype
//   bits 28-31  argument holding the root
//   bits 32-33  datatype kind: 0 unknown, 1 Open MPI pointer (size_t size at
//               DT_OMPI_SIZE_OFF), 2 MPICH handle (builtin: size in bits 8-15)
#define TRACE_NONE (-2147483647 - 1)
#define DT_OMPI 1
#define DT_MPICH 2
#define DT_OMPI_SIZE_OFF 24

// arg reads argument n (1-based) of the function just entered: the first six
// from registers, the rest from the stack above the return address.
static __always_inline __u64 arg(struct pt_regs *ctx, __u32 n)
{
	// Constant offsets only: the verifier rejects variable context and
	// stack offsets.
	switch (n) {
	case 1:
		return PT_REGS_PARM1(ctx);
	case 2:
		return PT_REGS_PARM2(ctx);
	case 3:
		return PT_REGS_PARM3(ctx);
	case 4:
		return PT_REGS_PARM4(ctx);
	case 5:
		return PT_REGS_PARM5(ctx);
	case 6:
		return ctx->r9; // PT_REGS_PARM6 is missing from Debian's libbpf headers
	}
	__u64 x = 0;
	if (n >= 7 && n <= 12)
		bpf_probe_read_user(&x, sizeof(x), (void *)(PT_REGS_SP(ctx) + 8 * (n - 6)));
	return x;
}

static __always_inline __s32 elem_size(__u64 dt, __u32 kind)
{
	if (kind == DT_OMPI && dt) {
		__u64 size = 0;
		bpf_probe_read_user(&size, sizeof(size), (void *)(dt + DT_OMPI_SIZE_OFF));
		return size < 0x7fffffff ? (__s32)size : 0;
	}
	if (kind == DT_MPICH && ((__u32)dt >> 30) == 1)
		return ((__u32)dt >> 8) & 0xff;
	return 0;
}

static __always_inline int do_trace_enter(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 *flags = bpf_map_lookup_elem(&traced, &tgid);
	if (!flags)
		return 0;
	if (!(*flags & TRACED_SEEN)) {
		// Tell mpiprobe at once, so that it reads who the process is and
		// its memory map while it lives: the calls themselves may reach
		// it only after a short program has exited.
		*flags |= TRACED_SEEN; // two threads may both notify: harmless
		notify(PROC_MPI, tgid, 0, 0);
	}
	struct trace_thread *th = bpf_task_storage_get(&trace_threads, bpf_get_current_task_btf(), 0,
						       BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!th)
		return 0;
	if (th->depth > 0) {
		th->depth++;
		return 0;
	}
	__u64 cookie = bpf_get_attach_cookie(ctx);
	if (th->fortran) {
		// Inside a Fortran binding: its handle conversions (MPI_Comm_f2c,
		// ...) are not the application's calls; the implemented call is,
		// at the binding's call site.
		if (th->fortran_call != (cookie & 0xffff))
			return 0;
		th->site = th->fortran_site;
		th->fortran = 0;
	} else {
		bpf_probe_read_user(&th->site, sizeof(th->site), (void *)PT_REGS_SP(ctx));
	}
	th->peer = TRACE_NONE;
	th->root = TRACE_NONE;
	th->count = TRACE_NONE;
	th->elem_size = 0;
	__u32 a;
	if ((a = (cookie >> 16) & 0xf))
		th->peer = (__s32)arg(ctx, a);
	if ((a = (cookie >> 20) & 0xf))
		th->count = (__s32)arg(ctx, a);
	if ((a = (cookie >> 24) & 0xf))
		th->elem_size = elem_size(arg(ctx, a), (cookie >> 32) & 3);
	if ((a = (cookie >> 28) & 0xf))
		th->root = (__s32)arg(ctx, a);
	th->depth = 1;
	th->enter_ns = bpf_ktime_get_ns();
	return 0;
}

static __always_inline int do_trace_exit(struct pt_regs *ctx)
{
	struct trace_thread *th = bpf_task_storage_get(&trace_threads, bpf_get_current_task_btf(), 0, 0);
	if (!th || th->depth == 0)
		return 0;
	if (th->depth > 1) {
		th->depth--;
		return 0;
	}
	th->depth = 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	struct trace_event *e = bpf_ringbuf_reserve(&trace_events, sizeof(*e), 0);
	if (!e) {
		__u64 one = 1;
		__u64 *n = bpf_map_lookup_elem(&trace_lost, &tgid);
		if (n)
			__sync_fetch_and_add(n, 1);
		else
			bpf_map_update_elem(&trace_lost, &tgid, &one, BPF_NOEXIST);
		return 0;
	}
	__u64 cookie = bpf_get_attach_cookie(ctx);
	e->tgid = tgid;
	e->tid = (__u32)pid_tgid;
	e->site = th->site;
	e->enter_ns = th->enter_ns;
	e->exit_ns = bpf_ktime_get_ns();
	e->count = th->count;
	e->peer = th->peer;
	e->root = th->root;
	e->elem_size = th->elem_size;
	e->ret = (__s32)PT_REGS_RC(ctx);
	e->call = cookie & 0xffff;
	e->flags = 0;
	e->pad = 0;
	// Waking the reader for every call costs more than the probe itself;
	// it is woken once the ring is an eighth full, and reads on a timer
	// otherwise.
	__u64 avail = bpf_ringbuf_query(&trace_events, BPF_RB_AVAIL_DATA);
	__u64 size = bpf_ringbuf_query(&trace_events, BPF_RB_RING_SIZE);
	bpf_ringbuf_submit(e, avail > size / 8 ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	return 0;
}

static __always_inline int do_trace_fortran(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	if (!bpf_map_lookup_elem(&traced, &tgid))
		return 0;
	struct trace_thread *th = bpf_task_storage_get(&trace_threads, bpf_get_current_task_btf(), 0,
						       BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!th || th->depth > 0)
		return 0;
	th->fortran_call = bpf_get_attach_cookie(ctx) & 0xffff;
	bpf_probe_read_user(&th->fortran_site, sizeof(th->fortran_site), (void *)PT_REGS_SP(ctx));
	th->fortran = 1;
	return 0;
}

// trace_enter runs at the entry of every MPI function in trace mode.
// The _multi variants are the same programs for uprobe_multi links, which
// attach a whole library's functions in one system call (kernel 6.6+).
SEC("uprobe")
int trace_enter(struct pt_regs *ctx) { return do_trace_enter(ctx); }

SEC("uprobe.multi")
int trace_enter_multi(struct pt_regs *ctx) { return do_trace_enter(ctx); }

// trace_exit runs at the return of every MPI function in trace mode and
// sends the outermost call of the thread to user space.
SEC("uprobe")
int trace_exit(struct pt_regs *ctx) { return do_trace_exit(ctx); }

SEC("uretprobe.multi")
int trace_exit_multi(struct pt_regs *ctx) { return do_trace_exit(ctx); }

// trace_fortran_enter runs at the entry of a Fortran binding: the C call it
// makes next is attributed to the binding's caller, the application.
SEC("uprobe")
int trace_fortran_enter(struct pt_regs *ctx) { return do_trace_fortran(ctx); }

SEC("uprobe.multi")
int trace_fortran_enter_multi(struct pt_regs *ctx) { return do_trace_fortran(ctx); }

// ---- Collective tracking (--collectives) ----
//
// Per (process, communicator, collective): calls (counted at entry, so the
// call in flight is included), threads inside now and since when, total and
// max time inside. A communicator gets a slot the first time a process
// uses it; the slot's counters are COLL_MAX consecutive entries of
// coll_stats. User space owns the slots: it pushes free ones into
// coll_free and takes back those of exited processes.
//
// Collective cookie layout (64 bits), written by probes.CollCookie:
//   bits  0-7   collective index (loader's table, < COLL_MAX)
//   bits  8-11  argument holding the communicator (1..12)
//   bits 12-15  layout index into coll_layouts (0: unknown build)
//   bits 16-19  nonblocking: argument receiving the request (0: blocking)
//   bit  20     requests are 4-byte ints (MPICH), else 8-byte pointers
//   bits 32-63  the probed function's address in its file (MPICH: the
//               library's load bias is the entry address minus this)
//
// Completion cookie (coll_wait_enter/exit):
//   bits  0-3   argument holding the request array (or the request)
//   bits  4-7   argument holding the count (0: one request)
//   bit  20     requests are 4-byte ints
#define COLL_MAX 64
#define COMM_LOCAL 1      // id is the rank-local handle: unknown library build
#define LAYOUT_OMPI 1     // MPI_Comm is an ompi_communicator_t*
#define LAYOUT_MPICH 2    // MPI_Comm is an int handle into MPICH's object tables

// How to read a communicator's identity in one library build.
struct coll_layout {
	__u32 kind;       // 0 unknown, LAYOUT_OMPI, LAYOUT_MPICH
	__u32 cid_off;    // context id (u32 in Open MPI, u16 in MPICH)
	__u32 cid_mask;   // 0xffffffff or 0xffff
	__u32 rank_off;   // the caller's rank in the communicator
	__u32 size_off;   // Open MPI: grp_proc_count in the group; MPICH: local_size
	__u32 group_off;  // Open MPI: c_local_group
	__u32 obj_size;   // MPICH: sizeof(MPIR_Comm)
	__u32 ind_blocks_off; // MPICH: offset of the indirect block array in MPIR_Comm_mem
	__u64 builtin;    // MPICH: file address of MPIR_Comm_builtin
	__u64 direct;     // MPICH: file address of MPIR_Comm_direct
	__u64 mem;        // MPICH: file address of MPIR_Comm_mem
	__u32 ind_shift;  // MPICH: indirect handles: block = (h >> ind_shift) & ind_block_mask
	__u32 ind_block_mask;
	__u32 ind_index_mask; // index in block = h & ind_index_mask
	__u32 pad;
};

// Key of a slot: a communicator of a process.
struct coll_key {
	__u32 tgid;
	__u32 flags;  // COMM_LOCAL
	__u64 id;     // context id, or the local handle when COMM_LOCAL
	__s32 size;   // group size, -1 unknown
	__u32 pad;
};

// What user space learns about a slot.
struct coll_comm {
	__u32 tgid;
	__u32 flags;  // COMM_LOCAL
	__u64 id;
	__u64 handle; // the MPI_Comm value the slot was first seen with
	__s32 size;
	__s32 rank;   // the process's rank in it, -1 unknown
};

struct coll_stat {
	__u64 calls;     // entries, including calls in flight
	__s64 inside;    // threads inside now
	__u64 since_ns;  // last entry
	__u64 total_ns;  // time inside, completed calls
	__u64 max_ns;    // longest completed call
	__s64 pending;   // nonblocking: started, request not completed yet
	__u64 completed; // nonblocking: requests seen completing
	__u64 done_ns;   // nonblocking: total time from start to completion
};

// A nonblocking collective's request, from its start to its completion.
struct req_key {
	__u32 tgid;
	__u32 pad;
	__u64 req; // the MPI_Request value (a pointer in Open MPI, an int in MPICH)
};

struct req_val {
	__u32 idx; // coll_stats index
	__u32 pad;
	__u64 start_ns;
};

#define MAX_WAIT_REQS 16

// Per-thread state: the call in flight and a one-entry cache of the last
// communicator (valid while coll_gen has not moved: a freed handle may be
// reused by a different communicator).
struct coll_thread {
	__u64 comm;
	__u64 gen;
	__u32 slot;   // slot of comm, +1 (0: no cache)
	__u32 cur;    // coll_stats index in flight, +1 (0: none)
	__u32 depth;
	__u32 pad;
	__u64 enter_ns;
	__u64 req_ptr;  // nonblocking call in flight: where its request is written
	// A completion call in flight (MPI_Wait, MPI_Testall, ...): the
	// request array and the values it held at entry.
	__u64 wait_arr;
	__u32 wait_n;   // requests watched, 0: none
	__u32 wait_w;   // bytes per request: 8 (Open MPI) or 4 (MPICH)
	__u8 wait_h[MAX_WAIT_REQS * 8];
};

const struct coll_layout *unused_coll_layout __attribute__((unused));
const struct coll_key *unused_coll_key __attribute__((unused));
const struct coll_comm *unused_coll_comm __attribute__((unused));
const struct coll_stat *unused_coll_stat __attribute__((unused));
const struct req_key *unused_req_key __attribute__((unused));
const struct req_val *unused_req_val __attribute__((unused));

// Requests of nonblocking collectives not completed yet.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct req_key);
	__type(value, struct req_val);
} coll_reqs SEC(".maps");

// coll_pending[0] counts the entries of coll_reqs: completion calls return
// at once while it is 0.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s64);
} coll_pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, struct coll_layout);
} coll_layouts SEC(".maps");

// Slot counts below are set by the loader (a minimal size without --collectives).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct coll_key);
	__type(value, __u32);
} coll_index SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct coll_comm);
} coll_comms SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, COLL_MAX);
	__type(key, __u32);
	__type(value, struct coll_stat);
} coll_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 1);
	__type(value, __u32);
} coll_free SEC(".maps");

// coll_gen[0] moves whenever a communicator is freed anywhere.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} coll_gen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct coll_thread);
} coll_threads SEC(".maps");

static __always_inline __u32 read_u32(__u64 addr)
{
	__u32 v = 0;
	bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

static __always_inline __u64 read_u64(__u64 addr)
{
	__u64 v = 0;
	bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

// mpich_object returns the address of the MPIR_Comm a handle names, 0 if
// it cannot be decoded. bias is the library's load bias.
static __always_inline __u64 mpich_object(struct coll_layout *l, __u32 h, __u64 bias)
{
	__u32 kind = h >> 30;
	if (((h >> 26) & 0xf) != 1) // MPIR_COMM object type
		return 0;
	if (kind == 1)
		return bias + l->builtin + (__u64)(h & 0x03ffffff) * l->obj_size;
	if (kind == 2)
		return bias + l->direct + (__u64)(h & 0x03ffffff) * l->obj_size;
	if (kind == 3 && l->ind_index_mask) {
		__u64 blocks = read_u64(bias + l->mem + l->ind_blocks_off);
		if (!blocks)
			return 0;
		__u64 block = read_u64(blocks + 8 * (__u64)((h >> l->ind_shift) & l->ind_block_mask));
		if (!block)
			return 0;
		return block + (__u64)(h & l->ind_index_mask) * l->obj_size;
	}
	return 0;
}

// comm_slot returns the slot of a communicator of the current process,
// allocating it on first use; -1 if none is free.
static __always_inline int comm_slot(struct pt_regs *ctx, __u32 tgid, __u64 comm, __u64 cookie)
{
	__u32 li = (cookie >> 12) & 0xf;
	struct coll_layout *l = bpf_map_lookup_elem(&coll_layouts, &li);
	struct coll_comm info = { .tgid = tgid, .handle = comm, .size = -1, .rank = -1 };
	__u64 obj = 0;
	if (l && l->kind == LAYOUT_OMPI && comm)
		obj = comm;
	else if (l && l->kind == LAYOUT_MPICH)
		obj = mpich_object(l, (__u32)comm, PT_REGS_IP(ctx) - (cookie >> 32));
	if (obj && l) {
		info.id = read_u32(obj + l->cid_off) & l->cid_mask;
		info.rank = (__s32)read_u32(obj + l->rank_off);
		if (l->kind == LAYOUT_OMPI) {
			__u64 g = read_u64(obj + l->group_off);
			info.size = g ? (__s32)read_u32(g + l->size_off) : -1;
		} else {
			info.size = (__s32)read_u32(obj + l->size_off);
		}
	} else {
		info.flags = COMM_LOCAL;
		info.id = comm;
	}
	struct coll_key key = { .tgid = tgid, .flags = info.flags, .id = info.id, .size = info.size };
	__u32 *s = bpf_map_lookup_elem(&coll_index, &key);
	if (s)
		return *s;
	__u32 slot;
	if (bpf_map_pop_elem(&coll_free, &slot) != 0)
		return -1;
	struct coll_comm *c = bpf_map_lookup_elem(&coll_comms, &slot);
	if (!c)
		return -1;
	*c = info;
	if (bpf_map_update_elem(&coll_index, &key, &slot, BPF_NOEXIST) != 0) {
		// Another thread of the process allocated it first: give ours back.
		bpf_map_push_elem(&coll_free, &slot, 0);
		s = bpf_map_lookup_elem(&coll_index, &key);
		return s ? *s : -1;
	}
	return slot;
}

static __always_inline int do_coll_enter(struct pt_regs *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct coll_thread *th = bpf_task_storage_get(&coll_threads, task, 0, 0);
	if (!th) {
		// First collective of this thread: is its process traced?
		__u32 tgid = bpf_get_current_pid_tgid() >> 32;
		if (!bpf_map_lookup_elem(&traced, &tgid))
			return 0;
		th = bpf_task_storage_get(&coll_threads, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!th)
			return 0;
	}
	if (th->depth > 0) {
		th->depth++;
		return 0;
	}
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 comm = arg(ctx, (cookie >> 8) & 0xf);
	__u32 zero = 0;
	__u64 *gen = bpf_map_lookup_elem(&coll_gen, &zero);
	__u64 g = gen ? *gen : 0;
	__u32 slot;
	if (th->slot && th->comm == comm && th->gen == g) {
		slot = th->slot - 1;
	} else {
		int s = comm_slot(ctx, bpf_get_current_pid_tgid() >> 32, comm, cookie);
		if (s < 0) {
			drop(DROP_COLL_FULL);
			return 0;
		}
		slot = s;
		th->comm = comm;
		th->gen = g;
		th->slot = slot + 1;
	}
	__u32 idx = slot * COLL_MAX + (cookie & (COLL_MAX - 1));
	struct coll_stat *st = bpf_map_lookup_elem(&coll_stats, &idx);
	if (!st)
		return 0;
	// MPI forbids two threads to be in collectives on one communicator at
	// once, so a counter block has one writer at a time: no atomics needed.
	__u64 now = bpf_ktime_get_ns();
	st->calls++;
	st->inside++;
	st->since_ns = now;
	th->cur = idx + 1;
	th->enter_ns = now;
	th->depth = 1;
	__u32 ra = (cookie >> 16) & 0xf;
	th->req_ptr = ra ? arg(ctx, ra) : 0;
	return 0;
}

static __always_inline int do_coll_exit(struct pt_regs *ctx)
{
	struct coll_thread *th = bpf_task_storage_get(&coll_threads, bpf_get_current_task_btf(), 0, 0);
	if (!th || th->depth == 0)
		return 0;
	if (--th->depth > 0)
		return 0;
	__u32 idx = th->cur - 1;
	th->cur = 0;
	struct coll_stat *st = bpf_map_lookup_elem(&coll_stats, &idx);
	if (!st)
		return 0;
	__u64 dt = bpf_ktime_get_ns() - th->enter_ns;
	st->inside--;
	st->total_ns += dt;
	if (dt > st->max_ns)
		st->max_ns = dt;
	if (th->req_ptr) {
		__u64 rp = th->req_ptr;
		th->req_ptr = 0;
		if ((__s32)PT_REGS_RC(ctx) != 0)
			return 0; // not started: no request to complete
		struct req_key k = { .tgid = bpf_get_current_pid_tgid() >> 32 };
		if ((bpf_get_attach_cookie(ctx) >> 20) & 1)
			k.req = read_u32(rp);
		else
			k.req = read_u64(rp);
		struct req_val v = { .idx = idx, .start_ns = th->enter_ns };
		if (bpf_map_update_elem(&coll_reqs, &k, &v, BPF_ANY) == 0) {
			st->pending++;
			__u32 zero = 0;
			__s64 *n = bpf_map_lookup_elem(&coll_pending, &zero);
			if (n)
				__sync_fetch_and_add(n, 1);
		} else {
			drop(DROP_COLL_FULL);
		}
	}
	return 0;
}

static __always_inline int do_wait_enter(struct pt_regs *ctx)
{
	__u32 zero = 0;
	__s64 *pending = bpf_map_lookup_elem(&coll_pending, &zero);
	if (!pending || *pending <= 0)
		return 0; // no nonblocking collective outstanding anywhere
	struct task_struct *task = bpf_get_current_task_btf();
	struct coll_thread *th = bpf_task_storage_get(&coll_threads, task, 0, 0);
	if (!th) {
		__u32 tgid = bpf_get_current_pid_tgid() >> 32;
		if (!bpf_map_lookup_elem(&traced, &tgid))
			return 0;
		th = bpf_task_storage_get(&coll_threads, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!th)
			return 0;
	}
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 ca = (cookie >> 4) & 0xf;
	__s32 n = ca ? (__s32)arg(ctx, ca) : 1;
	if (n <= 0)
		return 0;
	if (n > MAX_WAIT_REQS)
		n = MAX_WAIT_REQS; // the rest are not followed
	__u32 w = ((cookie >> 20) & 1) ? 4 : 8;
	__u64 arr = arg(ctx, cookie & 0xf);
	__u64 size = ((__u64)n * w) & 0xff;
	if (size > sizeof(th->wait_h))
		size = sizeof(th->wait_h);
	if (bpf_probe_read_user(th->wait_h, size, (void *)arr) != 0)
		return 0;
	th->wait_arr = arr;
	th->wait_n = n;
	th->wait_w = w;
	return 0;
}

// wait_req returns request i of a request array image.
static __always_inline __u64 wait_req(__u8 *b, __u32 i, __u32 w)
{
	if (w == 4)
		return *(__u32 *)(b + (i & (MAX_WAIT_REQS - 1)) * 4);
	return *(__u64 *)(b + (i & (MAX_WAIT_REQS - 1)) * 8);
}

static __always_inline int do_wait_exit(struct pt_regs *ctx)
{
	struct coll_thread *th = bpf_task_storage_get(&coll_threads, bpf_get_current_task_btf(), 0, 0);
	if (!th || th->wait_n == 0)
		return 0;
	__u32 n = th->wait_n, w = th->wait_w;
	th->wait_n = 0;
	__u8 now_h[MAX_WAIT_REQS * 8] = {};
	__u64 size = ((__u64)n * w) & 0xff;
	if (size > sizeof(now_h))
		size = sizeof(now_h);
	if (bpf_probe_read_user(now_h, size, (void *)th->wait_arr) != 0)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	struct req_key k = { .tgid = bpf_get_current_pid_tgid() >> 32 };
	__u32 zero = 0;
	for (__u32 i = 0; i < MAX_WAIT_REQS; i++) {
		if (i >= n)
			break;
		__u64 before = wait_req(th->wait_h, i, w);
		// A completed request is set to MPI_REQUEST_NULL in the array.
		if (before == wait_req(now_h, i, w))
			continue;
		k.req = before;
		struct req_val *v = bpf_map_lookup_elem(&coll_reqs, &k);
		if (!v)
			continue;
		__u32 idx = v->idx;
		struct coll_stat *st = bpf_map_lookup_elem(&coll_stats, &idx);
		if (st) {
			st->pending--;
			st->completed++;
			st->done_ns += now - v->start_ns;
		}
		if (bpf_map_delete_elem(&coll_reqs, &k) == 0) {
			__s64 *p = bpf_map_lookup_elem(&coll_pending, &zero);
			if (p)
				__sync_fetch_and_add(p, -1);
		}
	}
	return 0;
}

// coll_wait_enter / coll_wait_exit run around the completion calls
// (MPI_Wait, MPI_Test and their -all, -any, -some forms) with
// --collectives: a nonblocking collective completes when its request does.
SEC("uprobe.multi")
int coll_wait_enter(struct pt_regs *ctx) { return do_wait_enter(ctx); }

SEC("uretprobe.multi")
int coll_wait_exit(struct pt_regs *ctx) { return do_wait_exit(ctx); }

SEC("uprobe")
int coll_wait_enter_single(struct pt_regs *ctx) { return do_wait_enter(ctx); }

SEC("uprobe")
int coll_wait_exit_single(struct pt_regs *ctx) { return do_wait_exit(ctx); }

// coll_enter / coll_exit run at the entry and return of every collective
// with --collectives.
SEC("uprobe")
int coll_enter(struct pt_regs *ctx) { return do_coll_enter(ctx); }

SEC("uprobe.multi")
int coll_enter_multi(struct pt_regs *ctx) { return do_coll_enter(ctx); }

SEC("uprobe")
int coll_exit(struct pt_regs *ctx) { return do_coll_exit(ctx); }

SEC("uretprobe.multi")
int coll_exit_multi(struct pt_regs *ctx) { return do_coll_exit(ctx); }

// coll_comm_free runs at the entry of MPI_Comm_free and MPI_Comm_disconnect:
// a handle may now be reused for another communicator, so every thread's
// cached communicator is stale.
SEC("uprobe")
int coll_comm_free(struct pt_regs *ctx)
{
	__u32 zero = 0;
	__u64 *gen = bpf_map_lookup_elem(&coll_gen, &zero);
	if (gen)
		__sync_fetch_and_add(gen, 1);
	return 0;
}

// ---- mpiprobe status: what each thread of a process is doing now ----

#define MAX_RETPROBES 8

// One thread's user registers, as saved at its last entry into the kernel
// (a system call, or the timer interrupt of a thread spinning in user mode),
// and the return addresses that pending uretprobes (mpiprobe's own, or any
// other tool's) replaced on its stack with their trampoline: ret_stack[i]
// is where on the stack, ret_orig[i] the real address.
struct task_regs {
	__u32 tgid;
	__u32 tid;
	__u64 ip;
	__u64 sp;
	__u64 bp;
	__u32 nret;
	__u32 pad;
	__u64 ret_stack[MAX_RETPROBES];
	__u64 ret_orig[MAX_RETPROBES];
};

const struct task_regs *unused_task_regs __attribute__((unused));

// MPI calls entered per thread while status watches (status_calls).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32); // tid
	__type(value, __u64);
} status_calls SEC(".maps");

// status_enter counts the MPI calls each thread of a traced process enters.
SEC("uprobe.multi")
int status_enter(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	if (!bpf_map_lookup_elem(&traced, &tgid))
		return 0;
	__u32 tid = (__u32)pid_tgid;
	__u64 *n = bpf_map_lookup_elem(&status_calls, &tid);
	if (n) {
		__sync_fetch_and_add(n, 1);
		return 0;
	}
	__u64 one = 1;
	bpf_map_update_elem(&status_calls, &tid, &one, BPF_NOEXIST);
	return 0;
}

// dump_regs writes a struct task_regs for every thread of a traced process.
SEC("iter/task")
int dump_regs(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	if (!task)
		return 0;
	__u32 tgid = task->tgid;
	if (!bpf_map_lookup_elem(&traced, &tgid))
		return 0;
	struct pt_regs___kern *regs = (struct pt_regs___kern *)bpf_task_pt_regs(task);
	if (!regs)
		return 0;
	struct task_regs r = {
		.tgid = tgid,
		.tid = task->pid,
		.ip = BPF_CORE_READ(regs, ip),
		.sp = BPF_CORE_READ(regs, sp),
		.bp = BPF_CORE_READ(regs, bp),
	};
	struct return_instance *ri = BPF_CORE_READ(task, utask, return_instances);
	for (int i = 0; i < MAX_RETPROBES && ri; i++) {
		r.ret_stack[i] = BPF_CORE_READ(ri, stack);
		r.ret_orig[i] = BPF_CORE_READ(ri, orig_ret_vaddr);
		r.nret = i + 1;
		ri = BPF_CORE_READ(ri, next);
	}
	bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
	return 0;
}

// empty does nothing: the benchmark attaches it where count_event would go,
// to measure the uprobe mechanism's own cost on the same symbol.
SEC("uprobe")
int empty(struct pt_regs *ctx)
{
	return 0;
}

// ---- Events that name their instance, or need their entry's arguments at return ----
//
// These programs count through count_hit like count_event; the cookie's
// bits 0-15 are the event, bits 24-27 their parameter.

#define STASH_SLOTS 4

// Per-thread values kept from a function's entry for its return (slot from
// the cookie), and the gates of gate_open / gate_count.
struct arg_stash {
	__u64 v[STASH_SLOTS];
	__u64 gates;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct arg_stash);
} arg_stashes SEC(".maps");

static __always_inline struct arg_stash *stash_get(__u64 create)
{
	return bpf_task_storage_get(&arg_stashes, bpf_get_current_task_btf(), 0,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

// stashed returns what stash_arg kept in the slot of cookie bits 24-25, 0 if nothing.
static __always_inline __u64 stashed(__u64 cookie)
{
	struct arg_stash *st = stash_get(0);
	return st ? st->v[(cookie >> 24) & (STASH_SLOTS - 1)] : 0;
}

// gate_take closes the gate of cookie bits 24-29 and says whether it was open.
static __always_inline int gate_take(__u64 cookie)
{
	struct arg_stash *st = stash_get(0);
	__u64 bit = 1ULL << ((cookie >> 24) & 0x3f);
	if (!st || !(st->gates & bit))
		return 0;
	st->gates &= ~bit;
	return 1;
}

static __always_inline int traced_now(__u32 *tgid)
{
	*tgid = bpf_get_current_pid_tgid() >> 32;
	return bpf_map_lookup_elem(&traced, tgid) != 0;
}

// stash_arg keeps argument n (cookie bits 20-23) of the entry in slot
// (cookie bits 24-25), for a return program of the same function.
SEC("uprobe")
int stash_arg(struct pt_regs *ctx)
{
	__u32 tgid;
	if (!traced_now(&tgid))
		return 0;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct arg_stash *st = stash_get(1);
	if (st)
		st->v[(cookie >> 24) & (STASH_SLOTS - 1)] = arg_value(ctx, (cookie >> 20) & 0xf);
	return 0;
}

// Where opal_free_list_t keeps what these programs read differs between
// libopen-pal builds; probes.FreeListLayout resolves it per library file and
// the cookie's operand bits carry it: three 10-bit counts of 8-byte words.
//   bits 32-41  size_t fl_max_to_alloc (0 = unlimited)
//   bits 42-51  size_t fl_num_allocated
//   bits 52-61  opal_class_t *fl_frag_class; its first field is the class name
#define FL_MAX_TO_ALLOC(c) ((((c) >> 32) & 0x3ff) * 8)
#define FL_NUM_ALLOCATED(c) ((((c) >> 42) & 0x3ff) * 8)
#define FL_FRAG_CLASS(c) ((((c) >> 52) & 0x3ff) * 8)
#define OPAL_ERR_TEMP_OUT_OF_RESOURCE (-3)

// free_list_grow: entry of opal_free_list_grow_st(flist, num_elements, ...)
// on a list that was allocated before (the first allocation is not growth).
// The detail is the list's item class; the peak the size it grows to.
SEC("uprobe")
int free_list_grow(struct pt_regs *ctx)
{
	__u32 tgid;
	if (!traced_now(&tgid))
		return 0;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 fl = PT_REGS_PARM1(ctx);
	__u64 n = PT_REGS_PARM2(ctx);
	__u64 have = read_u64(fl + FL_NUM_ALLOCATED(cookie));
	if (!have)
		return 0;
	__u64 lim = read_u64(fl + FL_MAX_TO_ALLOC(cookie));
	if (lim && have >= lim)
		return 0; // at its maximum: it cannot grow (free_list_at_max counts that)
	__u64 size = have + n;
	if (lim && size > lim)
		size = lim;
	__u64 cls = read_u64(fl + FL_FRAG_CLASS(cookie));
	count_hit(tgid, cookie & 0xffff, cls, size, cls ? read_u64(cls) : 0);
	return 0;
}

// free_list_at_max: return of opal_free_list_grow_st with
// OPAL_ERR_TEMP_OUT_OF_RESOURCE, the list at its maximum; the list comes
// from stash_arg's slot (cookie bits 24-25). Peak: the maximum.
SEC("uretprobe")
int free_list_at_max(struct pt_regs *ctx)
{
	__u32 tgid;
	if (!traced_now(&tgid))
		return 0;
	if ((__s32)PT_REGS_RC(ctx) != OPAL_ERR_TEMP_OUT_OF_RESOURCE)
		return 0;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 fl = stashed(cookie);
	if (!fl)
		return 0;
	__u64 cls = read_u64(fl + FL_FRAG_CLASS(cookie));
	count_hit(tgid, cookie & 0xffff, cls, read_u64(fl + FL_MAX_TO_ALLOC(cookie)), cls ? read_u64(cls) : 0);
	return 0;
}

#define ERR_OMPI 1  // ompi_errhandler_invoke(eh, obj, type, err_code, message)
#define ERR_MPICH 2 // MPIR_Err_return_comm(comm, fcname, errcode): class in the low 7 bits

// mpi_error: an MPI error on its way back to the application. The detail
// is the error class in bits 0-6, bit 7 set for MPICH, and the address of
// the API name above them (one per function); the name is the API name.
SEC("uprobe")
int mpi_error(struct pt_regs *ctx)
{
	__u32 tgid;
	if (!traced_now(&tgid))
		return 0;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	// Load every register at its own constant offset before choosing:
	// the verifier refuses a context offset chosen by a branch.
	__u64 a2 = PT_REGS_PARM2(ctx), a3 = PT_REGS_PARM3(ctx), a4 = PT_REGS_PARM4(ctx), a5 = PT_REGS_PARM5(ctx);
	asm volatile("" : "+r"(a2), "+r"(a3), "+r"(a4), "+r"(a5));
	__u64 code, name;
	if (((cookie >> 24) & 0xf) == ERR_MPICH) {
		name = a2;
		code = (a3 & 0x7f) | 0x80;
	} else {
		code = a4 & 0x7f;
		name = a5;
	}
	count_hit(tgid, cookie & 0xffff, (name << 8) | code, 0, name);
	return 0;
}

// async_event_ret: return of ibv_get_async_event(ctx, event) == 0 with
// event->event_type (u32 at +8) equal to the cookie's operand; the event
// pointer comes from stash_arg's slot.
SEC("uretprobe")
int async_event_ret(struct pt_regs *ctx)
{
	__u32 tgid;
	if (!traced_now(&tgid))
		return 0;
	if ((__s32)PT_REGS_RC(ctx) != 0)
		return 0;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 ev = stashed(cookie);
	if (!ev || read_u32(ev + 8) != (__u32)(cookie >> 32))
		return 0;
	count_hit(tgid, cookie & 0xffff, 0, 0, 0);
	return 0;
}

// gate_open opens the calling thread's gate (cookie bits 24-29) at a
// function's entry; gate_count, at a place inside it, counts once per
// opening and closes the gate. Together they count calls that reached that
// place, however often they reach it.
SEC("uprobe")
int gate_open(struct pt_regs *ctx)
{
	__u32 tgid;
	if (!traced_now(&tgid))
		return 0;
	struct arg_stash *st = stash_get(1);
	if (st)
		st->gates |= 1ULL << ((bpf_get_attach_cookie(ctx) >> 24) & 0x3f);
	return 0;
}

SEC("uprobe")
int gate_count(struct pt_regs *ctx)
{
	__u32 tgid;
	if (!traced_now(&tgid))
		return 0;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	if (gate_take(cookie))
		count_hit(tgid, cookie & 0xffff, 0, 0, 0);
	return 0;
}

// gate_close closes the calling thread's gate (cookie bits 24-29) without
// counting: the call took the path that is not the event.
SEC("uprobe")
int gate_close(struct pt_regs *ctx)
{
	__u32 tgid;
	if (!traced_now(&tgid))
		return 0;
	gate_take(bpf_get_attach_cookie(ctx));
	return 0;
}
