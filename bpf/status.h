// mpiprobe status: what each thread of a process is doing now. dump_regs,
// a task iterator, writes every traced thread's user registers and pending
// uretprobe returns; status_enter counts the MPI calls each thread enters.

#ifndef MPIPROBE_STATUS_H
#define MPIPROBE_STATUS_H

#include "common.h"

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
	// The other callee-saved registers (rbx, r12-r15): what the
	// innermost frames hold in them, which no callee has saved yet.
	__u64 bx;
	__u64 r12;
	__u64 r13;
	__u64 r14;
	__u64 r15;
	__u32 nret;
	__u32 pad;
	__u64 ret_stack[MAX_RETPROBES];
	__u64 ret_orig[MAX_RETPROBES];
};

// Force bpf2go to emit a Go type for it.
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
		.bx = BPF_CORE_READ(regs, bx),
		.r12 = BPF_CORE_READ(regs, r12),
		.r13 = BPF_CORE_READ(regs, r13),
		.r14 = BPF_CORE_READ(regs, r14),
		.r15 = BPF_CORE_READ(regs, r15),
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

#endif // MPIPROBE_STATUS_H
