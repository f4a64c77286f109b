// What every feature of mpiprobe's BPF side uses: the includes, the set of
// traced processes, the drops counters, reading arguments and user memory,
// and the macros that read cookie fields and define program twins.

#ifndef MPIPROBE_COMMON_H
#define MPIPROBE_COMMON_H

#include <linux/types.h>
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "mpiprobe_kernel.h"

// BITS reads the field of v that starts at bit shift and has bits bits:
// the enums of shifts and widths (exported to Go with bpf2go -type) say
// where each cookie keeps what.
#define BITS(v, shift, bits) (((v) >> (shift)) & ((1ULL << (bits)) - 1))

// PROBE_TWINS defines two programs that run the same fn: single for a
// uprobe or uretprobe link, one per function, and multi for a uprobe_multi
// link, which attaches a whole library's functions in one system call
// (kernel 6.6+). A single program is a uretprobe by how the loader
// attaches it, whatever its section.
#define PROBE_TWINS(single, multi, multi_sec, fn)                  \
	SEC("uprobe")                                              \
	int single(struct pt_regs *ctx) { return fn(ctx); }        \
	SEC(multi_sec)                                             \
	int multi(struct pt_regs *ctx) { return fn(ctx); }

// UPROBE_TWINS are PROBE_TWINS run at function entries.
#define UPROBE_TWINS(single, multi, fn) PROBE_TWINS(single, multi, "uprobe.multi", fn)

// URETPROBE_TWINS are PROBE_TWINS run at function returns.
#define URETPROBE_TWINS(single, multi, fn) PROBE_TWINS(single, multi, "uretprobe.multi", fn)

// The arguments a probe can read: the first six from registers, the rest
// from the stack (arg).
enum arg_limit {
	ARG_MAX = 12,
};

// Indexes of the drops array: what could not be recorded because a map was full.
enum drop_reason {
	DROP_COUNTS_FULL = 0,
	DROP_TRACED_FULL = 1,
	DROP_RINGBUF_FULL = 2,
	DROP_COLL_FULL = 3,
	DROP_MAX = 4,
};

// Flags of a traced process, the values of the traced map.
enum traced_flag {
	TRACED_FOLLOW = 1, // add its children to the traced set
	TRACED_SEEN = 2,   // trace mode: its first MPI call was notified
};

// Force BTF for the enums Go reads (bpf2go -type).
const enum arg_limit *unused_arg_limit __attribute__((unused));
const enum drop_reason *unused_drop_reason __attribute__((unused));
const enum traced_flag *unused_traced_flag __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u32);
} traced SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DROP_MAX);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

static __always_inline void drop(__u32 reason)
{
	__u64 *n = bpf_map_lookup_elem(&drops, &reason);
	if (n)
		*n += 1;
}

static __always_inline int traced_now(__u32 *tgid)
{
	*tgid = bpf_get_current_pid_tgid() >> 32;
	return bpf_map_lookup_elem(&traced, tgid) != 0;
}

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
	if (n >= 7 && n <= ARG_MAX)
		bpf_probe_read_user(&x, sizeof(x), (void *)(PT_REGS_SP(ctx) + 8 * (n - 6)));
	return x;
}

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

#endif // MPIPROBE_COMMON_H
