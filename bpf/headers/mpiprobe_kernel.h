// Minimal kernel type declarations for mpiprobe's BPF programs.
//
// Only the fields the programs read are declared. preserve_access_index makes
// clang emit CO-RE relocations, so the loader resolves the real offsets against
// the running kernel's BTF (/sys/kernel/btf/vmlinux) and no vmlinux.h is needed.
#pragma once

typedef struct {
	int counter;
} atomic_t;

struct signal_struct {
	atomic_t live;
} __attribute__((preserve_access_index));

// A pending uretprobe: the return address it replaced on the user stack.
struct return_instance {
	unsigned long stack;          // the stack pointer at the probed entry: where the address was
	unsigned long orig_ret_vaddr; // the real return address
	struct return_instance *next;
} __attribute__((preserve_access_index));

struct uprobe_task {
	struct return_instance *return_instances;
} __attribute__((preserve_access_index));

// Where a process's environment strings are (as /proc/PID/environ reads them).
struct mm_struct {
	unsigned long env_start;
	unsigned long env_end;
} __attribute__((preserve_access_index));

struct task_struct {
	struct mm_struct *mm; // changes at an exec
	int pid;
	int tgid;
	int exit_code;
	struct signal_struct *signal;
	struct task_struct *real_parent;
	struct task_struct *group_leader;
	struct uprobe_task *utask;
	unsigned long long start_time;      // ns since boot: tells apart tasks at one address
	unsigned long long start_boottime;  // the same with suspend: /proc/PID/stat's start time
	char comm[16];
} __attribute__((preserve_access_index));

// The user registers a task entered the kernel with (bpf_task_pt_regs).
// The ___kern flavour keeps it apart from the uapi struct pt_regs while
// CO-RE matches it to the kernel's.
struct pt_regs___kern {
	unsigned long r15;
	unsigned long r14;
	unsigned long r13;
	unsigned long r12;
	unsigned long bp;
	unsigned long bx;
	unsigned long sp;
	unsigned long ip;
} __attribute__((preserve_access_index));

struct seq_file;

struct bpf_iter_meta {
	struct seq_file *seq;
} __attribute__((preserve_access_index));

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} __attribute__((preserve_access_index));
