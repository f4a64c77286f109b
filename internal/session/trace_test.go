package session

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/trace/tracefile"
)

// TestDecodeTraceEvent checks the recorder's hand-written decoding against
// the generated Go type of struct trace_event.
func TestDecodeTraceEvent(t *testing.T) {
	in := bpf.MpiprobeTraceEvent{
		Tgid: 4242, Tid: 4243, Site: 0x55aa00112233, EnterNs: 1_000_000_123, ExitNs: 1_000_900_456,
		Count: -2147483648, Peer: 3, Root: -2147483648, ElemSize: 8, Ret: -2, Call: 513, Flags: 0,
	}
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.NativeEndian, in); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != traceEventSize {
		t.Fatalf("struct trace_event is %d bytes, the recorder reads %d", buf.Len(), traceEventSize)
	}
	tgid, addr, e := decodeTraceEvent(buf.Bytes())
	want := tracefile.Event{TID: 4243, Call: 513, Enter: 1_000_000_123, Exit: 1_000_900_456,
		Peer: 3, Root: tracefile.NoValue, Count: tracefile.NoValue, ElemSize: 8, Ret: -2}
	if tgid != 4242 || addr != 0x55aa00112233 || e != want {
		t.Errorf("decodeTraceEvent = %d, %#x, %+v; want 4242, 0x55aa00112233, %+v", tgid, addr, e, want)
	}
}
