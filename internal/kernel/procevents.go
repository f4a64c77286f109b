package kernel

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/bpf"
)

// The proc_event types (enum proc_event_type in bpf/lifecycle.h).
const (
	// ProcFork: a followed process forked a child, now traced.
	ProcFork = uint32(bpf.MpiprobeProcEventTypePROC_FORK)
	// ProcExec: a process executed a new program.
	ProcExec = uint32(bpf.MpiprobeProcEventTypePROC_EXEC)
	// ProcExit: the last thread of a traced process exited.
	ProcExit = uint32(bpf.MpiprobeProcEventTypePROC_EXIT)
	// ProcMPI: a traced process made its first MPI call (trace mode), or
	// entered MPI_Init and became traced (the agent).
	ProcMPI = uint32(bpf.MpiprobeProcEventTypePROC_MPI)
)

// ProcEvents starts reading the process notifications of the proc_events
// ring buffer m into a channel of buffer places. The channel is closed when
// reading fails or after stop, which releases the ring buffer.
func ProcEvents(m *ebpf.Map, buffer int) (events <-chan bpf.MpiprobeProcEvent, stop func(), err error) {
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		return nil, nil, fmt.Errorf("open process event ring buffer: %w", err)
	}
	out := make(chan bpf.MpiprobeProcEvent, buffer)
	go readProcEvents(rd, out)
	return out, func() { _ = rd.Close() }, nil
}

// readProcEvents decodes the process notifications of the ring buffer
// into out until the reader is closed, then closes out.
func readProcEvents(rd *ringbuf.Reader, out chan<- bpf.MpiprobeProcEvent) {
	for {
		rec, err := rd.Read()
		if err != nil {
			close(out)
			return
		}
		var e bpf.MpiprobeProcEvent
		if err := binary.Read(bytes.NewReader(rec.RawSample), binary.NativeEndian, &e); err != nil {
			continue
		}
		out <- e
	}
}

// DecodeExit turns a task's exit_code into how the process ended.
func DecodeExit(code int32, at time.Time) agg.End {
	if sig := int(code & 0x7f); sig != 0 {
		return agg.End{Kind: agg.Signaled, Signal: sig, At: at}
	}
	return agg.End{Kind: agg.Exited, Code: int(code>>8) & 0xff, At: at}
}
