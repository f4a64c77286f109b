package kernel

import (
	"os"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/bpf"
)

// TestDecodeExit checks the decoding of a task's exit_code: the exit status
// in bits 8-15, or the killing signal in bits 0-6 with 0x80 set when a core
// was dumped (the wait(2) status encoding).
func TestDecodeExit(t *testing.T) {
	at := time.Date(2026, 11, 21, 5, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		code int32
		want agg.End
	}{
		{"exit 0", 0, agg.End{Kind: agg.Exited, Code: 0, At: at}},
		{"exit 1", 1 << 8, agg.End{Kind: agg.Exited, Code: 1, At: at}},
		{"exit 2", 2 << 8, agg.End{Kind: agg.Exited, Code: 2, At: at}},
		{"exit 255", 255 << 8, agg.End{Kind: agg.Exited, Code: 255, At: at}},
		{"SIGKILL", 9, agg.End{Kind: agg.Signaled, Signal: 9, At: at}},
		{"SIGTERM", 15, agg.End{Kind: agg.Signaled, Signal: 15, At: at}},
		{"SIGINT", 2, agg.End{Kind: agg.Signaled, Signal: 2, At: at}},
		{"SIGSEGV with core dump", 0x80 | 11, agg.End{Kind: agg.Signaled, Signal: 11, At: at}},
		{"SIGABRT with core dump", 0x80 | 6, agg.End{Kind: agg.Signaled, Signal: 6, At: at}},
		{"SIGBUS without core dump", 7, agg.End{Kind: agg.Signaled, Signal: 7, At: at}},
		{"real-time signal", 64, agg.End{Kind: agg.Signaled, Signal: 64, At: at}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecodeExit(tt.code, at)
			if got != tt.want {
				t.Errorf("DecodeExit(%#x) = %+v, want %+v", tt.code, got, tt.want)
			}
			// The kernel's exit_code is what wait(2) reports: agree with Go's decoding of it.
			ws := syscall.WaitStatus(tt.code)
			switch {
			case ws.Exited() && (got.Kind != agg.Exited || got.Code != ws.ExitStatus()):
				t.Errorf("DecodeExit(%#x) = %+v, but wait status says exited %d", tt.code, got, ws.ExitStatus())
			case ws.Signaled() && (got.Kind != agg.Signaled || got.Signal != int(ws.Signal())):
				t.Errorf("DecodeExit(%#x) = %+v, but wait status says killed by signal %d", tt.code, got, ws.Signal())
			}
		})
	}
}

// TestProcEventConstantsMatchBPF checks the proc_event types and the drop
// reasons the loader knows against bpf/mpiprobe.bpf.c and its object.
func TestProcEventConstantsMatchBPF(t *testing.T) {
	b, err := os.ReadFile("../../bpf/mpiprobe.bpf.c")
	if err != nil {
		t.Fatal(err)
	}
	enum := map[string]int{}
	for _, m := range regexp.MustCompile(`\b(PROC_[A-Z]+)\s*=\s*(\d+)`).FindAllStringSubmatch(string(b), -1) {
		enum[m[1]], _ = strconv.Atoi(m[2])
	}
	for name, want := range map[string]int{"PROC_FORK": ProcFork, "PROC_EXEC": ProcExec, "PROC_EXIT": ProcExit, "PROC_MPI": ProcMPI} {
		got, ok := enum[name]
		if !ok {
			t.Errorf("mpiprobe.bpf.c: no %s in enum proc_event_type", name)
		} else if got != want {
			t.Errorf("mpiprobe.bpf.c: %s = %d, package kernel has %d", name, got, want)
		}
	}

	spec, err := bpf.LoadMpiprobe()
	if err != nil {
		t.Fatalf("LoadMpiprobe: %v", err)
	}
	if n := spec.Maps["drops"].MaxEntries; int(n) != len(DropReasons()) {
		t.Errorf("the drops map has %d reasons, DropReasons names %d", n, len(DropReasons()))
	}
}
