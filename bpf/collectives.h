// Collective tracking (--collectives): per (process, communicator,
// collective), calls (counted at entry, so the call in flight is
// included), threads inside now and since when, total and max time inside.
// A communicator gets a slot the first time a process uses it; the slot's
// counters are COLL_MAX consecutive entries of coll_stats. User space owns
// the slots: it pushes free ones into coll_free and takes back those of
// exited processes.

#ifndef MPIPROBE_COLLECTIVES_H
#define MPIPROBE_COLLECTIVES_H

#include "common.h"

// The collective cookie (64 bits), written by collCookie in probes, and the
// completion cookie of coll_wait_enter/exit, written by waitCookie in probes.
// Arguments are numbered 1..ARG_MAX.
enum coll_cookie {
	COLL_INDEX_SHIFT = 0,     // the collective's index (loader's table), below COLL_MAX
	COLL_INDEX_BITS = 6,
	COLL_COMM_ARG_SHIFT = 8,  // argument holding the communicator
	COLL_LAYOUT_SHIFT = 12,   // layout index into coll_layouts (0: unknown build)
	COLL_LAYOUT_BITS = 4,
	COLL_REQ_ARG_SHIFT = 16,  // nonblocking: argument receiving the request (0: blocking)
	COLL_INT_REQ_SHIFT = 20,  // one bit, both cookies: requests are 4-byte ints (MPICH), else 8-byte pointers
	COLL_ROOT_ARG_SHIFT = 21, // argument holding the root (0: none)
	COLL_COUNT_ARG_SHIFT = 25, // argument holding the count, the datatype following it (0: none)
	// The probed function's address in its file (MPICH: the library's
	// load bias is the entry address minus this).
	COLL_ADDR_SHIFT = 32,
	COLL_WAIT_REQ_ARG_SHIFT = 0,   // completion: argument holding the request array (or the request)
	COLL_WAIT_COUNT_ARG_SHIFT = 4, // completion: argument holding the count (0: one request)
	COLL_ARG_BITS = 4,
};

// Collectives per communicator slot: every index a cookie can carry. A
// power of two, so that do_coll_enter bounds the index with a mask.
#define COLL_MAX (1 << COLL_INDEX_BITS)

_Static_assert(COLL_INDEX_SHIFT + COLL_INDEX_BITS <= COLL_COMM_ARG_SHIFT, "the collective index overlaps the communicator argument");
_Static_assert(ARG_MAX < 1 << COLL_ARG_BITS, "an argument number does not fit its collective cookie field");
_Static_assert(COLL_COUNT_ARG_SHIFT + COLL_ARG_BITS <= COLL_ADDR_SHIFT, "the count argument overlaps the function address");

// How a library represents MPI_Comm (struct coll_layout's kind).
enum comm_layout_kind {
	LAYOUT_UNKNOWN = 0, // not in the table: communicators are keyed by their local handle
	LAYOUT_OMPI = 1,    // MPI_Comm is an ompi_communicator_t*
	LAYOUT_MPICH = 2,   // MPI_Comm is an int handle into MPICH's object tables
};

// Flags of struct coll_key and struct coll_comm.
enum comm_flag {
	COMM_LOCAL = 1, // id is the rank-local handle: unknown library build
};

// How to read a communicator's identity in one library build.
struct coll_layout {
	__u32 kind;       // enum comm_layout_kind
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
	// The arguments of the last entry that must agree across ranks: root
	// and count as passed (-1: none), the datatype handle as passed (an
	// int in MPICH, a pointer in Open MPI; 0: none).
	__s64 root;
	__s64 count;
	__u64 dtype;
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
const enum coll_cookie *unused_coll_cookie __attribute__((unused));
const enum comm_layout_kind *unused_comm_layout_kind __attribute__((unused));
const enum comm_flag *unused_comm_flag __attribute__((unused));

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
	__uint(max_entries, 1 << COLL_LAYOUT_BITS);
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
	__u32 li = BITS(cookie, COLL_LAYOUT_SHIFT, COLL_LAYOUT_BITS);
	struct coll_layout *l = bpf_map_lookup_elem(&coll_layouts, &li);
	struct coll_comm info = { .tgid = tgid, .handle = comm, .size = -1, .rank = -1 };
	__u64 obj = 0;
	if (l && l->kind == LAYOUT_OMPI && comm)
		obj = comm;
	else if (l && l->kind == LAYOUT_MPICH)
		obj = mpich_object(l, (__u32)comm, PT_REGS_IP(ctx) - (cookie >> COLL_ADDR_SHIFT));
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

// arg_of returns argument n (1..ARG_MAX) from the register arguments read
// once into regs (constant context offsets only) or from the stack.
static __always_inline __u64 arg_of(struct pt_regs *ctx, const __u64 *regs, __u32 n)
{
	__u64 x = 0;
	if (n >= 1 && n <= 6)
		return regs[(n - 1) & 7];
	if (n >= 7 && n <= ARG_MAX)
		bpf_probe_read_user(&x, sizeof(x), (void *)(PT_REGS_SP(ctx) + 8 * (n - 6)));
	return x;
}

// coll_args records the root, count and datatype a collective was entered
// with, for the mismatch check of `mpiprobe status`.
static __always_inline void coll_args(struct pt_regs *ctx, __u64 cookie, struct coll_stat *st)
{
	__u64 regs[8] = {
		PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx),
		PT_REGS_PARM4(ctx), PT_REGS_PARM5(ctx), ctx->r9, // PT_REGS_PARM6: see arg()
	};
	__u32 rta = BITS(cookie, COLL_ROOT_ARG_SHIFT, COLL_ARG_BITS);
	__u32 cta = BITS(cookie, COLL_COUNT_ARG_SHIFT, COLL_ARG_BITS);
	st->root = rta ? (__s64)(__s32)arg_of(ctx, regs, rta) : -1;
	st->count = cta ? (__s64)(__s32)arg_of(ctx, regs, cta) : -1;
	st->dtype = cta ? arg_of(ctx, regs, cta + 1) : 0;
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
	__u64 comm = arg(ctx, BITS(cookie, COLL_COMM_ARG_SHIFT, COLL_ARG_BITS));
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
	__u32 idx = slot * COLL_MAX + ((cookie >> COLL_INDEX_SHIFT) & (COLL_MAX - 1));
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
	coll_args(ctx, cookie, st);
	__u32 ra = BITS(cookie, COLL_REQ_ARG_SHIFT, COLL_ARG_BITS);
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
		if (BITS(bpf_get_attach_cookie(ctx), COLL_INT_REQ_SHIFT, 1))
			k.req = read_u32(rp);
		else
			k.req = read_u64(rp);
		struct req_val *old = bpf_map_lookup_elem(&coll_reqs, &k);
		if (old) {
			// The library handed out a request that one of our
			// operations still holds: that operation has completed.
			// Both libraries give every nonblocking collective on a
			// communicator of one rank the same predefined, already
			// completed request (Open MPI's ompi_request_empty), and
			// a request freed with MPI_Request_free is reused only
			// once complete. Its start to completion is counted up to
			// now, an upper bound.
			__u32 oidx = old->idx;
			struct coll_stat *ost = bpf_map_lookup_elem(&coll_stats, &oidx);
			if (ost) {
				ost->pending--;
				ost->completed++;
				ost->done_ns += th->enter_ns + dt - old->start_ns;
			}
			old->idx = idx;
			old->start_ns = th->enter_ns;
			st->pending++;
			return 0;
		}
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
	__u32 ca = BITS(cookie, COLL_WAIT_COUNT_ARG_SHIFT, COLL_ARG_BITS);
	__s32 n = ca ? (__s32)arg(ctx, ca) : 1;
	if (n <= 0)
		return 0;
	if (n > MAX_WAIT_REQS)
		n = MAX_WAIT_REQS; // the rest are not followed
	__u32 w = BITS(cookie, COLL_INT_REQ_SHIFT, 1) ? 4 : 8;
	__u64 arr = arg(ctx, BITS(cookie, COLL_WAIT_REQ_ARG_SHIFT, COLL_ARG_BITS));
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

// coll_wait_enter / coll_wait_exit (and their _single twins) run around
// the completion calls (MPI_Wait, MPI_Test and their -all, -any, -some
// forms) with --collectives: a nonblocking collective completes when its
// request does.
UPROBE_TWINS(coll_wait_enter_single, coll_wait_enter, do_wait_enter)
URETPROBE_TWINS(coll_wait_exit_single, coll_wait_exit, do_wait_exit)

// coll_enter / coll_exit (and their _multi twins) run at the entry and
// return of every collective with --collectives.
UPROBE_TWINS(coll_enter, coll_enter_multi, do_coll_enter)
URETPROBE_TWINS(coll_exit, coll_exit_multi, do_coll_exit)

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

#endif // MPIPROBE_COLLECTIVES_H
