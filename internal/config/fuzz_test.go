package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/thresholds"
)

func FuzzParse(f *testing.F) {
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
		"threshold.x = 1\n",
		"foo = bar\n",
		"metrics-addr = off\n",
		"Interval = 1s\n",
		"= 1\n",
		"C 1000\n",
		"C = \xff\n",
		"T = 9223372036854775807ns\n",
		"T = 2562047h47m16.854775807s\n",
		"C = 18446744073709551615\n",
		"threshold.a = /\n",
		"threshold.a = 1/2/3\n",
		"events = default,retries\n",
		"events = all,default\n",
		"events = ,\n",
		"library_paths = /a:/b/../c\n",
		"library_paths = a::\n",
		"metrics_addr = [fe80::1%eth0]:9767\n",
		"metrics_addr = off\n",
		"metrics_addr = :99999\n",
		"state_dir = /var/lib/mpiprobe\n",
		"retention.jobs = 0\n",
		"retention.age = 1d12h\n",
		"retention.age = 106751d23h\n",
		"retention.age = -1d\n",
		"interval = 100ms\n",
		"interval = --1s\n",
		"pin_dir = /sys/fs/bpf/../x\n",
		"metrics_ttl = 0\n",
	} {
		f.Add(seed)
	}
	opt := Options{
		KnownEvent: func(id string) bool { return id != "x" },
		Levels:     []string{"default", "retries"},
	}
	f.Fuzz(func(t *testing.T, text string) {
		c, err := Parse(strings.NewReader(text), "fuzz.conf", opt)
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "config fuzz.conf:") {
				t.Fatalf("badly formed error %q", msg)
			}
			return
		}
		o := c.Thresholds
		if o.T != nil && *o.T < 0 {
			t.Fatalf("negative T %v from %q", *o.T, text)
		}
		for event, p := range o.Events {
			if thresholds.CheckEvent(event, "") != nil || !opt.KnownEvent(event) {
				t.Fatalf("invalid event name %q accepted", event)
			}
			if p.C == nil && p.T == nil {
				t.Fatalf("event %q sets nothing", event)
			}
			if p.T != nil && *p.T < 0 {
				t.Fatalf("negative T %v for %q", *p.T, event)
			}
			if c.Lines["threshold."+event] == 0 {
				t.Fatalf("event %q has no line", event)
			}
		}
		switch {
		case c.RetentionJobs < 1:
			t.Fatalf("retention.jobs %d", c.RetentionJobs)
		case c.RetentionAge < MinRetentionAge:
			t.Fatalf("retention.age %v", c.RetentionAge)
		case c.Interval < MinInterval || c.Interval > MaxInterval:
			t.Fatalf("interval %v", c.Interval)
		case c.MetricsTTL < 0:
			t.Fatalf("metrics_ttl %v", c.MetricsTTL)
		case !strings.HasPrefix(c.PinDir, BPFRoot+"/"):
			t.Fatalf("pin_dir %q", c.PinDir)
		case !strings.HasPrefix(c.StateDir, "/"):
			t.Fatalf("state_dir %q", c.StateDir)
		}
		for _, p := range c.LibraryPaths {
			if !strings.HasPrefix(p, "/") {
				t.Fatalf("library path %q", p)
			}
		}
		for key, line := range c.Lines {
			if line < 1 || !strings.HasPrefix(key, "threshold.") && lookup(key) == nil {
				t.Fatalf("Lines[%q] = %d", key, line)
			}
		}

		// Parse reads back what Overrides.Format writes, and what it accepted
		// once it accepts again.
		formatted := o.Format()
		again, err := Parse(strings.NewReader(formatted), "formatted", opt)
		if err != nil {
			t.Fatalf("formatted overrides do not parse: %v\n%s", err, formatted)
		}
		if !reflect.DeepEqual(again.Thresholds, o) {
			t.Fatalf("round trip changed the overrides:\nfirst  %s\nsecond %s", formatted, again.Thresholds.Format())
		}
	})
}
