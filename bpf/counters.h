// Catalog event counting: counters of unusual MPI library events keyed by
// (tgid, event, detail). One program, count_event, serves every plain
// catalog entry: the uprobe's attach cookie says which event it counts and
// under which condition. The detail programs (stash_arg, free_list_grow,
// free_list_at_max, mpi_error, async_event_ret and the gates) count events
// that name their instance or need their entry's arguments at return.

#ifndef MPIPROBE_COUNTERS_H
#define MPIPROBE_COUNTERS_H

#include "common.h"

// The catalog cookie (64 bits), written by probes.Cookie: where each field
// starts and how many bits it has.
enum cookie_layout {
	COOKIE_EVENT_SHIFT = 0, // event id (index into the catalog)
	COOKIE_EVENT_BITS = 16,
	COOKIE_CMP_SHIFT = 16, // enum cmp_op
	COOKIE_CMP_BITS = 4,
	COOKIE_SRC_SHIFT = 20, // operand source: 0 return value, 1..COOKIE_SRC_MAX argument n
	COOKIE_SRC_BITS = 4,
	COOKIE_SRC_MAX = 5,
	// The program's parameter, each program reading its own width:
	// count_event the peak source (0 none, or n: the u32 that argument n
	// points to), stash_arg and the return programs a stash slot, the
	// gates a gate, mpi_error an enum err_layout.
	COOKIE_PARAM_SHIFT = 24,
	COOKIE_PEAK_BITS = 4,
	COOKIE_SLOT_BITS = 2,
	COOKIE_GATE_BITS = 6,
	COOKIE_ERR_BITS = 4,
	// The operand (signed 32-bit); free_list_grow and free_list_at_max:
	// the library's opal_free_list_t layout (enum free_list_layout).
	COOKIE_OPERAND_SHIFT = 32,
};

// The comparisons of a condition (cookie field COOKIE_CMP), on the signed
// low 32 bits of the operand.
enum cmp_op {
	CMP_ALWAYS = 0,
	CMP_EQ = 1,
	CMP_NE = 2,
	CMP_LT = 3,
	CMP_GT = 4,
	CMP_EQ8 = 5, // low byte == operand: a C bool return, whose upper bits are undefined
};

_Static_assert(CMP_EQ8 < 1 << COOKIE_CMP_BITS, "a comparison does not fit its cookie field");
_Static_assert(COOKIE_SRC_MAX < 1 << COOKIE_SRC_BITS, "an operand source does not fit its cookie field");
_Static_assert(COOKIE_SRC_MAX < 1 << COOKIE_PEAK_BITS, "a peak source does not fit its cookie field");
_Static_assert(1 << COOKIE_GATE_BITS <= 64, "the gates are the bits of one __u64");

// Where opal_free_list_t keeps what the free-list programs read differs
// between libopen-pal builds; probes.FreeListLayout resolves it per library
// file and the cookie's operand carries it: three counts of 8-byte words,
// each FL_FIELD_BITS wide, at these shifts into the operand.
enum free_list_layout {
	FL_MAX_TO_ALLOC_SHIFT = 0,   // size_t fl_max_to_alloc (0 = unlimited)
	FL_NUM_ALLOCATED_SHIFT = 10, // size_t fl_num_allocated
	FL_FRAG_CLASS_SHIFT = 20,    // opal_class_t *fl_frag_class; its first field is the class name
	FL_FIELD_BITS = 10,
	FL_WORD = 8,
};

// How mpi_error reads its function's arguments (cookie field COOKIE_PARAM).
enum err_layout {
	ERR_OMPI = 1,  // ompi_errhandler_invoke(eh, obj, type, err_code, message)
	ERR_MPICH = 2, // MPIR_Err_return_comm(comm, fcname, errcode): class in the low 7 bits
};

_Static_assert(ERR_MPICH < 1 << COOKIE_ERR_BITS, "an error layout does not fit its cookie field");

// mpi_error's detail: the error class, a flag for MPICH (whose classes are
// numbered differently), and the address of the API name above them.
enum err_detail {
	ERR_CLASS_MASK = 0x7f,
	ERR_DETAIL_MPICH = 0x80,
	ERR_NAME_SHIFT = 8,
};

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

// Force bpf2go to emit Go types for these.
const struct count_key *unused_count_key __attribute__((unused));
const struct count_val *unused_count_val __attribute__((unused));
const enum cookie_layout *unused_cookie_layout __attribute__((unused));
const enum cmp_op *unused_cmp_op __attribute__((unused));
const enum free_list_layout *unused_free_list_layout __attribute__((unused));
const enum err_layout *unused_err_layout __attribute__((unused));
const enum err_detail *unused_err_detail __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct count_key);
	__type(value, struct count_val);
} counts SEC(".maps");

#define COOKIE_EVENT(c) BITS(c, COOKIE_EVENT_SHIFT, COOKIE_EVENT_BITS)

static __always_inline __s32 operand_value(struct pt_regs *ctx, __u32 src)
{
	// The verifier allows only constant offsets into the context, so every
	// register is loaded at its own fixed offset and then selected.
	__s32 v[COOKIE_SRC_MAX + 1];
	v[0] = (__s32)PT_REGS_RC(ctx);
	v[1] = (__s32)PT_REGS_PARM1(ctx);
	v[2] = (__s32)PT_REGS_PARM2(ctx);
	v[3] = (__s32)PT_REGS_PARM3(ctx);
	v[4] = (__s32)PT_REGS_PARM4(ctx);
	v[5] = (__s32)PT_REGS_PARM5(ctx);
	asm volatile("" : : "r"(v) : "memory");
	return v[src <= COOKIE_SRC_MAX ? src : 0];
}

// arg_value returns argument n (1 to COOKIE_SRC_MAX) in full, 0 for any other n.
static __always_inline __u64 arg_value(struct pt_regs *ctx, __u32 n)
{
	__u64 v[COOKIE_SRC_MAX + 1];
	v[0] = 0;
	v[1] = PT_REGS_PARM1(ctx);
	v[2] = PT_REGS_PARM2(ctx);
	v[3] = PT_REGS_PARM3(ctx);
	v[4] = PT_REGS_PARM4(ctx);
	v[5] = PT_REGS_PARM5(ctx);
	asm volatile("" : : "r"(v) : "memory");
	return v[n <= COOKIE_SRC_MAX ? n : 0];
}

static __always_inline int condition_holds(struct pt_regs *ctx, __u64 cookie)
{
	__u32 cmp = BITS(cookie, COOKIE_CMP_SHIFT, COOKIE_CMP_BITS);
	if (cmp == CMP_ALWAYS)
		return 1;
	__s32 v = operand_value(ctx, BITS(cookie, COOKIE_SRC_SHIFT, COOKIE_SRC_BITS));
	__s32 want = (__s32)(cookie >> COOKIE_OPERAND_SHIFT);
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
	__u32 psrc = BITS(cookie, COOKIE_PARAM_SHIFT, COOKIE_PEAK_BITS);
	if (psrc) {
		__u32 p = 0;
		__u64 addr = arg_value(ctx, psrc);
		if (addr)
			bpf_probe_read_user(&p, sizeof(p), (void *)addr);
		peak = p;
	}
	count_hit(tgid, COOKIE_EVENT(cookie), 0, peak, 0);
	return 0;
}

static __always_inline int do_empty(struct pt_regs *ctx) { return 0; }

// empty (and empty_multi) does nothing: the benchmarks attach it where
// count_event would go, or at an entry and a return as trace mode attaches
// its programs (a uprobe_multi link each), to measure the uprobe
// mechanism's own cost on the same symbol.
UPROBE_TWINS(empty, empty_multi, do_empty)

// ---- Events that name their instance, or need their entry's arguments at return ----
//
// These programs count through count_hit like count_event; the cookie's
// event field is the event, its parameter field their parameter.

#define STASH_SLOTS (1 << COOKIE_SLOT_BITS)

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

#define COOKIE_SLOT(c) BITS(c, COOKIE_PARAM_SHIFT, COOKIE_SLOT_BITS)
#define COOKIE_GATE(c) BITS(c, COOKIE_PARAM_SHIFT, COOKIE_GATE_BITS)

static __always_inline struct arg_stash *stash_get(__u64 create)
{
	return bpf_task_storage_get(&arg_stashes, bpf_get_current_task_btf(), 0,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

// stashed returns what stash_arg kept in the cookie's slot, 0 if nothing.
static __always_inline __u64 stashed(__u64 cookie)
{
	struct arg_stash *st = stash_get(0);
	return st ? st->v[COOKIE_SLOT(cookie)] : 0;
}

// gate_take closes the cookie's gate and says whether it was open.
static __always_inline int gate_take(__u64 cookie)
{
	struct arg_stash *st = stash_get(0);
	__u64 bit = 1ULL << COOKIE_GATE(cookie);
	if (!st || !(st->gates & bit))
		return 0;
	st->gates &= ~bit;
	return 1;
}

// stash_arg keeps argument n (the cookie's operand source) of the entry in
// the cookie's slot, for a return program of the same function.
SEC("uprobe")
int stash_arg(struct pt_regs *ctx)
{
	__u32 tgid;
	if (!traced_now(&tgid))
		return 0;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct arg_stash *st = stash_get(1);
	if (st)
		st->v[COOKIE_SLOT(cookie)] = arg_value(ctx, BITS(cookie, COOKIE_SRC_SHIFT, COOKIE_SRC_BITS));
	return 0;
}

// The opal_free_list_t field offsets a free-list cookie carries.
#define FL_FIELD(c, shift) (BITS(c, COOKIE_OPERAND_SHIFT + (shift), FL_FIELD_BITS) * FL_WORD)
#define FL_MAX_TO_ALLOC(c) FL_FIELD(c, FL_MAX_TO_ALLOC_SHIFT)
#define FL_NUM_ALLOCATED(c) FL_FIELD(c, FL_NUM_ALLOCATED_SHIFT)
#define FL_FRAG_CLASS(c) FL_FIELD(c, FL_FRAG_CLASS_SHIFT)

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
	count_hit(tgid, COOKIE_EVENT(cookie), cls, size, cls ? read_u64(cls) : 0);
	return 0;
}

// free_list_at_max: entry of opal_free_list_grow_st(flist, num_elements,
// ...) on a list at or past its maximum, which it refuses: at the maximum
// it returns OPAL_ERR_TEMP_OUT_OF_RESOURCE; past it (seen on Open MPI
// 5.0.10's sm BTL: 10 fragments allocated, maximum 8) the number of items
// it computes wraps around and the caller gets no item either. Peak: the
// maximum.
SEC("uprobe")
int free_list_at_max(struct pt_regs *ctx)
{
	__u32 tgid;
	if (!traced_now(&tgid))
		return 0;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 fl = PT_REGS_PARM1(ctx);
	__u64 lim = read_u64(fl + FL_MAX_TO_ALLOC(cookie));
	if (!lim || read_u64(fl + FL_NUM_ALLOCATED(cookie)) < lim)
		return 0;
	__u64 cls = read_u64(fl + FL_FRAG_CLASS(cookie));
	count_hit(tgid, COOKIE_EVENT(cookie), cls, lim, cls ? read_u64(cls) : 0);
	return 0;
}

// mpi_error: an MPI error on its way back to the application. The detail
// is the error class (ERR_CLASS_MASK), ERR_DETAIL_MPICH for MPICH, and the
// address of the API name above them (one per function); the name is the
// API name.
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
	if (BITS(cookie, COOKIE_PARAM_SHIFT, COOKIE_ERR_BITS) == ERR_MPICH) {
		name = a2;
		code = (a3 & ERR_CLASS_MASK) | ERR_DETAIL_MPICH;
	} else {
		code = a4 & ERR_CLASS_MASK;
		name = a5;
	}
	count_hit(tgid, COOKIE_EVENT(cookie), (name << ERR_NAME_SHIFT) | code, 0, name);
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
	if (!ev || read_u32(ev + 8) != (__u32)(cookie >> COOKIE_OPERAND_SHIFT))
		return 0;
	count_hit(tgid, COOKIE_EVENT(cookie), 0, 0, 0);
	return 0;
}

// gate_open opens the calling thread's gate (the cookie's parameter) at a
// function's entry; gate_count, at a place inside it or at its return,
// closes the gate and counts once per opening if the cookie's condition
// holds there. Together they count calls that reached that place, however
// often they reach it, and did not pass a gate_close on the way.
SEC("uprobe")
int gate_open(struct pt_regs *ctx)
{
	__u32 tgid;
	if (!traced_now(&tgid))
		return 0;
	struct arg_stash *st = stash_get(1);
	if (st)
		st->gates |= 1ULL << COOKIE_GATE(bpf_get_attach_cookie(ctx));
	return 0;
}

SEC("uprobe")
int gate_count(struct pt_regs *ctx)
{
	__u32 tgid;
	if (!traced_now(&tgid))
		return 0;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	if (gate_take(cookie) && condition_holds(ctx, cookie))
		count_hit(tgid, COOKIE_EVENT(cookie), 0, 0, 0);
	return 0;
}

// gate_close closes the calling thread's gate (the cookie's parameter)
// without counting: the call took the path that is not the event.
SEC("uprobe")
int gate_close(struct pt_regs *ctx)
{
	__u32 tgid;
	if (!traced_now(&tgid))
		return 0;
	gate_take(bpf_get_attach_cookie(ctx));
	return 0;
}

#endif // MPIPROBE_COUNTERS_H
