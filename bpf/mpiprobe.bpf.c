//go:build ignore

// mpiprobe's BPF side, one object built from one file per feature (see
// doc.go for what each header holds). The enums of values and bit layouts
// that user space shares are exported to Go by bpf2go -type (gen.go).

#include "common.h"
#include "counters.h"
#include "lifecycle.h"
#include "trace.h"
#include "collectives.h"
#include "status.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";
