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

struct task_struct {
	int pid;
	int tgid;
	int exit_code;
	struct signal_struct *signal;
	struct task_struct *real_parent;
} __attribute__((preserve_access_index));
