package bpf

//go:generate go tool bpf2go -tags linux -target amd64 -type proc_event -type count_key -type count_val -type startup -type exit_rec -type ident -type ident_limit -type trace_event -type trace_stage -type trace_batch -type coll_layout -type coll_key -type coll_comm -type coll_stat -type task_regs -type req_key -type req_val -type arg_limit -type drop_reason -type traced_flag -type proc_event_type -type mark -type cookie_layout -type cmp_op -type free_list_layout -type err_layout -type err_detail -type trace_cookie -type datatype_kind -type coll_cookie -type comm_layout_kind -type comm_flag Mpiprobe mpiprobe.bpf.c -- -I/usr/include/x86_64-linux-gnu -I./headers -D__TARGET_ARCH_x86 -Wall -Werror
//go:generate go run gen_other.go
