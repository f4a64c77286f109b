package thresholds

import (
	"reflect"
	"testing"
	"time"
)

func TestParsePartial(t *testing.T) {
	const help = "use C/T"
	tests := []struct {
		in   string
		want Partial
		err  string
	}{
		{"500/30s", Partial{C: u(500), T: d(30 * time.Second)}, ""},
		{" 500 / 1m ", Partial{C: u(500), T: d(time.Minute)}, ""},
		{"500/", Partial{C: u(500)}, ""},
		{"500", Partial{C: u(500)}, ""},
		{"/10", Partial{T: d(10 * time.Second)}, ""},
		{"/", Partial{}, `"/" sets neither C nor T (use C/T)`},
		{"", Partial{}, `"" sets neither C nor T (use C/T)`},
		{"x/1s", Partial{}, `C "x" is not a count (use a whole number, e.g. 1000)`},
		{"1/ten", Partial{}, `T "ten" is not a duration (use e.g. 10s, 2m)`},
		{"1/-1s", Partial{}, `T "-1s" is negative (use 0 or more, e.g. 10s)`},
	}
	for _, tt := range tests {
		got, err := ParsePartial(tt.in, help)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("ParsePartial(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParsePartial(%q) = %v, %v, want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestCheckEvent(t *testing.T) {
	for _, ok := range []string{"a", "ob1.send_pending.new", "pml.probe-any", "x_1"} {
		if err := CheckEvent(ok, "help"); err != nil {
			t.Errorf("CheckEvent(%q) = %v", ok, err)
		}
	}
	tests := map[string]string{
		"":    "missing event name (help)",
		"Ob1": `event name "Ob1" is invalid (use lowercase letters, digits, '_', '.' and '-')`,
		"a b": `event name "a b" is invalid (use lowercase letters, digits, '_', '.' and '-')`,
		"é":   `event name "é" is invalid (use lowercase letters, digits, '_', '.' and '-')`,
	}
	for name, want := range tests {
		if err := CheckEvent(name, "help"); err == nil || err.Error() != want {
			t.Errorf("CheckEvent(%q) = %v, want %q", name, err, want)
		}
	}
}
