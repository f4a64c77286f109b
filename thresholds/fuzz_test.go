package thresholds

import (
	"reflect"
	"strings"
	"testing"
)

func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		"",
		"C = 1000\nT = 10s\n",
		"T = 10\n",
		"# comment\n\nthreshold.ob1.send_pending.new = 500/30s # noisy\n",
		"threshold.a = 500/\nthreshold.b = /1m30s\nthreshold.c = 7\n",
		"\uFEFFC=0\r\nT=0\r\n",
		"T = ten\n",
		"T = -5s\n",
		"C = 1\nC = 2\n",
		"threshold.A = 1\n",
		"threshold. = 1\n",
		"foo = bar\n",
		"= 1\n",
		"C 1000\n",
		"C = \xff\n",
		"T = 9223372036854775807ns\n",
		"T = 2562047h47m16.854775807s\n",
		"C = 18446744073709551615\n",
		"threshold.a = /\n",
		"threshold.a = 1/2/3\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		o, err := ParseConfig(strings.NewReader(text), "fuzz.conf")
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "config fuzz.conf:") {
				t.Fatalf("badly formed error %q", msg)
			}
			return
		}
		if o.T != nil && *o.T < 0 {
			t.Fatalf("negative T %v from %q", *o.T, text)
		}
		for event, p := range o.Events {
			if checkEvent(event, "") != nil {
				t.Fatalf("invalid event name %q accepted", event)
			}
			if p.C == nil && p.T == nil {
				t.Fatalf("event %q sets nothing", event)
			}
			if p.T != nil && *p.T < 0 {
				t.Fatalf("negative T %v for %q", *p.T, event)
			}
		}
		formatted := o.Format()
		again, err := ParseConfig(strings.NewReader(formatted), "formatted")
		if err != nil {
			t.Fatalf("formatted overrides do not parse: %v\n%s", err, formatted)
		}
		if !reflect.DeepEqual(again, o) {
			t.Fatalf("round trip changed the overrides:\nfirst  %s\nsecond %s", formatted, again.Format())
		}
	})
}

func FuzzParseEventSpec(f *testing.F) {
	for _, seed := range []string{
		"ob1.send_pending.new=500/10s",
		"ob1.send_pending.new=500/",
		"ob1.send_pending.new=/30s",
		"ob1.send_pending.new=500",
		"a=/10",
		" a = 5 / 1m ",
		"a",
		"=5",
		"A=5",
		"a=",
		"a=/",
		"a=/-5",
		"a=/ten",
		"a=99999999999999999999",
		"a=/9223372037",
		"a=1/2/3",
		"a=/1.5h",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		event, p, err := ParseEventSpec(spec)
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "threshold ") {
				t.Fatalf("badly formed error %q", msg)
			}
			return
		}
		if checkEvent(event, "") != nil {
			t.Fatalf("invalid event name %q accepted", event)
		}
		if p.C == nil && p.T == nil {
			t.Fatalf("%q sets nothing", spec)
		}
		if p.T != nil && *p.T < 0 {
			t.Fatalf("negative T %v from %q", *p.T, spec)
		}
		formatted := event + "=" + p.String()
		event2, p2, err := ParseEventSpec(formatted)
		if err != nil {
			t.Fatalf("formatted spec %q does not parse: %v", formatted, err)
		}
		if event2 != event || !reflect.DeepEqual(p2, p) {
			t.Fatalf("round trip of %q via %q gave %q, %s", spec, formatted, event2, p2)
		}
	})
}
