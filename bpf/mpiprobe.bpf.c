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
};

// Flags of a traced process.
#define TRACED_FOLLOW 1 // add its children to the traced set

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

// Force bpf2go to emit Go types for these.
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
	if (!bpf_map_lookup_elem(&traced, &tgid))
		return 0;
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

// empty does nothing: the benchmark attaches it where count_event would go,
// to measure the uprobe mechanism's own cost on the same symbol.
SEC("uprobe")
int empty(struct pt_regs *ctx)
{
	return 0;
}
