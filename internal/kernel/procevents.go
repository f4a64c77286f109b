package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
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

// procEventsEvery is the longest a notification submitted without a
// wakeup (the agent's exec of any process) waits in the ring buffer.
const procEventsEvery = 250 * time.Millisecond

// readProcEvents decodes the process notifications of the ring buffer
// into out until the reader is closed, then closes out. It reads what
// arrived at least every procEventsEvery, and at once when woken.
func readProcEvents(rd *ringbuf.Reader, out chan<- bpf.MpiprobeProcEvent) {
	var rec ringbuf.Record
	rd.SetDeadline(time.Now().Add(procEventsEvery))
	for {
		err := rd.ReadInto(&rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			rd.SetDeadline(time.Now().Add(procEventsEvery))
			continue
		}
		if err != nil {
			close(out)
			return
		}
		if e, ok := DecodeProcEvent(rec.RawSample); ok {
			out <- e
		}
	}
}

// DecodeProcEvent reads a struct proc_event of bpf/lifecycle.h; false
// when b is too short.
func DecodeProcEvent(b []byte) (bpf.MpiprobeProcEvent, bool) {
	if len(b) < 24 {
		return bpf.MpiprobeProcEvent{}, false
	}
	ne := binary.NativeEndian
	return bpf.MpiprobeProcEvent{
		Type: ne.Uint32(b[0:]), Tgid: ne.Uint32(b[4:]), Ppid: ne.Uint32(b[8:]),
		ExitCode: int32(ne.Uint32(b[12:])), TsNs: ne.Uint64(b[16:]),
	}, true
}

// DecodeExit turns a task's exit_code into how the process ended.
func DecodeExit(code int32, at time.Time) agg.End {
	if sig := int(code & 0x7f); sig != 0 {
		return agg.End{Kind: agg.Signaled, Signal: sig, At: at}
	}
	return agg.End{Kind: agg.Exited, Code: int(code>>8) & 0xff, At: at}
}
