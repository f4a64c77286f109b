package probes

import (
	"testing"

	"github.com/mpiprobe/mpiprobe/bpf"
)

// decodeTraceCookie unpacks a trace cookie the way trace_enter
// (bpf/trace.h) does, with the generated shifts and widths.
func decodeTraceCookie(c uint64) (call int, a argSpec, kind datatypeKind) {
	arg := func(shift bpf.MpiprobeTraceCookie) int {
		return int(field(c, shift, bpf.MpiprobeTraceCookieTRACE_ARG_BITS))
	}
	return int(field(c, bpf.MpiprobeTraceCookieTRACE_CALL_SHIFT, bpf.MpiprobeTraceCookieTRACE_CALL_BITS)), argSpec{
			Peer:     arg(bpf.MpiprobeTraceCookieTRACE_PEER_SHIFT),
			Count:    arg(bpf.MpiprobeTraceCookieTRACE_COUNT_SHIFT),
			Datatype: arg(bpf.MpiprobeTraceCookieTRACE_DATATYPE_SHIFT),
			Root:     arg(bpf.MpiprobeTraceCookieTRACE_ROOT_SHIFT),
		},
		datatypeKind(field(c, bpf.MpiprobeTraceCookieTRACE_KIND_SHIFT, bpf.MpiprobeTraceCookieTRACE_KIND_BITS))
}

func TestTraceCookie(t *testing.T) {
	tests := []struct {
		call int
		args argSpec
		kind datatypeKind
		want uint64
	}{
		{0, argSpec{}, dtUnknown, 0},
		{5, argSpec{Peer: 4, Count: 2, Datatype: 3}, dtOMPI, 5 | 4<<16 | 2<<20 | 3<<24 | 1<<32},
		{0xffff, argSpec{Count: 6, Datatype: 7, Root: 8}, dtMPICH, 0xffff | 6<<20 | 7<<24 | 8<<28 | 2<<32},
		{1, argSpec{Root: 12}, dtUnknown, 1 | 12<<28},
	}
	for _, tt := range tests {
		got, err := traceCookie(tt.call, tt.args, tt.kind)
		if err != nil || got != tt.want {
			t.Errorf("TraceCookie(%d, %+v, %d) = %#x, %v; want %#x", tt.call, tt.args, tt.kind, got, err, tt.want)
			continue
		}
		c, a, k := decodeTraceCookie(got)
		if c != tt.call || a != tt.args || k != tt.kind {
			t.Errorf("BPF-side decoding of %#x = (%d, %+v, %d), want (%d, %+v, %d)", got, c, a, k, tt.call, tt.args, tt.kind)
		}
	}
	for _, bad := range []struct {
		call int
		args argSpec
	}{{-1, argSpec{}}, {0x10000, argSpec{}}, {0, argSpec{Peer: 13}}, {0, argSpec{Root: -1}}} {
		if _, err := traceCookie(bad.call, bad.args, dtOMPI); err == nil {
			t.Errorf("TraceCookie(%d, %+v) accepted an out-of-range field", bad.call, bad.args)
		}
	}
}

// TestArgsOf checks positions against the MPI 3.1 C prototypes.
func TestArgsOf(t *testing.T) {
	tests := map[string]argSpec{
		"MPI_Send":      {Peer: 4, Count: 2, Datatype: 3},
		"MPI_Irecv":     {Peer: 4, Count: 2, Datatype: 3},
		"MPI_Sendrecv":  {Peer: 4, Count: 2, Datatype: 3},
		"MPI_Probe":     {Peer: 1},
		"MPI_Mrecv":     {Count: 2, Datatype: 3},
		"MPI_Bcast":     {Count: 2, Datatype: 3, Root: 4},
		"MPI_Ibcast":    {Count: 2, Datatype: 3, Root: 4},
		"MPI_Reduce":    {Count: 3, Datatype: 4, Root: 6},
		"MPI_Allreduce": {Count: 3, Datatype: 4},
		"MPI_Gather":    {Count: 2, Datatype: 3, Root: 7}, // root on the stack
		"MPI_Igatherv":  {Count: 2, Datatype: 3, Root: 8},
		"MPI_Scatterv":  {Count: 6, Datatype: 7, Root: 8},
		"MPI_Scatter":   {Count: 5, Datatype: 6, Root: 7},
		"MPI_Barrier":   {},
		"MPI_Wtime":     {},
	}
	for name, want := range tests {
		if got := argsOf(name); got != want {
			t.Errorf("ArgsOf(%s) = %+v, want %+v", name, got, want)
		}
	}
}

func TestEntryOnlyCookie(t *testing.T) {
	c, err := traceCookie(7, argSpec{}, dtOMPI)
	if err != nil {
		t.Fatal(err)
	}
	got, err := entryOnlyCookie(c, 0x28)
	if err != nil {
		t.Fatal(err)
	}
	if field(got, bpf.MpiprobeTraceCookieTRACE_ENTRY_ONLY_SHIFT, uint32(1)) != 1 ||
		field(got, bpf.MpiprobeTraceCookieTRACE_FRAME_SHIFT, bpf.MpiprobeTraceCookieTRACE_FRAME_BITS) != 5 {
		t.Errorf("entryOnlyCookie(%#x, 0x28) = %#x: want the entry-only bit and 5 words", c, got)
	}
	if call, _, kind := decodeTraceCookie(got); call != 7 || kind != dtOMPI {
		t.Errorf("entryOnlyCookie changed the call or kind: %#x", got)
	}
	for _, bad := range []uint64{4, 2048} {
		if _, err := entryOnlyCookie(c, bad); err == nil {
			t.Errorf("entryOnlyCookie accepted a frame of %d bytes", bad)
		}
	}
}
