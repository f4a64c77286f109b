package thresholds

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name string
		text string
		want Overrides
	}{
		{"empty file", "", Overrides{}},
		{"only comments and blank lines", "# nothing\n\n   \t\n  # indented comment\n", Overrides{}},
		{"C", "C = 1000\n", Overrides{C: u(1000)}},
		{"C zero", "C=0", Overrides{C: u(0)}},
		{"T duration", "T = 1m30s\n", Overrides{T: d(90 * time.Second)}},
		{"T bare seconds", "T = 10\n", Overrides{T: d(10 * time.Second)}},
		{"T sub-second", "T = 250ms\n", Overrides{T: d(250 * time.Millisecond)}},
		{"threshold C and T", "threshold.ob1.send_pending.new = 500/30s\n",
			Overrides{Events: map[string]Partial{"ob1.send_pending.new": {C: u(500), T: d(30 * time.Second)}}}},
		{"threshold C only with slash", "threshold.a = 500/\n", Overrides{Events: map[string]Partial{"a": {C: u(500)}}}},
		{"threshold C only", "threshold.a = 500\n", Overrides{Events: map[string]Partial{"a": {C: u(500)}}}},
		{"threshold T only", "threshold.a = /30s\n", Overrides{Events: map[string]Partial{"a": {T: d(30 * time.Second)}}}},
		{
			"everything, with comments, CRLF, BOM and odd spacing",
			"\uFEFF# mpiprobe config\r\n" +
				"C = 1000   # all events\r\n" +
				"\tT=5\r\n" +
				"\r\n" +
				"threshold.ob1.send_pending.new = 500 / 1m # noisy\r\n" +
				"threshold.pml.probe-any = /0\r\n",
			Overrides{
				C: u(1000),
				T: d(5 * time.Second),
				Events: map[string]Partial{
					"ob1.send_pending.new": {C: u(500), T: d(time.Minute)},
					"pml.probe-any":        {T: d(0)},
				},
			},
		},
		{"no final newline", "C = 1", Overrides{C: u(1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConfig(strings.NewReader(tt.text), "test.conf")
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseConfig =\n%s\nwant\n%s", got.Format(), tt.want.Format())
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	const name = "/etc/mpiprobe/config.conf"
	// pad puts the bad line on line 7, as in the package documentation.
	pad := "# 1\n# 2\n\n# 4\nC = 1000\n# 6\n"
	tests := []struct {
		name string
		text string
		want string
	}{
		{"T not a duration", pad + "T = ten\n",
			`config /etc/mpiprobe/config.conf:7: key "T": "ten" is not a duration (use e.g. 10s, 2m)`},
		{"T negative", pad + "T = -5s\n",
			`config /etc/mpiprobe/config.conf:7: key "T": "-5s" is negative (use 0 or more, e.g. 10s)`},
		{"T negative seconds", pad + "T = -5\n",
			`config /etc/mpiprobe/config.conf:7: key "T": "-5" is negative (use 0 or more, e.g. 10s)`},
		{"T too large", pad + "T = 99999999999\n",
			`config /etc/mpiprobe/config.conf:7: key "T": "99999999999" is too large (use e.g. 10s, 2m)`},
		{"T empty", pad + "T =\n",
			`config /etc/mpiprobe/config.conf:7: key "T": missing value (use e.g. T = 10s)`},
		{"C not a count", "C = lots\n",
			`config /etc/mpiprobe/config.conf:1: key "C": "lots" is not a count (use a whole number, e.g. 1000)`},
		{"C negative", "C = -1\n",
			`config /etc/mpiprobe/config.conf:1: key "C": "-1" is not a count (use a whole number, e.g. 1000)`},
		{"C too large", "C = 18446744073709551616\n",
			`config /etc/mpiprobe/config.conf:1: key "C": "18446744073709551616" is too large (the largest count is 18446744073709551615)`},
		{"C empty", "C = # later\n",
			`config /etc/mpiprobe/config.conf:1: key "C": missing value (use e.g. C = 1000)`},
		{"threshold bad event name", "threshold.Ob1 = 5\n",
			`config /etc/mpiprobe/config.conf:1: key "threshold.Ob1": event name "Ob1" is invalid (use lowercase letters, digits, '_', '.' and '-')`},
		{"threshold missing event name", "threshold. = 5\n",
			`config /etc/mpiprobe/config.conf:1: key "threshold.": missing event name (use threshold.EVENT = C/T, e.g. threshold.ob1.send_pending.new = 500/10s)`},
		{"threshold bad C", "threshold.a = x/10s\n",
			`config /etc/mpiprobe/config.conf:1: key "threshold.a": C "x" is not a count (use a whole number, e.g. 1000)`},
		{"threshold bad T", "threshold.a = 5/ten\n",
			`config /etc/mpiprobe/config.conf:1: key "threshold.a": T "ten" is not a duration (use e.g. 10s, 2m)`},
		{"threshold negative T", "threshold.a = /-1s\n",
			`config /etc/mpiprobe/config.conf:1: key "threshold.a": T "-1s" is negative (use 0 or more, e.g. 10s)`},
		{"threshold sets nothing", "threshold.a = /\n",
			`config /etc/mpiprobe/config.conf:1: key "threshold.a": "/" sets neither C nor T (use C/T, e.g. 500/10s, 500/ or /30s)`},
		{"threshold empty", "threshold.a =\n",
			`config /etc/mpiprobe/config.conf:1: key "threshold.a": missing value (use e.g. threshold.a = 500/10s)`},
		{"unknown key", "\nfoo = 1\n",
			`config /etc/mpiprobe/config.conf:2: unknown key "foo" (use C, T or threshold.EVENT)`},
		{"lowercase c", "c = 1\n",
			`config /etc/mpiprobe/config.conf:1: unknown key "c" (keys are case-sensitive: use "C")`},
		{"lowercase t", "t = 1\n",
			`config /etc/mpiprobe/config.conf:1: unknown key "t" (keys are case-sensitive: use "T")`},
		{"event name without prefix", "ob1.send_pending.new = 5\n",
			`config /etc/mpiprobe/config.conf:1: unknown key "ob1.send_pending.new" (use C, T or threshold.EVENT)`},
		{"not key = value", "C 1000\n",
			`config /etc/mpiprobe/config.conf:1: "C 1000" is not a "key = value" setting (use e.g. T = 10s)`},
		{"missing key", "= 5\n",
			`config /etc/mpiprobe/config.conf:1: missing key before "=" (use e.g. T = 10s)`},
		{"duplicate C", "C = 1\n\nT = 1s\nC = 1\n",
			`config /etc/mpiprobe/config.conf:4: key "C" repeats line 1 (keep only one of them)`},
		{"duplicate T", "T = 1s\nT = 2s\n",
			`config /etc/mpiprobe/config.conf:2: key "T" repeats line 1 (keep only one of them)`},
		{"duplicate threshold", "threshold.a = 1/\nthreshold.b = 1/\nthreshold.a = /1s\n",
			`config /etc/mpiprobe/config.conf:3: key "threshold.a" repeats line 1 (keep only one of them)`},
		{"invalid UTF-8", "C = 1\nT = \xff\n",
			`config /etc/mpiprobe/config.conf:2: line is not valid UTF-8 (save the file as UTF-8)`},
		{"long value is shortened", "C = " + strings.Repeat("9", 100) + "x\n",
			`config /etc/mpiprobe/config.conf:1: key "C": "` + strings.Repeat("9", 60) + `"... is not a count (use a whole number, e.g. 1000)`},
		{"control characters are quoted", "C = 1\x00\n",
			`config /etc/mpiprobe/config.conf:1: key "C": "1\x00" is not a count (use a whole number, e.g. 1000)`},
		{"line too long", "C = 1\n" + strings.Repeat("#", MaxConfigLine+1) + "\n",
			`config /etc/mpiprobe/config.conf:2: line is longer than 65536 bytes (shorten it)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConfig(strings.NewReader(tt.text), name)
			if err == nil {
				t.Fatalf("ParseConfig succeeded with\n%s", got.Format())
			}
			if err.Error() != tt.want {
				t.Fatalf("error\n got %q\nwant %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
		})
	}
}

func TestParseConfigReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := ParseConfig(iotest.ErrReader(boom), "x.conf")
	if !errors.Is(err, boom) {
		t.Fatalf("error %v does not wrap the read error", err)
	}
	if want := "config x.conf: boom"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}

func TestFormatRoundTrip(t *testing.T) {
	o := Overrides{
		C: u(0),
		T: d(1500 * time.Millisecond),
		Events: map[string]Partial{
			"a":                    {C: u(18446744073709551615)},
			"ob1.send_pending.new": {C: u(500), T: d(9223372036854775807)},
			"b-c_d":                {T: d(0)},
		},
	}
	got, err := ParseConfig(strings.NewReader(o.Format()), "formatted")
	if err != nil {
		t.Fatalf("ParseConfig(Format()): %v\n%s", err, o.Format())
	}
	if !reflect.DeepEqual(got, o) {
		t.Fatalf("round trip =\n%s\nwant\n%s", got.Format(), o.Format())
	}
}
