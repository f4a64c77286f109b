package probes

import (
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"

	"github.com/mpiprobe/mpiprobe/bpf"
)

// field reads width bits of c from shift, as BITS in bpf/common.h does.
func field[S, W ~uint32](c uint64, shift S, width W) uint64 {
	return c >> shift & (1<<width - 1)
}

// decodeCookie unpacks a cookie the way count_event and condition_holds
// (bpf/counters.h) do, with the generated shifts and widths.
func decodeCookie(c uint64) (event int, cmp Cmp, src Source, value int32) {
	return int(field(c, bpf.MpiprobeCookieLayoutCOOKIE_EVENT_SHIFT, bpf.MpiprobeCookieLayoutCOOKIE_EVENT_BITS)),
		Cmp(field(c, bpf.MpiprobeCookieLayoutCOOKIE_CMP_SHIFT, bpf.MpiprobeCookieLayoutCOOKIE_CMP_BITS)),
		Source(field(c, bpf.MpiprobeCookieLayoutCOOKIE_SRC_SHIFT, bpf.MpiprobeCookieLayoutCOOKIE_SRC_BITS)),
		int32(c >> bpf.MpiprobeCookieLayoutCOOKIE_OPERAND_SHIFT)
}

func TestCookie(t *testing.T) {
	tests := []struct {
		name  string
		event int
		cond  Condition
		want  uint64
	}{
		{"zero condition counts every hit", 0, Condition{}, 0},
		{"event id only", 7, Condition{}, 7},
		{"largest event id", maxEvents - 1, Condition{}, 0xffff},
		{"always ignores its source", 1, Condition{Src: Arg(3), Cmp: Always}, 1 | 3<<20},
		{"eq on return value", 2, Condition{Src: RetVal, Cmp: Eq, Value: 0}, 2 | 1<<16},
		{"ne on arg 1", 3, Condition{Src: Arg(1), Cmp: Ne, Value: 5}, 3 | 2<<16 | 1<<20 | 5<<32},
		{"lt on arg 2", 4, Condition{Src: Arg(2), Cmp: Lt, Value: 100}, 4 | 3<<16 | 2<<20 | 100<<32},
		{"gt on arg 5", 0xfffe, Condition{Src: Arg(5), Cmp: Gt, Value: 0}, 0xfffe | 4<<16 | 5<<20},
		{"arg 4", 9, Condition{Src: Arg(4), Cmp: Eq, Value: 1}, 9 | 1<<16 | 4<<20 | 1<<32},
		{"negative operand -1", 1, Condition{Src: RetVal, Cmp: Lt, Value: -1}, 1 | 3<<16 | 0xffffffff<<32},
		{"negative operand -2", 1, Condition{Src: RetVal, Cmp: Eq, Value: -2}, 1 | 1<<16 | 0xfffffffe<<32},
		{"min int32 operand", 1, Condition{Src: Arg(1), Cmp: Gt, Value: -1 << 31}, 1 | 4<<16 | 1<<20 | 0x80000000<<32},
		{"max int32 operand", 1, Condition{Src: Arg(1), Cmp: Lt, Value: 1<<31 - 1}, 1 | 3<<16 | 1<<20 | 0x7fffffff<<32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Cookie(tt.event, tt.cond)
			if err != nil {
				t.Fatalf("Cookie(%d, %+v): %v", tt.event, tt.cond, err)
			}
			if got != tt.want {
				t.Errorf("Cookie(%d, %+v) = %#016x, want %#016x", tt.event, tt.cond, got, tt.want)
			}
			if got&0xff000000 != 0 {
				t.Errorf("Cookie(%d, %+v) = %#016x: bits 24-31 are not zero", tt.event, tt.cond, got)
			}
			ev, cmp, src, val := decodeCookie(got)
			if ev != tt.event || cmp != tt.cond.Cmp || src != tt.cond.Src || val != tt.cond.Value {
				t.Errorf("BPF-side decoding of %#016x = (event %d, cmp %d, src %d, value %d), want (%d, %d, %d, %d)",
					got, ev, cmp, src, val, tt.event, tt.cond.Cmp, tt.cond.Src, tt.cond.Value)
			}
		})
	}
}

// TestCookieEverySourceAndCmp round-trips every valid (comparison, source)
// pair, with operands of both signs, through the BPF side's decoding.
func TestCookieEverySourceAndCmp(t *testing.T) {
	for cmp := Always; cmp <= Eq8; cmp++ {
		for src := RetVal; src <= maxSource; src++ {
			for _, v := range []int32{0, 1, -1, 42, -4096, 1<<31 - 1, -1 << 31} {
				c := Condition{Src: src, Cmp: cmp, Value: v}
				got, err := Cookie(123, c)
				if err != nil {
					t.Fatalf("Cookie(123, %+v): %v", c, err)
				}
				if uint32(got>>32) != uint32(v) {
					t.Errorf("Cookie(123, %+v): bits 32-63 = %#x, want %#x", c, uint32(got>>32), uint32(v))
				}
				ev, gc, gs, gv := decodeCookie(got)
				if ev != 123 || gc != cmp || gs != src || gv != v {
					t.Errorf("Cookie(123, %+v) = %#016x decodes to (%d, %d, %d, %d)", c, got, ev, gc, gs, gv)
				}
			}
		}
	}
}

func TestCookieOutOfRange(t *testing.T) {
	tests := []struct {
		name    string
		event   int
		cond    Condition
		wantErr string
	}{
		{"negative event id", -1, Condition{}, "event id -1 out of range"},
		{"event id MaxEvents", maxEvents, Condition{}, "event id 65536 out of range"},
		{"huge event id", 1 << 40, Condition{}, "out of range"},
		{"comparison after Eq8", 0, Condition{Cmp: Eq8 + 1}, "comparison 6 unknown"},
		{"comparison 15", 0, Condition{Cmp: 15}, "comparison 15 unknown"},
		{"comparison 255", 0, Condition{Cmp: 255}, "comparison 255 unknown"},
		{"argument 6", 0, Condition{Src: Arg(6), Cmp: Eq}, "operand source 6 out of range"},
		{"source 15", 0, Condition{Src: 15, Cmp: Eq}, "operand source 15 out of range"},
		{"argument -1 wraps to 255", 0, Condition{Src: Arg(-1), Cmp: Eq}, "operand source 255 out of range"},
		{"bad source with always is still rejected", 0, Condition{Src: Arg(6), Cmp: Always}, "operand source 6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Cookie(tt.event, tt.cond)
			if err == nil {
				t.Fatalf("Cookie(%d, %+v) = %#x, want an error", tt.event, tt.cond, got)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Cookie(%d, %+v) error %q, want it to contain %q", tt.event, tt.cond, err, tt.wantErr)
			}
			if got != 0 {
				t.Errorf("Cookie(%d, %+v) = %#x with an error, want 0", tt.event, tt.cond, got)
			}
		})
	}
}

// cookieField is one field of an attach cookie: where the generated
// constants put it, and the largest value the Go side writes into it.
type cookieField struct {
	name         string
	shift, width uint32
	max          uint64
}

func fieldOf[S, W ~uint32](name string, shift S, width W, max uint64) cookieField {
	return cookieField{name, uint32(shift), uint32(width), max}
}

// TestCookieFieldsDisjoint checks every cookie layout the Go side writes
// and the BPF side reads: the fields must not overlap, must fit in the
// cookie (the free-list operand in its 32 bits), and must hold every value
// the Go side accepts. The generated constants keep the two sides on the
// same numbers; this keeps the numbers themselves consistent.
func TestCookieFieldsDisjoint(t *testing.T) {
	const (
		paramBits = bpf.MpiprobeCookieLayoutCOOKIE_OPERAND_SHIFT - bpf.MpiprobeCookieLayoutCOOKIE_PARAM_SHIFT
		argBits   = bpf.MpiprobeTraceCookieTRACE_ARG_BITS
		collArg   = bpf.MpiprobeCollCookieCOLL_ARG_BITS
		flBits    = bpf.MpiprobeFreeListLayoutFL_FIELD_BITS
		flMax     = uint64(mpiabi.MaxFreeListOffset / mpiabi.FreeListWord)
		maxArg    = uint64(maxArg)
	)
	tests := []struct {
		name   string
		bits   uint32
		fields []cookieField
	}{
		{"catalog", 64, []cookieField{
			fieldOf("event", bpf.MpiprobeCookieLayoutCOOKIE_EVENT_SHIFT, bpf.MpiprobeCookieLayoutCOOKIE_EVENT_BITS, maxEvents-1),
			fieldOf("comparison", bpf.MpiprobeCookieLayoutCOOKIE_CMP_SHIFT, bpf.MpiprobeCookieLayoutCOOKIE_CMP_BITS, uint64(Eq8)),
			fieldOf("source", bpf.MpiprobeCookieLayoutCOOKIE_SRC_SHIFT, bpf.MpiprobeCookieLayoutCOOKIE_SRC_BITS, uint64(maxSource)),
			fieldOf("parameter (Probe.Param, a uint8)", bpf.MpiprobeCookieLayoutCOOKIE_PARAM_SHIFT, paramBits, 0xff),
			fieldOf("operand", bpf.MpiprobeCookieLayoutCOOKIE_OPERAND_SHIFT, uint32(32), 0xffffffff),
		}},
		// The parameter as each program reads it, from the parameter field's start.
		{"parameter: peak source", uint32(paramBits), []cookieField{
			fieldOf("peak source", uint32(0), bpf.MpiprobeCookieLayoutCOOKIE_PEAK_BITS, uint64(maxSource))}},
		{"parameter: stash slot", uint32(paramBits), []cookieField{
			fieldOf("stash slot", uint32(0), bpf.MpiprobeCookieLayoutCOOKIE_SLOT_BITS, stashSlots-1)}},
		{"parameter: gate", uint32(paramBits), []cookieField{
			fieldOf("gate", uint32(0), bpf.MpiprobeCookieLayoutCOOKIE_GATE_BITS, gates-1)}},
		{"parameter: error layout", uint32(paramBits), []cookieField{
			fieldOf("error layout", uint32(0), bpf.MpiprobeCookieLayoutCOOKIE_ERR_BITS, uint64(max(errorsOMPI, errorsMPICH)))}},
		{"free-list operand", 32, []cookieField{
			fieldOf("fl_max_to_alloc", bpf.MpiprobeFreeListLayoutFL_MAX_TO_ALLOC_SHIFT, flBits, flMax),
			fieldOf("fl_num_allocated", bpf.MpiprobeFreeListLayoutFL_NUM_ALLOCATED_SHIFT, flBits, flMax),
			fieldOf("fl_frag_class", bpf.MpiprobeFreeListLayoutFL_FRAG_CLASS_SHIFT, flBits, flMax),
		}},
		{"trace", 64, []cookieField{
			fieldOf("call", bpf.MpiprobeTraceCookieTRACE_CALL_SHIFT, bpf.MpiprobeTraceCookieTRACE_CALL_BITS, maxCalls-1),
			fieldOf("peer argument", bpf.MpiprobeTraceCookieTRACE_PEER_SHIFT, argBits, maxArg),
			fieldOf("count argument", bpf.MpiprobeTraceCookieTRACE_COUNT_SHIFT, argBits, maxArg),
			fieldOf("datatype argument", bpf.MpiprobeTraceCookieTRACE_DATATYPE_SHIFT, argBits, maxArg),
			fieldOf("root argument", bpf.MpiprobeTraceCookieTRACE_ROOT_SHIFT, argBits, maxArg),
			fieldOf("datatype kind", bpf.MpiprobeTraceCookieTRACE_KIND_SHIFT, bpf.MpiprobeTraceCookieTRACE_KIND_BITS, uint64(max(dtOMPI, dtMPICH))),
		}},
		{"collective", 64, []cookieField{
			fieldOf("collective", bpf.MpiprobeCollCookieCOLL_INDEX_SHIFT, bpf.MpiprobeCollCookieCOLL_INDEX_BITS, MaxCollectives-1),
			fieldOf("communicator argument", bpf.MpiprobeCollCookieCOLL_COMM_ARG_SHIFT, collArg, maxArg),
			fieldOf("layout", bpf.MpiprobeCollCookieCOLL_LAYOUT_SHIFT, bpf.MpiprobeCollCookieCOLL_LAYOUT_BITS, maxLayouts-1),
			fieldOf("request argument", bpf.MpiprobeCollCookieCOLL_REQ_ARG_SHIFT, collArg, maxArg),
			fieldOf("int requests", bpf.MpiprobeCollCookieCOLL_INT_REQ_SHIFT, uint32(1), 1),
			fieldOf("address", bpf.MpiprobeCollCookieCOLL_ADDR_SHIFT, uint32(32), 0xffffffff),
		}},
		{"completion", 64, []cookieField{
			fieldOf("request argument", bpf.MpiprobeCollCookieCOLL_WAIT_REQ_ARG_SHIFT, collArg, maxArg),
			fieldOf("count argument", bpf.MpiprobeCollCookieCOLL_WAIT_COUNT_ARG_SHIFT, collArg, maxArg),
			fieldOf("int requests", bpf.MpiprobeCollCookieCOLL_INT_REQ_SHIFT, uint32(1), 1),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			owner := map[uint32]string{}
			for _, fd := range tt.fields {
				if fd.width == 0 || fd.shift+fd.width > tt.bits {
					t.Errorf("%s: bits %d-%d, outside the %d bits", fd.name, fd.shift, fd.shift+fd.width-1, tt.bits)
					continue
				}
				if fd.width < 64 && fd.max >= 1<<fd.width {
					t.Errorf("%s: %d bits cannot hold %d", fd.name, fd.width, fd.max)
				}
				for b := fd.shift; b < fd.shift+fd.width; b++ {
					if o, ok := owner[b]; ok {
						t.Errorf("%s overlaps %s at bit %d", fd.name, o, b)
						break
					}
					owner[b] = fd.name
				}
			}
		})
	}
}
