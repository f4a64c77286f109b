package session

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"testing"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
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
	var e tracefile.Event
	tgid, addr := decodeTraceEvent(buf.Bytes(), &e)
	want := tracefile.Event{TID: 4243, Call: 513, Enter: 1_000_000_123, Exit: 1_000_900_456,
		Peer: 3, Root: tracefile.NoValue, Count: tracefile.NoValue, ElemSize: 8, Ret: -2}
	if tgid != 4242 || addr != 0x55aa00112233 || e != want {
		t.Errorf("decodeTraceEvent = %d, %#x, %+v; want 4242, 0x55aa00112233, %+v", tgid, addr, e, want)
	}
}

// TestRecorderRecords feeds the recorder ring buffer records as the BPF
// side writes them (one call, or a CPU's stage of several) for two
// processes whose tgids share a slot of its last-site cache, and checks
// that every call lands with its own process and call site.
func TestRecorderRecords(t *testing.T) {
	var out bytes.Buffer
	r, err := newRecorder(nil, &out, tracefile.Header{Host: "h"}, []string{"Send", "Recv"}, 1000,
		procfs.FS{Root: t.TempDir()}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	type call struct {
		tgid uint32
		addr uint64
		call uint16
	}
	records := [][]call{
		{{1, 0x10, 0}},
		{{9, 0x20, 1}, {1, 0x10, 0}, {1, 0x30, 1}, {9, 0x20, 0}, {17, 0x10, 1}, {1, 0x10, 0}, {9, 0x30, 1}, {1, 0x30, 0}},
		{{9, 0x20, 1}},
	}
	var want []call
	for i, rec := range records {
		var b []byte
		for j, c := range rec {
			ev := bpf.MpiprobeTraceEvent{Tgid: c.tgid, Tid: c.tgid, Site: c.addr, EnterNs: uint64(2000 + 10*i + j), ExitNs: uint64(2005 + 10*i + j),
				Count: -2147483648, Peer: -2147483648, Root: -2147483648, Call: c.call}
			if b, err = binary.Append(b, binary.NativeEndian, ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.addRecord(b); err != nil {
			t.Fatal(err)
		}
		want = append(want, rec...)
	}
	if err := r.w.WriteEvents(r.batch); err != nil {
		t.Fatal(err)
	}
	if err := r.w.Close(nil); err != nil {
		t.Fatal(err)
	}
	tr, err := tracefile.Read(&out)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Events) != len(want) {
		t.Fatalf("%d calls written, want %d", len(tr.Events), len(want))
	}
	for i, e := range tr.Events {
		w := want[i]
		if pid := tr.Ranks[e.Rank].PID; pid != int(w.tgid) {
			t.Errorf("call %d: pid %d, want %d", i, pid, w.tgid)
		}
		if off := tr.Sites[e.Site].Offset; off != w.addr {
			t.Errorf("call %d: site at %#x, want %#x", i, off, w.addr)
		}
		if tr.Calls[e.Call] != []string{"Send", "Recv"}[w.call] {
			t.Errorf("call %d: %s, want call %d", i, tr.Calls[e.Call], w.call)
		}
	}
}

// BenchmarkRecorderCalls measures the recorder's CPU per call: records of
// bpf.MpiprobeTraceBatchTRACE_BATCH calls, as the BPF side stages them,
// from two processes taking turns with one call site each, like the
// 2-rank allreduce loop of internal/bench, decoded and written to a trace
// file. That CPU is taken from the ranks when they keep every core busy.
func BenchmarkRecorderCalls(b *testing.B) {
	r, err := newRecorder(nil, io.Discard, tracefile.Header{Host: "h"}, []string{"Allreduce"}, 1000,
		procfs.FS{Root: b.TempDir()}, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	const perRecord = int(bpf.MpiprobeTraceBatchTRACE_BATCH)
	var records [2][]byte
	now := uint64(5000)
	for p := range records {
		for range perRecord {
			ev := bpf.MpiprobeTraceEvent{Tgid: uint32(100 + p), Tid: uint32(100 + p), Site: 0x401234, EnterNs: now, ExitNs: now + 900,
				Count: 1, Peer: -2147483648, Root: -2147483648, ElemSize: 8, Call: 0}
			now += 1100
			if records[p], err = binary.Append(records[p], binary.NativeEndian, ev); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := r.addRecord(records[i%2]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perRecord), "ns/call")
}

func TestTraceThreadSlots(t *testing.T) {
	for _, tc := range []struct {
		pidMax int
		want   uint32
	}{
		{0, MaxThreadSlots},     // unknown
		{-1, MaxThreadSlots},    // unknown
		{1, 1},                  // the least
		{300, 512},              // rounded up
		{32768, 32768},          // the kernel's default
		{32769, MaxThreadSlots}, // rounded up to the cap
		{4194304, MaxThreadSlots},
	} {
		if got := TraceThreadSlots(tc.pidMax); got != tc.want {
			t.Errorf("TraceThreadSlots(%d) = %d, want %d", tc.pidMax, got, tc.want)
		}
	}
}

// TestTraceOptions checks that the options name maps and variables the
// BPF object has: kernel.Load rejects an unknown one.
func TestTraceOptions(t *testing.T) {
	spec, err := bpf.LoadMpiprobe()
	if err != nil {
		t.Fatal(err)
	}
	o := TraceOptions(1<<20, 1<<15)
	for name, n := range o.MaxEntries {
		if spec.Maps[name] == nil {
			t.Errorf("no map %s to give %d entries", name, n)
		}
	}
	for name := range o.Variables {
		if spec.Variables[name] == nil {
			t.Errorf("no variable %s", name)
		}
	}
	if o.MaxEntries["trace_owned"] != 1<<15 || o.Variables["trace_slot_mask"] != uint32(1<<15-1) {
		t.Errorf("slots %d, mask %v; want 32768 and 32767", o.MaxEntries["trace_owned"], o.Variables["trace_slot_mask"])
	}
	if spec.Maps["trace_owned"].MaxEntries != 1 {
		t.Errorf("trace_owned has %d entries outside trace mode, want 1", spec.Maps["trace_owned"].MaxEntries)
	}
}
