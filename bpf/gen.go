package bpf

//go:generate go tool bpf2go -tags linux -target amd64 -type proc_event -type count_key -type count_val -type startup -type exit_rec -type trace_event -type coll_layout -type coll_key -type coll_comm -type coll_stat -type task_regs -type req_key -type req_val Mpiprobe mpiprobe.bpf.c -- -I/usr/include/x86_64-linux-gnu -I./headers -D__TARGET_ARCH_x86 -Wall -Werror
