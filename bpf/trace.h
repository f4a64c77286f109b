// Trace mode: trace_enter, trace_fortran_enter and trace_exit record every
// MPI call the application makes on a traced thread (its state in a slot
// of trace_owned indexed by its tid, or in task storage on a collision), C
// or Fortran, staging records per CPU in trace_stage and moving them
// TRACE_BATCH at a time into the trace_events ring buffer, counting per
// process what did not fit in trace_lost. Calls made from inside an MPI
// function (a Fortran binding's conversions, a library's own calls) are not.

#ifndef MPIPROBE_TRACE_H
#define MPIPROBE_TRACE_H

#include "common.h"
#include "lifecycle.h"

// One MPI call of a traced thread, sent through trace_events at its return
// (trace mode). Field order keeps it free of padding: 64 bytes.
struct trace_event {
	__u32 tgid;
	__u32 tid;
	__u64 site;     // return address into the caller of the outermost MPI function
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
// hash keyed by tid, and freed with the thread). Only calls the application
// makes are recorded: depth counts the MPI functions, C or Fortran, in
// flight on the thread, and only the outermost one (depth 1) is recorded,
// at its caller's site. What it calls is the library's own business: a
// Fortran binding's handle conversions and the C function it implements,
// or the MPI calls a collective makes inside libmpi.
struct trace_thread {
	__u64 mm;       // the task's mm when the state was set up: another after an exec
	__u64 pid_tgid; // the task's, when the state was set up (an exec resets it)
	__u64 enter_ns;
	__s64 count;
	__s32 peer;
	__s32 root;
	__s32 elem_size;
	__s32 ret;        // for a Fortran binding: its C call's return value
	__u32 depth;      // MPI functions in flight on the thread; 0: none
	__u32 impl_depth; // depth of the C call a Fortran binding implements, while it runs
	__u16 call;       // call index of the outermost call
	__u8 fortran;     // the outermost call is a Fortran binding
	__u8 pending;     // ... whose C call has not started yet
	__s32 dt_size;    // the size last read of datatype dt ...
	__u64 dt;
	__u64 dt_gen;     // ... while trace_dt_gen was this
};

// The trace cookie (64 bits), written by probes.TraceCookie: the call
// index, the arguments (1..ARG_MAX, 0 none) holding what is recorded, and
// the kind of the datatype argument.
enum trace_cookie {
	TRACE_CALL_SHIFT = 0, // index into the loader's call table
	TRACE_CALL_BITS = 16,
	TRACE_PEER_SHIFT = 16, // argument holding the peer rank
	TRACE_COUNT_SHIFT = 20, // argument holding the element count
	TRACE_DATATYPE_SHIFT = 24, // argument holding the datatype
	TRACE_ROOT_SHIFT = 28, // argument holding the root
	TRACE_ARG_BITS = 4,
	TRACE_KIND_SHIFT = 32, // enum datatype_kind
	TRACE_KIND_BITS = 2,
	// The function is recorded at its entry, as a call of no duration
	// and return value 0, and has no return probe: local queries
	// (MPI_Wtime, MPI_Comm_rank) whose duration is a few ns, where a return
	// probe would cost a hundred times the call.
	TRACE_ENTRY_ONLY_SHIFT = 34,
	// The function may free or make datatypes (MPI_Type_*): the sizes
	// threads keep of the datatypes they passed may be stale after it.
	TRACE_TYPES_SHIFT = 35,
	// The probe sits this many 8-byte words into the function's stack frame
	// (entry-only probes placed after a prologue the kernel would have
	// to single-step): the return address is at sp + 8 * words.
	TRACE_FRAME_SHIFT = 40,
	TRACE_FRAME_BITS = 8,
};

_Static_assert(ARG_MAX < 1 << TRACE_ARG_BITS, "an argument number does not fit its trace cookie field");

// How an element size is read out of a datatype argument.
enum datatype_kind {
	DT_UNKNOWN = 0,
	DT_OMPI = 1,  // a pointer to ompi_datatype_t: size_t size at DT_OMPI_SIZE_OFF
	DT_MPICH = 2, // an int handle: builtin types have their size in bits 8-15
};

_Static_assert(DT_MPICH < 1 << TRACE_KIND_BITS, "a datatype kind does not fit its trace cookie field");

#define TRACE_NONE (-2147483647 - 1)
#define DT_OMPI_SIZE_OFF 24

// Records are staged per CPU and sent to the ring buffer TRACE_BATCH at a
// time: a ring buffer record costs a lock and a producer position shared by
// every CPU (about 90 ns of the exit program's 215 here), and the reader
// pays per record too. A ring record is thus a multiple of struct
// trace_event: TRACE_BATCH of them, or one when the stage was busy.
enum trace_batch {
	TRACE_BATCH = 32, // a power of two
};

_Static_assert((TRACE_BATCH & (TRACE_BATCH - 1)) == 0, "TRACE_BATCH is not a power of two");

// The calls of one CPU not yet in the ring buffer. The recorder reads what
// is left of every CPU's when it stops. busy guards it against a program
// of another task on the same CPU, which a preemptible kernel can run in
// the middle of this one.
struct trace_stage {
	__u32 n; // events staged, < TRACE_BATCH
	__u32 pad;
	__u64 busy; // 64 bits: the BPF instruction set's exchange

	struct trace_event ev[TRACE_BATCH];
};

// Force bpf2go to emit Go types for these.
const struct trace_event *unused_trace_event __attribute__((unused));
const struct trace_stage *unused_trace_stage __attribute__((unused));
const enum trace_batch *unused_trace_batch __attribute__((unused));
const enum trace_cookie *unused_trace_cookie __attribute__((unused));
const enum datatype_kind *unused_datatype_kind __attribute__((unused));

// The ring buffer's size is set by the loader before loading.
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} trace_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct trace_stage);
} trace_stages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct trace_thread);
} trace_threads SEC(".maps");

// Thread states in slots of an array indexed by tid (tid &
// trace_slot_mask): an array lookup is inlined by the verifier, and two of
// them per call cost less than two task-storage lookups. owner says whose
// state a slot holds; a thread whose slot another thread holds keeps its
// state in trace_threads instead. The loader sizes the array from pid_max
// (1 entry, mask 0, outside trace mode); a thread's exit frees its slot.
struct trace_owned {
	__u64 owner; // the owning task (its address), 0 none
	__u64 start; // its start_time: a later task can reuse the address
	struct trace_thread th;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct trace_owned);
} trace_owned SEC(".maps");

// trace_slot_mask is the array's size less one (a power of two less one).
volatile const __u32 trace_slot_mask = 0;

// trace_owned_state returns the slot of trace_owned a task maps to (NULL if
// none), in *slot, and the task's state there if the task owns it.
static __always_inline struct trace_thread *trace_owned_state(struct task_struct *task, struct trace_owned **slot)
{
	__u32 i = (__u32)task->pid & trace_slot_mask;
	struct trace_owned *o = bpf_map_lookup_elem(&trace_owned, &i);
	*slot = o;
	if (o && o->owner == (__u64)task && o->start == task->start_time)
		return &o->th;
	return 0;
}

// trace_dt_gen[0] moves at every call that may free or make a datatype:
// a thread reads a datatype's size again when it moved (or the datatype
// differs), instead of at every call.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} trace_dt_gen SEC(".maps");

// Calls that could not be recorded (ring buffer full), per process.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32); // tgid
	__type(value, __u64);
} trace_lost SEC(".maps");

#define TRACE_CALL(c) BITS(c, TRACE_CALL_SHIFT, TRACE_CALL_BITS)
#define TRACE_ARG(c, shift) BITS(c, shift, TRACE_ARG_BITS)

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

// trace_lose counts a call the ring buffer had no room for.
static __always_inline void trace_lose(__u32 tgid)
{
	__u64 one = 1;
	__u64 *n = bpf_map_lookup_elem(&trace_lost, &tgid);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&trace_lost, &tgid, &one, BPF_NOEXIST);
}

// trace_wake_mark is set by the loader to an eighth of the ring buffer's
// size; 0 (counting mode) never wakes the reader.
volatile const __u64 trace_wake_mark = 0;

// trace_wake says how to hand a record of size bytes to the reader. The
// reader reads on a timer; waking it for every record costs more than the
// probe itself, and so does forcing a wakeup for every record while the
// ring stays above a mark (when the reader lags). It is woken once, by the
// record that makes the ring cross an eighth full (a window of two
// records, for records of other CPUs in between); a crossing missed is
// read at the timer.
static __always_inline __u64 trace_wake(__u64 size)
{
	if (trace_wake_mark) {
		__u64 avail = bpf_ringbuf_query(&trace_events, BPF_RB_AVAIL_DATA);
		if (avail >= trace_wake_mark && avail < trace_wake_mark + 2 * (size + 8))
			return BPF_RB_FORCE_WAKEUP;
	}
	return BPF_RB_NO_WAKEUP;
}

// trace_slot returns where to write one call: the next slot of this CPU's
// stage, taken (*st set), or spare (*st NULL) when the stage is busy (a
// program of another task, preempted on this CPU, holds it). The caller
// fills every field and calls trace_commit.
static __always_inline struct trace_event *trace_slot(struct trace_stage **st, struct trace_event *spare)
{
	__u32 zero = 0;
	struct trace_stage *s = bpf_map_lookup_elem(&trace_stages, &zero);
	if (!s || __sync_lock_test_and_set(&s->busy, 1)) {
		*st = 0;
		return spare;
	}
	*st = s;
	return &s->ev[s->n & (TRACE_BATCH - 1)];
}

// trace_commit hands the call written at trace_slot's slot on: the stage
// goes to the ring buffer once it holds TRACE_BATCH calls; a spare call
// goes alone.
static __always_inline void trace_commit(struct trace_stage *st, struct trace_event *e)
{
	if (!st) {
		if (bpf_ringbuf_output(&trace_events, e, sizeof(*e), trace_wake(sizeof(*e))))
			trace_lose(e->tgid);
		return;
	}
	__u32 n = (st->n & (TRACE_BATCH - 1)) + 1;
	if (n < TRACE_BATCH) {
		st->n = n;
		st->busy = 0;
		return;
	}
	st->n = 0;
	if (bpf_ringbuf_output(&trace_events, st->ev, sizeof(st->ev), trace_wake(sizeof(st->ev)))) {
		for (int i = 0; i < TRACE_BATCH; i++)
			trace_lose(st->ev[i].tgid);
	}
	st->busy = 0;
}

// trace_args reads the recorded arguments of the function just entered,
// as its cookie names them.
static __always_inline void trace_args(struct pt_regs *ctx, struct trace_thread *th, __u64 cookie)
{
	__u32 a;
	if ((a = TRACE_ARG(cookie, TRACE_PEER_SHIFT)))
		th->peer = (__s32)arg(ctx, a);
	if ((a = TRACE_ARG(cookie, TRACE_COUNT_SHIFT)))
		th->count = (__s32)arg(ctx, a);
	if ((a = TRACE_ARG(cookie, TRACE_DATATYPE_SHIFT))) {
		__u64 dt = arg(ctx, a);
		__u32 kind = BITS(cookie, TRACE_KIND_SHIFT, TRACE_KIND_BITS);
		if (kind == DT_OMPI) {
			// The size is a user-memory read (~60 ns), and a loop
			// passes the same datatype again and again.
			__u32 zero = 0;
			__u64 *g = bpf_map_lookup_elem(&trace_dt_gen, &zero);
			__u64 gen = g ? *g : 0;
			if (dt != th->dt || gen != th->dt_gen) {
				th->dt_size = elem_size(dt, kind);
				th->dt = dt;
				th->dt_gen = gen;
			}
			th->elem_size = th->dt_size;
		} else {
			th->elem_size = elem_size(dt, kind); // no memory read
		}
	}
	if ((a = TRACE_ARG(cookie, TRACE_ROOT_SHIFT)))
		th->root = (__s32)arg(ctx, a);
}

// trace_thread_slow finds or makes the state of a thread that does not
// own its trace_owned slot (or exec'd since): its first MPI call in this
// program (state is made only for traced processes: the traced lookup is
// not made on every call), or a thread whose slot another owns. At no
// call in flight, it takes the slot when free, or when it holds its own
// address (whoever had it is gone).
static __always_inline struct trace_thread *trace_thread_slow(struct task_struct *task, __u64 mm, struct trace_owned *slot)
{
	struct trace_thread *th = bpf_task_storage_get(&trace_threads, task, 0, 0);
	if (th && th->mm == mm && th->depth > 0)
		return th; // a call in flight: its state stays where it is
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!th || th->mm != mm) {
		__u32 tgid = pid_tgid >> 32;
		__u32 *flags = bpf_map_lookup_elem(&traced, &tgid);
		if (!flags)
			return 0;
		if (!(*flags & TRACED_SEEN)) {
			// Tell mpiprobe at once, so that it reads who the process
			// is and its memory map while it lives: the calls
			// themselves may reach it only after a short program has
			// exited.
			*flags |= TRACED_SEEN; // two threads may both notify: harmless
			notify(PROC_MPI, tgid, 0, 0);
		}
	}
	int fresh = 0;
	if (slot && (slot->owner == (__u64)task ||
		     (slot->owner == 0 && __sync_val_compare_and_swap(&slot->owner, 0, (__u64)task) == 0))) {
		slot->start = task->start_time;
		th = &slot->th;
		fresh = 1;
	} else if (!th) {
		th = bpf_task_storage_get(&trace_threads, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!th)
			return 0;
	}
	if (fresh || th->mm != mm) {
		__builtin_memset(th, 0, sizeof(*th));
		th->mm = mm;
		th->pid_tgid = pid_tgid;
	}
	return th;
}

// do_trace_enter runs at the entry of an MPI C function (fortran 0) or a
// Fortran binding (fortran 1).
static __always_inline int do_trace_enter(struct pt_regs *ctx, int fortran)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 mm = (__u64)task->mm;
	struct trace_owned *slot;
	struct trace_thread *th = trace_owned_state(task, &slot);
	if (!th || th->mm != mm) {
		th = trace_thread_slow(task, mm, slot);
		if (!th)
			return 0;
	}
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 call = TRACE_CALL(cookie);
	__u64 entry_only = BITS(cookie, TRACE_ENTRY_ONLY_SHIFT, 1);
	if (BITS(cookie, TRACE_TYPES_SHIFT, 1)) {
		__u32 zero = 0;
		__u64 *g = bpf_map_lookup_elem(&trace_dt_gen, &zero);
		if (g)
			__sync_fetch_and_add(g, 1);
	}
	if (th->depth > 0) {
		// Called from inside MPI: not recorded. The first call of the
		// C function a Fortran binding implements gives the binding's
		// arguments (read from C registers, not Fortran references) and,
		// at its return, its result.
		if (th->pending && call == th->call) {
			th->pending = 0;
			trace_args(ctx, th, cookie);
			if (!entry_only)
				th->impl_depth = th->depth + 1;
		}
		if (!entry_only)
			th->depth++;
		return 0;
	}
	if (entry_only && !fortran) {
		__u64 site = read_u64(PT_REGS_SP(ctx) + 8 * BITS(cookie, TRACE_FRAME_SHIFT, TRACE_FRAME_BITS));
		__u64 now = bpf_ktime_get_ns();
		struct trace_stage *st;
		struct trace_event spare;
		struct trace_event *e = trace_slot(&st, &spare);
		e->tgid = th->pid_tgid >> 32;
		e->tid = (__u32)th->pid_tgid;
		e->site = site;
		e->enter_ns = now;
		e->exit_ns = now;
		e->count = TRACE_NONE;
		e->peer = TRACE_NONE;
		e->root = TRACE_NONE;
		e->elem_size = 0;
		e->ret = 0;
		e->call = call;
		e->flags = 0;
		e->pad = 0;
		trace_commit(st, e);
		return 0;
	}
	th->call = call; // the site is read at the return: where it returns to
	th->fortran = fortran;
	th->pending = fortran;
	th->impl_depth = 0;
	th->ret = 0;
	th->peer = TRACE_NONE;
	th->root = TRACE_NONE;
	th->count = TRACE_NONE;
	th->elem_size = 0;
	if (!fortran)
		trace_args(ctx, th, cookie);
	th->depth = 1;
	th->enter_ns = bpf_ktime_get_ns();
	return 0;
}

// do_trace_exit runs at the return of every MPI function, C or Fortran,
// that has an entry probe.
static __always_inline int do_trace_exit(struct pt_regs *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct trace_owned *slot;
	struct trace_thread *th = trace_owned_state(task, &slot);
	if (!th)
		th = bpf_task_storage_get(&trace_threads, task, 0, 0);
	if (!th || th->depth == 0)
		return 0;
	if (th->depth > 1) {
		if (th->depth == th->impl_depth) {
			th->ret = (__s32)PT_REGS_RC(ctx);
			th->impl_depth = 0;
		}
		th->depth--;
		return 0;
	}
	__u64 exit_ns = bpf_ktime_get_ns();
	th->depth = 0;
	struct trace_stage *st;
	struct trace_event spare;
	struct trace_event *e = trace_slot(&st, &spare);
	e->tgid = th->pid_tgid >> 32;
	e->tid = (__u32)th->pid_tgid;
	// At a return probe the kernel has put the return address back in
	// the instruction pointer: the site, without reading the stack.
	e->site = PT_REGS_IP(ctx);
	e->enter_ns = th->enter_ns;
	e->exit_ns = exit_ns;
	e->count = th->count;
	e->peer = th->peer;
	e->root = th->root;
	e->elem_size = th->elem_size;
	// A Fortran binding returns nothing: its C call's result stands for it.
	e->ret = th->fortran ? th->ret : (__s32)PT_REGS_RC(ctx);
	e->call = th->call;
	e->flags = 0;
	e->pad = 0;
	trace_commit(st, e);
	return 0;
}

static __always_inline int do_trace_c(struct pt_regs *ctx) { return do_trace_enter(ctx, 0); }

static __always_inline int do_trace_fortran(struct pt_regs *ctx) { return do_trace_enter(ctx, 1); }

// trace_enter (and trace_enter_multi) runs at the entry of every MPI
// function in trace mode.
UPROBE_TWINS(trace_enter, trace_enter_multi, do_trace_c)

// trace_exit (and trace_exit_multi) runs at the return of every MPI
// function and Fortran binding in trace mode (but the entry-only ones) and
// sends the outermost call of the thread to user space.
URETPROBE_TWINS(trace_exit, trace_exit_multi, do_trace_exit)

// trace_fortran_enter (and trace_fortran_enter_multi) runs at the entry of
// a Fortran binding: the binding is the application's call, at its
// caller's site, with the arguments and result of the C function it
// implements.
UPROBE_TWINS(trace_fortran_enter, trace_fortran_enter_multi, do_trace_fortran)

// trace_thread_exit frees the trace_owned slot of a thread that ends, for
// a later thread of the same slot (trace mode attaches it). It runs as the
// ending thread, and no other thread changes a slot it owns: a plain store
// frees it.
SEC("tp_btf/sched_process_exit")
int BPF_PROG(trace_thread_exit, struct task_struct *p)
{
	__u32 i = (__u32)p->pid & trace_slot_mask;
	struct trace_owned *o = bpf_map_lookup_elem(&trace_owned, &i);
	if (o && o->owner == (__u64)p)
		o->owner = 0;
	return 0;
}

#endif // MPIPROBE_TRACE_H
