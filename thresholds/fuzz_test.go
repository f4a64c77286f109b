package thresholds

import (
	"reflect"
	"strings"
	"testing"
)

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
