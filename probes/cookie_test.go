package probes

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// decodeCookie unpacks a cookie the way bpf/mpiprobe.bpf.c does
// (count_event and condition_holds).
func decodeCookie(c uint64) (event int, cmp Cmp, src Source, value int32) {
	return int(c & 0xffff), Cmp((c >> 16) & 0xf), Source((c >> 20) & 0xf), int32(c >> 32)
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
		{"largest event id", MaxEvents - 1, Condition{}, 0xffff},
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
	for cmp := Always; cmp <= Gt; cmp++ {
		for src := RetVal; src <= Arg(5); src++ {
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
		{"event id MaxEvents", MaxEvents, Condition{}, "event id 65536 out of range"},
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

const bpfSource = "../bpf/mpiprobe.bpf.c"

func readBPFSource(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(bpfSource)
	if err != nil {
		t.Fatalf("read the BPF source: %v", err)
	}
	return string(b)
}

// TestCookieLayoutMatchesBPF checks that the comparison numbers, the field
// positions and the documented layout agree with bpf/mpiprobe.bpf.c.
func TestCookieLayoutMatchesBPF(t *testing.T) {
	src := readBPFSource(t)

	t.Run("comparison defines", func(t *testing.T) {
		defines := map[string]int{}
		for _, m := range regexp.MustCompile(`(?m)^#define\s+(CMP_[A-Z]+)\s+(\d+)\s*$`).FindAllStringSubmatch(src, -1) {
			v, err := strconv.Atoi(m[2])
			if err != nil {
				t.Fatalf("#define %s %s: %v", m[1], m[2], err)
			}
			defines[m[1]] = v
		}
		want := map[string]Cmp{"CMP_ALWAYS": Always, "CMP_EQ": Eq, "CMP_NE": Ne, "CMP_LT": Lt, "CMP_GT": Gt}
		for name, cmp := range want {
			got, ok := defines[name]
			if !ok {
				t.Errorf("%s: no #define %s", bpfSource, name)
				continue
			}
			if got != int(cmp) {
				t.Errorf("%s: #define %s %d, but probes has %d", bpfSource, name, got, cmp)
			}
		}
		for name := range defines {
			if _, ok := want[name]; !ok {
				t.Errorf("%s: #define %s has no counterpart in probes.Cmp", bpfSource, name)
			}
		}
	})

	t.Run("layout comment", func(t *testing.T) {
		for _, field := range []struct{ bits, what string }{
			{"0-15", "event id"},
			{"16-19", "comparison"},
			{"20-23", "operand source"},
			{"32-63", "operand"},
		} {
			re := regexp.MustCompile(`(?m)^//\s*bits\s+` + regexp.QuoteMeta(field.bits) + `\s+` + regexp.QuoteMeta(field.what) + `\b`)
			if !re.MatchString(src) {
				t.Errorf("%s: the cookie layout comment has no line %q", bpfSource, "bits "+field.bits+" "+field.what)
			}
		}
	})

	t.Run("field extraction", func(t *testing.T) {
		// The code, not only the comment, must read the fields where Cookie puts them.
		for _, expr := range []string{
			`cookie & 0xffff`,       // event id, bits 0-15
			`(cookie >> 16) & 0xf`,  // comparison, bits 16-19
			`(cookie >> 20) & 0xf`,  // source, bits 20-23
			`(__s32)(cookie >> 32)`, // operand, bits 32-63, signed
			`src < 6 ? src : 0`,     // sources 0..5
		} {
			if !strings.Contains(src, expr) {
				t.Errorf("%s does not contain %q", bpfSource, expr)
			}
		}
		if MaxEvents != 0xffff+1 {
			t.Errorf("MaxEvents = %d, but the event id field is 16 bits", MaxEvents)
		}
		if Gt > 0xf || Arg(5) > 0xf {
			t.Errorf("Gt = %d and Arg(5) = %d must fit 4 bits", Gt, Arg(5))
		}
	})
}
