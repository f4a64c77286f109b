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
//   bits 32-63  operand (signed 32-bit)
#define CMP_ALWAYS 0
#define CMP_EQ 1
#define CMP_NE 2
#define CMP_LT 3
#define CMP_GT 4

// Indexes of the drops array: what could not be recorded because a map was full.
enum drop_reason {
	DROP_COUNTS_FULL = 0,
	DROP_TRACED_FULL = 1,
	DROP_RINGBUF_FULL = 2,
	DROP_MAX = 3,
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

struct count_key {
	__u32 tgid;
	__u32 event;
};

struct count_val {
	__u64 count;
	__u64 first_ns;
	__u64 last_ns;
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

// Force bpf2go to emit Go types for these.
const struct trace_event *unused_trace_event __attribute__((unused));
const struct proc_event *unused_proc_event __attribute__((unused));
const struct count_key *unused_count_key __attribute__((unused));
const struct count_val *unused_count_val __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u32);
} traced SEC(".maps");

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
	}
	return 0;
}

// count_event serves every counting entry of the catalog, as uprobe or uretprobe.
SEC("uprobe")
int count_event(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	if (!bpf_map_lookup_elem(&traced, &tgid))
		return 0;

	__u64 cookie = bpf_get_attach_cookie(ctx);
	if (!condition_holds(ctx, cookie))
		return 0;

	struct count_key key = { .tgid = tgid, .event = cookie & 0xffff };
	__u64 now = bpf_ktime_get_ns();
	struct count_val *v = bpf_map_lookup_elem(&counts, &key);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		v->last_ns = now;
		return 0;
	}
	struct count_val init = { .count = 1, .first_ns = now, .last_ns = now };
	if (bpf_map_update_elem(&counts, &key, &init, BPF_NOEXIST) == 0)
		return 0;
	// Another CPU created the entry first, or the map is full.
	v = bpf_map_lookup_elem(&counts, &key);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		v->last_ns = now;
	} else {
		drop(DROP_COUNTS_FULL);
	}
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
	if (!flags)
		return 0;
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
	notify(PROC_EXIT, tgid, 0, BPF_CORE_READ(p, exit_code));
	bpf_map_delete_elem(&traced, &tgid);
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

// empty does nothing: the benchmark attaches it where count_event would go,
// to measure the uprobe mechanism's own cost on the same symbol.
SEC("uprobe")
int empty(struct pt_regs *ctx)
{
	return 0;
}
