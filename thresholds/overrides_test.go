package thresholds

import (
	"reflect"
	"testing"
	"time"
)

func u(n uint64) *uint64               { return &n }
func d(x time.Duration) *time.Duration { return &x }

func TestResolve(t *testing.T) {
	const ev = "ob1.send_pending.new"
	def := Rule{C: 1000, T: 10 * time.Second}
	other := map[string]Partial{"other.event": {C: u(1), T: d(time.Hour)}}
	tests := []struct {
		name     string
		cfg, cli Overrides
		want     Rule
	}{
		{"catalog default", Overrides{}, Overrides{}, def},
		{"other events' overrides do not apply", Overrides{Events: other}, Overrides{Events: other}, def},
		{"config global C", Overrides{C: u(5)}, Overrides{}, Rule{5, 10 * time.Second}},
		{"config global T", Overrides{T: d(time.Minute)}, Overrides{}, Rule{1000, time.Minute}},
		{"config global C and T", Overrides{C: u(5), T: d(0)}, Overrides{}, Rule{5, 0}},
		{
			"config per-event beats config global",
			Overrides{C: u(5), T: d(time.Minute), Events: map[string]Partial{ev: {C: u(7), T: d(time.Hour)}}},
			Overrides{},
			Rule{7, time.Hour},
		},
		{
			"config per-event C only keeps config global T",
			Overrides{C: u(5), T: d(time.Minute), Events: map[string]Partial{ev: {C: u(7)}}},
			Overrides{},
			Rule{7, time.Minute},
		},
		{
			"config per-event T only keeps catalog C",
			Overrides{Events: map[string]Partial{ev: {T: d(time.Hour)}}},
			Overrides{},
			Rule{1000, time.Hour},
		},
		{
			"command-line global beats config per-event",
			Overrides{Events: map[string]Partial{ev: {C: u(7), T: d(time.Hour)}}},
			Overrides{C: u(9), T: d(2 * time.Second)},
			Rule{9, 2 * time.Second},
		},
		{
			"command-line global T only keeps config per-event C",
			Overrides{Events: map[string]Partial{ev: {C: u(7), T: d(time.Hour)}}},
			Overrides{T: d(2 * time.Second)},
			Rule{7, 2 * time.Second},
		},
		{
			"command-line per-event beats command-line global",
			Overrides{},
			Overrides{C: u(9), T: d(2 * time.Second), Events: map[string]Partial{ev: {C: u(11), T: d(3 * time.Second)}}},
			Rule{11, 3 * time.Second},
		},
		{
			"command-line per-event T only keeps command-line global C",
			Overrides{C: u(5)},
			Overrides{C: u(9), Events: map[string]Partial{ev: {T: d(3 * time.Second)}}},
			Rule{9, 3 * time.Second},
		},
		{
			"all five layers, C and T from different layers",
			Overrides{C: u(5), T: d(time.Minute), Events: map[string]Partial{ev: {T: d(time.Hour)}}},
			Overrides{C: u(9), Events: map[string]Partial{ev: {C: u(0)}}},
			Rule{0, time.Hour},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Resolve(ev, def, tt.cfg, tt.cli); got != tt.want {
				t.Errorf("Resolve = %+v, want %+v", got, tt.want)
			}
		})
	}
	if got := Resolve(ev, def); got != def {
		t.Errorf("Resolve without layers = %+v, want %+v", got, def)
	}
}

func TestParseEventSpec(t *testing.T) {
	good := []struct {
		spec  string
		event string
		want  Partial
	}{
		{"ob1.send_pending.new=500/10s", "ob1.send_pending.new", Partial{C: u(500), T: d(10 * time.Second)}},
		{"ob1.send_pending.new=500/", "ob1.send_pending.new", Partial{C: u(500)}},
		{"ob1.send_pending.new=/30s", "ob1.send_pending.new", Partial{T: d(30 * time.Second)}},
		{"ob1.send_pending.new=500", "ob1.send_pending.new", Partial{C: u(500)}},
		{"a-b_c.9=0/0", "a-b_c.9", Partial{C: u(0), T: d(0)}},
		{"a=/10", "a", Partial{T: d(10 * time.Second)}},
		{"a=/1m30s", "a", Partial{T: d(90 * time.Second)}},
		{" a = 5 / 1m ", "a", Partial{C: u(5), T: d(time.Minute)}},
		{"a=18446744073709551615/", "a", Partial{C: u(18446744073709551615)}},
	}
	for _, tt := range good {
		event, p, err := ParseEventSpec(tt.spec)
		if err != nil || event != tt.event || !reflect.DeepEqual(p, tt.want) {
			t.Errorf("ParseEventSpec(%q) = %q, %s, %v; want %q, %s", tt.spec, event, p, err, tt.event, tt.want)
		}
	}

	bad := []struct{ spec, want string }{
		{"ob1", `threshold "ob1": missing "=" (use EVENT=C/T, e.g. ob1.send_pending.new=500/10s, =500/ or =/30s)`},
		{"=500", `threshold "=500": missing event name (use EVENT=C/T, e.g. ob1.send_pending.new=500/10s, =500/ or =/30s)`},
		{"Ob1=500", `threshold "Ob1=500": event name "Ob1" is invalid (use lowercase letters, digits, '_', '.' and '-')`},
		{"a b=500", `threshold "a b=500": event name "a b" is invalid (use lowercase letters, digits, '_', '.' and '-')`},
		{"a=", `threshold "a=": "" sets neither C nor T (use EVENT=C/T, e.g. ob1.send_pending.new=500/10s, =500/ or =/30s)`},
		{"a=/", `threshold "a=/": "/" sets neither C nor T (use EVENT=C/T, e.g. ob1.send_pending.new=500/10s, =500/ or =/30s)`},
		{"a=x/", `threshold "a=x/": C "x" is not a count (use a whole number, e.g. 1000)`},
		{"a=-1/", `threshold "a=-1/": C "-1" is not a count (use a whole number, e.g. 1000)`},
		{"a=1,000/", `threshold "a=1,000/": C "1,000" is not a count (use a whole number, e.g. 1000)`},
		{"a=18446744073709551616", `threshold "a=18446744073709551616": C "18446744073709551616" is too large (the largest count is 18446744073709551615)`},
		{"a=/ten", `threshold "a=/ten": T "ten" is not a duration (use e.g. 10s, 2m)`},
		{"a=/5/6", `threshold "a=/5/6": T "5/6" is not a duration (use e.g. 10s, 2m)`},
		{"a=/-5s", `threshold "a=/-5s": T "-5s" is negative (use 0 or more, e.g. 10s)`},
		{"a=/-5", `threshold "a=/-5": T "-5" is negative (use 0 or more, e.g. 10s)`},
		{"a=/9999999999999999999", `threshold "a=/9999999999999999999": T "9999999999999999999" is too large (use e.g. 10s, 2m)`},
		{"a=/9223372037", `threshold "a=/9223372037": T "9223372037" is too large (use e.g. 10s, 2m)`},
	}
	for _, tt := range bad {
		event, p, err := ParseEventSpec(tt.spec)
		if err == nil {
			t.Errorf("ParseEventSpec(%q) = %q, %s; want error %q", tt.spec, event, p, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("ParseEventSpec(%q) error\n got %q\nwant %q", tt.spec, err, tt.want)
		}
	}
}

func TestParseT(t *testing.T) {
	good := map[string]time.Duration{
		"0": 0, "10": 10 * time.Second, "+10": 10 * time.Second, "10s": 10 * time.Second,
		"2m": 2 * time.Minute, "1m30s": 90 * time.Second, "500ms": 500 * time.Millisecond,
		"9223372036": 9223372036 * time.Second, "-0s": 0,
	}
	for s, want := range good {
		if got, err := ParseT(s); err != nil || got != want {
			t.Errorf("ParseT(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "ten", "10 s", "-1s", "-1", "s", "1e3", "+", "-"} {
		if got, err := ParseT(s); err == nil {
			t.Errorf("ParseT(%q) = %v, want an error", s, got)
		}
	}
}

func TestParseC(t *testing.T) {
	for s, want := range map[string]uint64{"0": 0, "1": 1, "1000": 1000, "007": 7} {
		if got, err := ParseC(s); err != nil || got != want {
			t.Errorf("ParseC(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", " 1", "+1", "-1", "1e3", "1_000", "0x10", "1.5"} {
		if got, err := ParseC(s); err == nil {
			t.Errorf("ParseC(%q) = %v, want an error", s, got)
		}
	}
}

func TestPartialString(t *testing.T) {
	tests := []struct {
		p    Partial
		want string
	}{
		{Partial{}, ""},
		{Partial{C: u(500)}, "500/"},
		{Partial{T: d(30 * time.Second)}, "/30s"},
		{Partial{C: u(500), T: d(90 * time.Second)}, "500/1m30s"},
		{Partial{C: u(0), T: d(0)}, "0/0s"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.p, got, tt.want)
		}
	}
}

func TestAddEventSpec(t *testing.T) {
	var o Overrides
	for _, spec := range []string{"a=5/10s", "b=/1m", "a=/20s", "b=7"} {
		if err := o.AddEventSpec(spec); err != nil {
			t.Fatalf("AddEventSpec(%q): %v", spec, err)
		}
	}
	want := map[string]Partial{
		"a": {C: u(5), T: d(20 * time.Second)},
		"b": {C: u(7), T: d(time.Minute)},
	}
	if !reflect.DeepEqual(o.Events, want) {
		t.Fatalf("Events = %v, want %v", o.Events, want)
	}
	if err := o.AddEventSpec("A=1"); err == nil {
		t.Fatal("AddEventSpec(A=1) succeeded")
	}
	if !reflect.DeepEqual(o.Events, want) {
		t.Fatalf("failed AddEventSpec changed Events to %v", o.Events)
	}
}

func TestOverridesFormat(t *testing.T) {
	o := Overrides{
		C: u(1000),
		T: d(10 * time.Second),
		Events: map[string]Partial{
			"z.last":               {C: u(1)},
			"ob1.send_pending.new": {C: u(500), T: d(90 * time.Second)},
			"a.first":              {T: d(0)},
			"nothing":              {},
		},
	}
	want := "C = 1000\n" +
		"T = 10s\n" +
		"threshold.a.first = /0s\n" +
		"threshold.ob1.send_pending.new = 500/1m30s\n" +
		"threshold.z.last = 1/\n"
	if got := o.Format(); got != want {
		t.Fatalf("Format() =\n%s\nwant\n%s", got, want)
	}
	if got := (Overrides{}).Format(); got != "" {
		t.Fatalf("empty Format() = %q", got)
	}
}
