package kernel

import (
	"bytes"
	"encoding/binary"
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

// TestDropNamesMatchBPF checks that the loader names every index of the
// drops map, no more and no fewer: the generated DROP_MAX and the map's
// size against dropNames, which the types do not tie together.
func TestDropNamesMatchBPF(t *testing.T) {
	if n := int(bpf.MpiprobeDropReasonDROP_MAX); n != len(DropReasons()) {
		t.Errorf("enum drop_reason has %d reasons, DropReasons names %d", n, len(DropReasons()))
	}
	spec, err := bpf.LoadMpiprobe()
	if err != nil {
		t.Fatalf("LoadMpiprobe: %v", err)
	}
	if n := spec.Maps["drops"].MaxEntries; int(n) != len(DropReasons()) {
		t.Errorf("the drops map has %d entries, DropReasons names %d", n, len(DropReasons()))
	}
}

// DecodeProcEvent reads what binary.Read reads of the generated type.
func TestDecodeProcEvent(t *testing.T) {
	want := bpf.MpiprobeProcEvent{Type: ProcExit, Tgid: 4242, Ppid: 1, ExitCode: -9, TsNs: 123456789012}
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.NativeEndian, want); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 24 {
		t.Fatalf("struct proc_event is %d bytes, DecodeProcEvent reads 24", buf.Len())
	}
	got, ok := DecodeProcEvent(buf.Bytes())
	if !ok || got != want {
		t.Errorf("DecodeProcEvent = %+v, %v; want %+v", got, ok, want)
	}
	if _, ok := DecodeProcEvent(buf.Bytes()[:23]); ok {
		t.Error("DecodeProcEvent of 23 bytes: ok")
	}
}
