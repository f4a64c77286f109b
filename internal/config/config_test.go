package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/mpiprobe/mpiprobe/probes"
	"github.com/mpiprobe/mpiprobe/thresholds"
)

func u(n uint64) *uint64               { return &n }
func d(x time.Duration) *time.Duration { return &x }

// catalog are the Options of the real probe catalog.
func catalog() Options {
	full := probes.Full()
	var levels []string
	for _, l := range full.Levels() {
		levels = append(levels, string(l))
	}
	return Options{
		KnownEvent: func(id string) bool { _, _, ok := full.Lookup(id); return ok },
		Levels:     levels,
	}
}

// testOptions know the events a, b, ob1.send_pending.new and pml.probe-any
// and the levels default and retries.
var testOptions = Options{
	KnownEvent: func(id string) bool {
		switch id {
		case "a", "b", "ob1.send_pending.new", "pml.probe-any":
			return true
		}
		return false
	},
	Levels: []string{"default", "retries"},
}

func TestDefault(t *testing.T) {
	want := Config{
		MetricsAddr:   "127.0.0.1:9767",
		StateDir:      "/var/lib/mpiprobe",
		RetentionJobs: 1000,
		RetentionAge:  720 * time.Hour,
		Interval:      time.Second,
		PinDir:        "/sys/fs/bpf/mpiprobe/agent",
		Scope:         "host",
		MetricsTTL:    10 * time.Minute,
		QuerySocket:   "/run/mpiprobe/query.sock",
		Lines:         map[string]int{},
	}
	if got := Default(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Default() = %+v\nwant %+v", got, want)
	}
	for _, text := range []string{"", "# nothing\n\n   \t\n  # indented comment\n", "\uFEFF", "\uFEFF# bom\r\n\r\n"} {
		got, err := Parse(strings.NewReader(text), "test.conf", testOptions)
		if err != nil {
			t.Fatalf("Parse(%q): %v", text, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Parse(%q) = %+v\nwant the defaults %+v", text, got, want)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		set   func(c *Config)
		lines map[string]int // nil: the key of the one-line text on line 1
	}{
		{"C", "C = 1000\n", func(c *Config) { c.Thresholds.C = u(1000) }, nil},
		{"C zero", "C=0", func(c *Config) { c.Thresholds.C = u(0) }, nil},
		{"C largest", "C = 18446744073709551615", func(c *Config) { c.Thresholds.C = u(18446744073709551615) }, nil},
		{"T duration", "T = 1m30s\n", func(c *Config) { c.Thresholds.T = d(90 * time.Second) }, nil},
		{"T bare seconds", "T = 10\n", func(c *Config) { c.Thresholds.T = d(10 * time.Second) }, nil},
		{"T sub-second", "T = 250ms\n", func(c *Config) { c.Thresholds.T = d(250 * time.Millisecond) }, nil},
		{"T zero", "T = 0\n", func(c *Config) { c.Thresholds.T = d(0) }, nil},
		{"threshold C and T", "threshold.ob1.send_pending.new = 500/30s\n", func(c *Config) {
			c.Thresholds.Events = map[string]thresholds.Partial{"ob1.send_pending.new": {C: u(500), T: d(30 * time.Second)}}
		}, nil},
		{"threshold C only with slash", "threshold.a = 500/\n", func(c *Config) {
			c.Thresholds.Events = map[string]thresholds.Partial{"a": {C: u(500)}}
		}, nil},
		{"threshold C only", "threshold.a = 500\n", func(c *Config) {
			c.Thresholds.Events = map[string]thresholds.Partial{"a": {C: u(500)}}
		}, nil},
		{"threshold T only", "threshold.a = /30s\n", func(c *Config) {
			c.Thresholds.Events = map[string]thresholds.Partial{"a": {T: d(30 * time.Second)}}
		}, nil},
		{"events default", "events = default", func(c *Config) { c.Events = []string{"default"} }, nil},
		{"events two", "events = default, retries", func(c *Config) { c.Events = []string{"default", "retries"} }, nil},
		{"events retries only", "events=retries", func(c *Config) { c.Events = []string{"retries"} }, nil},
		{"events all", "events = all", func(c *Config) { c.Events = []string{"all"} }, nil},
		{"library_paths one", "library_paths = /opt/openmpi/lib", func(c *Config) {
			c.LibraryPaths = []string{"/opt/openmpi/lib"}
		}, nil},
		{"debug_dirs", "debug_dirs = /opt/openmpi/debug:/usr/lib/debug/", func(c *Config) {
			c.DebugDirs = []string{"/opt/openmpi/debug", "/usr/lib/debug"}
		}, nil},
		{"library_paths several, cleaned", "library_paths = /opt/openmpi/lib/ : /opt//mpich/lib/libmpi.so.12:/x/../y", func(c *Config) {
			c.LibraryPaths = []string{"/opt/openmpi/lib", "/opt/mpich/lib/libmpi.so.12", "/y"}
		}, nil},
		{"metrics_addr IPv4", "metrics_addr = 10.0.0.1:80", func(c *Config) { c.MetricsAddr = "10.0.0.1:80" }, nil},
		{"metrics_addr IPv6", "metrics_addr = [::1]:9767", func(c *Config) { c.MetricsAddr = "[::1]:9767" }, nil},
		{"metrics_addr IPv6 zone", "metrics_addr = [fe80::1%eth0]:9767", func(c *Config) { c.MetricsAddr = "[fe80::1%eth0]:9767" }, nil},
		{"metrics_addr all addresses", "metrics_addr = :9767", func(c *Config) { c.MetricsAddr = ":9767" }, nil},
		{"metrics_addr host name", "metrics_addr = node-1.cluster_a.example:65535", func(c *Config) {
			c.MetricsAddr = "node-1.cluster_a.example:65535"
		}, nil},
		{"metrics_addr port 0", "metrics_addr = localhost:0", func(c *Config) { c.MetricsAddr = "localhost:0" }, nil},
		{"metrics_addr port leading zeros", "metrics_addr = localhost:0080", func(c *Config) { c.MetricsAddr = "localhost:80" }, nil},
		{"metrics_addr off", "metrics_addr = off", func(c *Config) { c.MetricsAddr = "" }, nil},
		{"state_dir", "state_dir = /srv/mpiprobe/", func(c *Config) { c.StateDir = "/srv/mpiprobe" }, nil},
		{"state_dir root", "state_dir = /", func(c *Config) { c.StateDir = "/" }, nil},
		{"shared_dir", "shared_dir = /shared/mpiprobe/", func(c *Config) { c.SharedDir = "/shared/mpiprobe" }, nil},
		{"retention.jobs", "retention.jobs = 5", func(c *Config) { c.RetentionJobs = 5 }, nil},
		{"retention.jobs 1", "retention.jobs = 1", func(c *Config) { c.RetentionJobs = 1 }, nil},
		{"retention.age days", "retention.age = 7d", func(c *Config) { c.RetentionAge = 7 * 24 * time.Hour }, nil},
		{"retention.age days and hours", "retention.age = 1d12h", func(c *Config) { c.RetentionAge = 36 * time.Hour }, nil},
		{"retention.age hours", "retention.age = 48h", func(c *Config) { c.RetentionAge = 48 * time.Hour }, nil},
		{"retention.age minimum", "retention.age = 1m", func(c *Config) { c.RetentionAge = time.Minute }, nil},
		{"retention.age fraction", "retention.age = 0.5h", func(c *Config) { c.RetentionAge = 30 * time.Minute }, nil},
		{"interval", "interval = 250ms", func(c *Config) { c.Interval = 250 * time.Millisecond }, nil},
		{"interval minimum", "interval = 100ms", func(c *Config) { c.Interval = 100 * time.Millisecond }, nil},
		{"interval maximum", "interval = 1m", func(c *Config) { c.Interval = time.Minute }, nil},
		{"interval plus sign", "interval = +2s", func(c *Config) { c.Interval = 2 * time.Second }, nil},
		{"pin_dir", "pin_dir = /sys/fs/bpf/other/", func(c *Config) { c.PinDir = "/sys/fs/bpf/other" }, nil},
		{"metrics_ttl", "metrics_ttl = 1h", func(c *Config) { c.MetricsTTL = time.Hour }, nil},
		{"metrics_ttl zero", "metrics_ttl = 0", func(c *Config) { c.MetricsTTL = 0 }, nil},
		{"scope netns", "scope = netns", func(c *Config) { c.Scope = "netns" }, nil},
		{"scope host", "scope = host", func(c *Config) { c.Scope = "host" }, nil},
		{"query_socket", "query_socket = /run/x/../q.sock", func(c *Config) { c.QuerySocket = "/run/q.sock" }, nil},
		{"query_socket off", "query_socket = off", func(c *Config) { c.QuerySocket = "" }, nil},
		{"metrics_ttl days", "metrics_ttl = 2d", func(c *Config) { c.MetricsTTL = 48 * time.Hour }, nil},
		{
			"everything, with comments, CRLF, BOM and odd spacing",
			"\uFEFF# mpiprobe config\r\n" +
				"C = 1000   # all events\r\n" +
				"\tT=5\r\n" +
				"\r\n" +
				"threshold.ob1.send_pending.new = 500 / 1m # noisy\r\n" +
				"threshold.pml.probe-any = /0\r\n" +
				"events = retries\r\n" +
				"library_paths = /a:/b\r\n" +
				"metrics_addr = off\r\n" +
				"state_dir = /s\r\n" +
				"retention.jobs = 10\r\n" +
				"retention.age = 2d\r\n" +
				"interval = 2s\r\n" +
				"pin_dir = /sys/fs/bpf/p\r\n" +
				"metrics_ttl = 0s\r\n",
			func(c *Config) {
				c.Thresholds = thresholds.Overrides{
					C: u(1000),
					T: d(5 * time.Second),
					Events: map[string]thresholds.Partial{
						"ob1.send_pending.new": {C: u(500), T: d(time.Minute)},
						"pml.probe-any":        {T: d(0)},
					},
				}
				c.Events = []string{"retries"}
				c.LibraryPaths = []string{"/a", "/b"}
				c.MetricsAddr = ""
				c.StateDir = "/s"
				c.RetentionJobs = 10
				c.RetentionAge = 48 * time.Hour
				c.Interval = 2 * time.Second
				c.PinDir = "/sys/fs/bpf/p"
				c.MetricsTTL = 0
			},
			map[string]int{
				"C": 2, "T": 3, "threshold.ob1.send_pending.new": 5, "threshold.pml.probe-any": 6,
				"events": 7, "library_paths": 8, "metrics_addr": 9, "state_dir": 10, "retention.jobs": 11,
				"retention.age": 12, "interval": 13, "pin_dir": 14, "metrics_ttl": 15,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.text), "test.conf", testOptions)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := Default()
			tt.set(&want)
			want.Lines = tt.lines
			if want.Lines == nil {
				key, _, _ := strings.Cut(tt.text, "=")
				want.Lines = map[string]int{strings.TrimSpace(key): 1}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Parse =\n%+v\n%s\nwant\n%+v\n%s", got, got.Thresholds.Format(), want, want.Thresholds.Format())
			}
		})
	}
}

// TestParseNilOptions checks that zero Options accept any valid event and
// level name.
func TestParseNilOptions(t *testing.T) {
	got, err := Parse(strings.NewReader("threshold.no.such_event = 1/\nevents = deep,x-1_2\n"), "test.conf", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Thresholds.Events["no.such_event"]; !ok || !reflect.DeepEqual(got.Events, []string{"deep", "x-1_2"}) {
		t.Fatalf("Parse = %+v", got)
	}
	_, err = Parse(strings.NewReader("events = Deep\n"), "test.conf", Options{})
	want := `config test.conf:1: key "events": level "Deep" is invalid (use lowercase letters, digits, '_' and '-')`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

func TestParseErrors(t *testing.T) {
	const name = "/etc/mpiprobe/config.conf"
	const at = "config /etc/mpiprobe/config.conf:"
	// pad puts the bad line on line 7, as in the package documentation.
	pad := "# 1\n# 2\n\n# 4\nC = 1000\n# 6\n"
	tests := []struct {
		name string
		text string
		want string
	}{
		// T
		{"T not a duration", pad + "T = ten\n", at + `7: key "T": "ten" is not a duration (use e.g. 10s, 2m)`},
		{"T negative", pad + "T = -5s\n", at + `7: key "T": "-5s" is negative (use 0 or more, e.g. 10s)`},
		{"T negative seconds", pad + "T = -5\n", at + `7: key "T": "-5" is negative (use 0 or more, e.g. 10s)`},
		{"T too large", pad + "T = 99999999999\n", at + `7: key "T": "99999999999" is too large (use e.g. 10s, 2m)`},
		{"T empty", pad + "T =\n", at + `7: key "T": missing value (use e.g. T = 10s)`},
		// C
		{"C not a count", "C = lots\n", at + `1: key "C": "lots" is not a count (use a whole number, e.g. 1000)`},
		{"C negative", "C = -1\n", at + `1: key "C": "-1" is not a count (use a whole number, e.g. 1000)`},
		{"C too large", "C = 18446744073709551616\n",
			at + `1: key "C": "18446744073709551616" is too large (the largest count is 18446744073709551615)`},
		{"C empty", "C = # later\n", at + `1: key "C": missing value (use e.g. C = 1000)`},
		// threshold.EVENT
		{"threshold bad event name", "threshold.Ob1 = 5\n",
			at + `1: key "threshold.Ob1": event name "Ob1" is invalid (use lowercase letters, digits, '_', '.' and '-')`},
		{"threshold missing event name", "threshold. = 5\n",
			at + `1: key "threshold.": missing event name (use threshold.EVENT = C/T, e.g. threshold.ob1.send_pending.new = 500/10s)`},
		{"threshold unknown event", "C = 1\nthreshold.x = 5\n",
			at + `2: key "threshold.x": unknown event "x" (mpiprobe -h lists them)`},
		{"threshold bad C", "threshold.a = x/10s\n", at + `1: key "threshold.a": C "x" is not a count (use a whole number, e.g. 1000)`},
		{"threshold bad T", "threshold.a = 5/ten\n", at + `1: key "threshold.a": T "ten" is not a duration (use e.g. 10s, 2m)`},
		{"threshold negative T", "threshold.a = /-1s\n", at + `1: key "threshold.a": T "-1s" is negative (use 0 or more, e.g. 10s)`},
		{"threshold sets nothing", "threshold.a = /\n",
			at + `1: key "threshold.a": "/" sets neither C nor T (use C/T, e.g. 500/10s, 500/ or /30s)`},
		{"threshold too many parts", "threshold.a = 1/2/3\n",
			at + `1: key "threshold.a": T "2/3" is not a duration (use e.g. 10s, 2m)`},
		{"threshold empty", "threshold.a =\n", at + `1: key "threshold.a": missing value (use e.g. threshold.a = 500/10s)`},
		// events
		{"events unknown level", "events = everything\n",
			at + `1: key "events": unknown level "everything" (use default, retries or all)`},
		{"events level case", "events = Default\n", at + `1: key "events": unknown level "Default" (use default, retries or all)`},
		{"events empty level", "events = default,\n",
			at + `1: key "events": empty level in "default," (separate levels with one comma, e.g. default,retries)`},
		{"events twice", "events = default,retries,default\n",
			at + `1: key "events": level "default" is listed twice (list each level once)`},
		{"events all and more", "events = all,retries\n",
			at + `1: key "events": "all,retries" combines all with other levels (use all alone, or list the levels)`},
		{"events empty", "events =\n", at + `1: key "events": missing value (use e.g. events = default,retries)`},
		// library_paths
		{"library_paths relative", "library_paths = /opt/lib:lib\n",
			at + `1: key "library_paths": "lib" is not an absolute path (use e.g. /opt/openmpi/lib)`},
		{"library_paths empty element", "library_paths = /a::/b\n",
			at + `1: key "library_paths": empty path in "/a::/b" (separate paths with one colon, e.g. /opt/openmpi/lib:/usr/lib64/mpich/lib)`},
		{"library_paths trailing colon", "library_paths = /a:\n",
			at + `1: key "library_paths": empty path in "/a:" (separate paths with one colon, e.g. /opt/openmpi/lib:/usr/lib64/mpich/lib)`},
		{"library_paths twice", "library_paths = /a/b:/a//b/\n",
			at + `1: key "library_paths": path "/a//b/" is listed twice (list each path once)`},
		{"library_paths control character", "library_paths = /a\x01b\n",
			at + `1: key "library_paths": "/a\x01b" contains a control character (remove it)`},
		{"library_paths empty", "library_paths =\n",
			at + `1: key "library_paths": missing value (use e.g. library_paths = /opt/openmpi/lib)`},
		// metrics_addr
		{"metrics_addr no port", "metrics_addr = localhost\n",
			at + `1: key "metrics_addr": "localhost" is not host:port (use e.g. 127.0.0.1:9767, [::1]:9767, :9767 or off)`},
		{"metrics_addr bare IPv6", "metrics_addr = ::1:9767\n",
			at + `1: key "metrics_addr": "::1:9767" is not host:port (use e.g. 127.0.0.1:9767, [::1]:9767, :9767 or off)`},
		{"metrics_addr Off", "metrics_addr = Off\n",
			at + `1: key "metrics_addr": "Off" is not host:port (use e.g. 127.0.0.1:9767, [::1]:9767, :9767 or off)`},
		{"metrics_addr named port", "metrics_addr = localhost:http\n",
			at + `1: key "metrics_addr": port "http" is not a number from 0 to 65535 (use e.g. 127.0.0.1:9767)`},
		{"metrics_addr port too large", "metrics_addr = localhost:65536\n",
			at + `1: key "metrics_addr": port "65536" is not a number from 0 to 65535 (use e.g. 127.0.0.1:9767)`},
		{"metrics_addr negative port", "metrics_addr = localhost:-1\n",
			at + `1: key "metrics_addr": port "-1" is not a number from 0 to 65535 (use e.g. 127.0.0.1:9767)`},
		{"metrics_addr empty port", "metrics_addr = localhost:\n",
			at + `1: key "metrics_addr": port "" is not a number from 0 to 65535 (use e.g. 127.0.0.1:9767)`},
		{"metrics_addr bad host", "metrics_addr = my host:80\n",
			at + `1: key "metrics_addr": host "my host" is not an IP address or host name (use e.g. 127.0.0.1:9767, [::1]:9767, :9767 or off)`},
		{"metrics_addr empty label", "metrics_addr = a..b:80\n",
			at + `1: key "metrics_addr": host "a..b" is not an IP address or host name (use e.g. 127.0.0.1:9767, [::1]:9767, :9767 or off)`},
		{"metrics_addr empty", "metrics_addr =\n", at + `1: key "metrics_addr": missing value (use e.g. metrics_addr = 127.0.0.1:9767)`},
		// state_dir
		{"state_dir relative", "state_dir = var/lib/mpiprobe\n",
			at + `1: key "state_dir": "var/lib/mpiprobe" is not an absolute path (use e.g. /var/lib/mpiprobe)`},
		{"state_dir tilde", "state_dir = ~/mpiprobe\n",
			at + `1: key "state_dir": "~/mpiprobe" is not an absolute path (use e.g. /var/lib/mpiprobe)`},
		{"state_dir empty", "state_dir =\n", at + `1: key "state_dir": missing value (use e.g. state_dir = /var/lib/mpiprobe)`},
		{"shared_dir relative", "shared_dir = shared\n",
			at + `1: key "shared_dir": "shared" is not an absolute path (use e.g. /shared/mpiprobe)`},
		// retention.jobs
		{"retention.jobs zero", "retention.jobs = 0\n",
			at + `1: key "retention.jobs": "0" is less than 1 (keep at least 1 job, e.g. 1000)`},
		{"retention.jobs negative", "retention.jobs = -5\n",
			at + `1: key "retention.jobs": "-5" is less than 1 (keep at least 1 job, e.g. 1000)`},
		{"retention.jobs very negative", "retention.jobs = -99999999999999999999\n",
			at + `1: key "retention.jobs": "-99999999999999999999" is less than 1 (keep at least 1 job, e.g. 1000)`},
		{"retention.jobs not a number", "retention.jobs = many\n",
			at + `1: key "retention.jobs": "many" is not a whole number (use e.g. 1000)`},
		{"retention.jobs fraction", "retention.jobs = 1.5\n",
			at + `1: key "retention.jobs": "1.5" is not a whole number (use e.g. 1000)`},
		{"retention.jobs plus", "retention.jobs = +5\n",
			at + `1: key "retention.jobs": "+5" is not a whole number (use e.g. 1000)`},
		{"retention.jobs too large", "retention.jobs = 99999999999999999999\n",
			at + `1: key "retention.jobs": "99999999999999999999" is too large (use e.g. 1000)`},
		{"retention.jobs empty", "retention.jobs =\n", at + `1: key "retention.jobs": missing value (use e.g. retention.jobs = 1000)`},
		// retention.age
		{"retention.age too short", "retention.age = 30s\n",
			at + `1: key "retention.age": "30s" is shorter than 1m (use e.g. 30d, 720h)`},
		{"retention.age zero", "retention.age = 0\n",
			at + `1: key "retention.age": "0" is shorter than 1m (use e.g. 30d, 720h)`},
		{"retention.age negative", "retention.age = -1d\n",
			at + `1: key "retention.age": "-1d" is shorter than 1m (use e.g. 30d, 720h)`},
		{"retention.age no unit", "retention.age = 30\n",
			at + `1: key "retention.age": "30" has no unit (use e.g. 30d, 720h)`},
		{"retention.age fractional days", "retention.age = 1.5d\n",
			at + `1: key "retention.age": "1.5d" is not a duration (use e.g. 30d, 720h)`},
		{"retention.age words", "retention.age = a month\n",
			at + `1: key "retention.age": "a month" is not a duration (use e.g. 30d, 720h)`},
		{"retention.age days then sign", "retention.age = 1d-5h\n",
			at + `1: key "retention.age": "1d-5h" is not a duration (use e.g. 30d, 720h)`},
		{"retention.age too many days", "retention.age = 106752d\n",
			at + `1: key "retention.age": "106752d" is too large (use e.g. 30d, 720h)`},
		{"retention.age days overflow", "retention.age = 106751d24h\n",
			at + `1: key "retention.age": "106751d24h" is too large (use e.g. 30d, 720h)`},
		{"retention.age empty", "retention.age =\n", at + `1: key "retention.age": missing value (use e.g. retention.age = 30d)`},
		// interval
		{"interval too short", "interval = 50ms\n",
			at + `1: key "interval": "50ms" is shorter than 100ms (use 100ms to 1m, e.g. 1s)`},
		{"interval zero", "interval = 0\n",
			at + `1: key "interval": "0" is shorter than 100ms (use 100ms to 1m, e.g. 1s)`},
		{"interval too long", "interval = 61s\n",
			at + `1: key "interval": "61s" is longer than 1m (use 100ms to 1m, e.g. 1s)`},
		{"interval negative", "interval = -1s\n",
			at + `1: key "interval": "-1s" is shorter than 100ms (use 100ms to 1m, e.g. 1s)`},
		{"interval double sign", "interval = --1s\n",
			at + `1: key "interval": "--1s" is not a duration (use e.g. 1s, 500ms)`},
		{"interval no unit", "interval = 1\n", at + `1: key "interval": "1" has no unit (use e.g. 1s, 500ms)`},
		{"interval not a duration", "interval = 1 s\n", at + `1: key "interval": "1 s" is not a duration (use e.g. 1s, 500ms)`},
		{"interval empty", "interval =\n", at + `1: key "interval": missing value (use e.g. interval = 1s)`},
		// scope
		{"query_socket relative", "query_socket = q.sock\n", at + `1: key "query_socket": "q.sock" is not an absolute path (use e.g. /run/mpiprobe/query.sock or off)`},
		{"scope unknown", "scope = pod\n", at + `1: key "scope": "pod" is not a scope (use host: every process of the node, or netns: those of mpiprobe's network namespace)`},
		{"scope upper case", "scope = NETNS\n", at + `1: key "scope": "NETNS" is not a scope (use host: every process of the node, or netns: those of mpiprobe's network namespace)`},
		{"scope empty", "scope =\n", at + `1: key "scope": missing value (use e.g. scope = netns)`},
		// pin_dir
		{"pin_dir outside", "pin_dir = /tmp/pins\n",
			at + `1: key "pin_dir": "/tmp/pins" is not below /sys/fs/bpf (use e.g. /sys/fs/bpf/mpiprobe/agent)`},
		{"pin_dir root itself", "pin_dir = /sys/fs/bpf/\n",
			at + `1: key "pin_dir": "/sys/fs/bpf/" is not below /sys/fs/bpf (use e.g. /sys/fs/bpf/mpiprobe/agent)`},
		{"pin_dir prefix only", "pin_dir = /sys/fs/bpfx/a\n",
			at + `1: key "pin_dir": "/sys/fs/bpfx/a" is not below /sys/fs/bpf (use e.g. /sys/fs/bpf/mpiprobe/agent)`},
		{"pin_dir escapes", "pin_dir = /sys/fs/bpf/../x\n",
			at + `1: key "pin_dir": "/sys/fs/bpf/../x" is not below /sys/fs/bpf (use e.g. /sys/fs/bpf/mpiprobe/agent)`},
		{"pin_dir relative", "pin_dir = mpiprobe\n",
			at + `1: key "pin_dir": "mpiprobe" is not an absolute path (use e.g. /sys/fs/bpf/mpiprobe/agent)`},
		{"pin_dir empty", "pin_dir =\n", at + `1: key "pin_dir": missing value (use e.g. pin_dir = /sys/fs/bpf/mpiprobe/agent)`},
		// metrics_ttl
		{"metrics_ttl negative", "metrics_ttl = -1m\n",
			at + `1: key "metrics_ttl": "-1m" is negative (use 0 or more, e.g. 10m)`},
		{"metrics_ttl no unit", "metrics_ttl = 10\n", at + `1: key "metrics_ttl": "10" has no unit (use e.g. 10m, 1h)`},
		{"metrics_ttl not a duration", "metrics_ttl = soon\n",
			at + `1: key "metrics_ttl": "soon" is not a duration (use e.g. 10m, 1h)`},
		{"metrics_ttl empty", "metrics_ttl =\n", at + `1: key "metrics_ttl": missing value (use e.g. metrics_ttl = 10m)`},
		// unknown keys
		{"unknown key", "\nfoo = 1\n",
			at + `2: unknown key "foo" (use C, T, threshold.EVENT, events, library_paths, debug_dirs, metrics_addr, state_dir, shared_dir, retention.jobs, retention.age, interval, pin_dir, metrics_ttl, scope or query_socket)`},
		{"lowercase c", "c = 1\n", at + `1: unknown key "c" (keys are case-sensitive: use "C")`},
		{"lowercase t", "t = 1\n", at + `1: unknown key "t" (keys are case-sensitive: use "T")`},
		{"key case", "Metrics_Addr = off\n", at + `1: unknown key "Metrics_Addr" (keys are case-sensitive: use "metrics_addr")`},
		{"threshold case", "Threshold.a = 1\n", at + `1: unknown key "Threshold.a" (keys are case-sensitive: use "threshold.a")`},
		{"dash for underscore", "metrics-addr = off\n", at + `1: unknown key "metrics-addr" (did you mean "metrics_addr"?)`},
		{"underscore for dot", "retention_jobs = 1\n", at + `1: unknown key "retention_jobs" (did you mean "retention.jobs"?)`},
		{"threshold underscore", "threshold_ob1.send_pending.new = 1\n",
			at + `1: unknown key "threshold_ob1.send_pending.new" (did you mean "threshold.ob1.send_pending.new"?)`},
		{"typo", "intervall = 1s\n", at + `1: unknown key "intervall" (did you mean "interval"?)`},
		{"typo and case", "Metric_Addr = off\n", at + `1: unknown key "Metric_Addr" (did you mean "metrics_addr"?)`},
		{"singular", "event = all\n", at + `1: unknown key "event" (did you mean "events"?)`},
		{"known event without prefix", "ob1.send_pending.new = 5\n",
			at + `1: unknown key "ob1.send_pending.new" (did you mean "threshold.ob1.send_pending.new"?)`},
		{"unknown event without prefix", "no.such.event = 5\n",
			at + `1: unknown key "no.such.event" (use C, T, threshold.EVENT, events, library_paths, debug_dirs, metrics_addr, state_dir, shared_dir, retention.jobs, retention.age, interval, pin_dir, metrics_ttl, scope or query_socket)`},
		{"BOM not on line 1", "C = 1\n\uFEFFT = 1\n", at + `2: unknown key "\ufeffT" (use C, T, threshold.EVENT, events, library_paths, debug_dirs, metrics_addr, state_dir, shared_dir, retention.jobs, retention.age, interval, pin_dir, metrics_ttl, scope or query_socket)`},
		// syntax
		{"not key = value", "C 1000\n", at + `1: "C 1000" is not a "key = value" setting (use e.g. T = 10s)`},
		{"missing key", "= 5\n", at + `1: missing key before "=" (use e.g. T = 10s)`},
		// repeated keys
		{"duplicate C", "C = 1\n\nT = 1s\nC = 1\n", at + `4: key "C" repeats line 1 (keep only one of them)`},
		{"duplicate T", "T = 1s\nT = 2s\n", at + `2: key "T" repeats line 1 (keep only one of them)`},
		{"duplicate threshold", "threshold.a = 1/\nthreshold.b = 1/\nthreshold.a = /1s\n",
			at + `3: key "threshold.a" repeats line 1 (keep only one of them)`},
		{"duplicate agent key", "interval = 1s\nmetrics_ttl = 1m\n# x\ninterval = 2s\n",
			at + `4: key "interval" repeats line 1 (keep only one of them)`},
		{"duplicate empty", "state_dir = /a\nstate_dir =\n", at + `2: key "state_dir" repeats line 1 (keep only one of them)`},
		// encoding and length
		{"invalid UTF-8", "C = 1\nT = \xff\n", at + `2: line is not valid UTF-8 (save the file as UTF-8)`},
		{"long value is shortened", "C = " + strings.Repeat("9", 100) + "x\n",
			at + `1: key "C": "` + strings.Repeat("9", 60) + `"... is not a count (use a whole number, e.g. 1000)`},
		{"control characters are quoted", "C = 1\x00\n", at + `1: key "C": "1\x00" is not a count (use a whole number, e.g. 1000)`},
		{"line too long", "C = 1\n" + strings.Repeat("#", MaxLine+1) + "\n", at + `2: line is longer than 65536 bytes (shorten it)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.text), name, testOptions)
			if err == nil {
				t.Fatalf("Parse succeeded with %+v", got)
			}
			if err.Error() != tt.want {
				t.Fatalf("error\n got %q\nwant %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			if !reflect.DeepEqual(got, Config{}) {
				t.Fatalf("Parse returned %+v with its error", got)
			}
		})
	}
}

// TestLongestLine checks that a line of exactly MaxLine bytes is read,
// whatever ends it, and one byte more is not.
func TestLongestLine(t *testing.T) {
	line := "C = 1 #" + strings.Repeat("x", MaxLine-len("C = 1 #"))
	for _, end := range []string{"\n", "\r\n", ""} {
		got, err := Parse(strings.NewReader(line+end), "test.conf", testOptions)
		if err != nil || got.Thresholds.C == nil || *got.Thresholds.C != 1 {
			t.Fatalf("Parse(line%q) = %+v, %v", end, got, err)
		}
		_, err = Parse(strings.NewReader("\n"+line+"x"+end), "test.conf", testOptions)
		if want := "config test.conf:2: line is longer than 65536 bytes (shorten it)"; err == nil || err.Error() != want {
			t.Fatalf("Parse(line+x%q) error %v, want %q", end, err, want)
		}
	}
}

func TestParseReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := Parse(iotest.ErrReader(boom), "x.conf", testOptions)
	if !errors.Is(err, boom) {
		t.Fatalf("error %v does not wrap the read error", err)
	}
	if want := "config x.conf: cannot read: boom (check the file and its permissions)"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}

func TestFileNameWithNewline(t *testing.T) {
	_, err := Parse(strings.NewReader("x = 1\n"), "a\nb.conf", testOptions)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), `config "a\nb.conf":1: `) {
		t.Fatalf("error %q", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.conf")
	if err := os.WriteFile(good, []byte("interval = 2s\nthreshold.a = 1/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(good, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	if c.Interval != 2*time.Second || c.Lines["threshold.a"] != 2 {
		t.Fatalf("Load = %+v", c)
	}

	bad := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(bad, []byte("C = 10\nthreshold.no.such_event = 5/1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad, testOptions)
	if want := "config " + bad + `:2: key "threshold.no.such_event": unknown event "no.such_event" (mpiprobe -h lists them)`; err == nil || err.Error() != want {
		t.Fatalf("Load(bad) error %v, want %q", err, want)
	}

	missing := filepath.Join(dir, "missing.conf")
	_, err = Load(missing, testOptions)
	if want := "config " + missing + ": cannot read: no such file or directory (create it or give the path of another file)"; err == nil || err.Error() != want {
		t.Fatalf("Load(missing) error %v, want %q", err, want)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load(missing) error %v is not fs.ErrNotExist", err)
	}

	_, err = Load(dir, testOptions)
	if want := "config " + dir + ": cannot read: is a directory (give the path of a file, not a directory)"; err == nil || err.Error() != want {
		t.Fatalf("Load(dir) error %v, want %q", err, want)
	}

	if os.Geteuid() != 0 { // root reads anything
		secret := filepath.Join(dir, "secret.conf")
		if err := os.WriteFile(secret, nil, 0o000); err != nil {
			t.Fatal(err)
		}
		_, err = Load(secret, testOptions)
		if want := "config " + secret + ": cannot read: permission denied (run as root or make the file readable)"; err == nil || err.Error() != want {
			t.Fatalf("Load(secret) error %v, want %q", err, want)
		}
	}
}

// TestRealCatalog checks the Options of the real probe catalog: its events
// and levels are accepted, and the example event exists.
func TestRealCatalog(t *testing.T) {
	opt := catalog()
	text := "threshold.ob1.send_pending.new = 1/\nthreshold.ob1.send_pending.retry = /1s\nevents = default,retries\n"
	if _, err := Parse(strings.NewReader(text), "test.conf", opt); err != nil {
		t.Fatal(err)
	}
	_, err := Parse(strings.NewReader("events = everything\n"), "test.conf", opt)
	want := `config test.conf:1: key "events": unknown level "everything" (use default, retries, messages or all)`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

// settingLine matches a commented-out setting of the example file.
var settingLine = regexp.MustCompile(`(?m)^#([A-Za-z][A-Za-z0-9_.]*) = `)

// TestExampleFile checks testdata/config.conf, installed as
// /etc/mpiprobe/config.conf: as shipped it sets nothing, every key appears
// in it once, and with the settings uncommented the agent keys take exactly
// their defaults.
func TestExampleFile(t *testing.T) {
	raw, err := os.ReadFile("testdata/config.conf")
	if err != nil {
		t.Fatal(err)
	}
	opt := catalog()
	got, err := Load("testdata/config.conf", opt)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, Default()) {
		t.Fatalf("the example file sets something: %+v", got)
	}

	var inFile []string
	for _, m := range settingLine.FindAllStringSubmatch(string(raw), -1) {
		inFile = append(inFile, m[1])
	}
	want := []string{"C", "T", "threshold.ob1.send_pending.new"}
	for _, k := range keys[2:] {
		want = append(want, k.name)
	}
	if !reflect.DeepEqual(inFile, want) {
		t.Fatalf("example file sets keys %q, want %q", inFile, want)
	}

	uncommented := settingLine.ReplaceAllString(string(raw), "$1 = ")
	got, err = Parse(strings.NewReader(uncommented), "uncommented", opt)
	if err != nil {
		t.Fatal(err)
	}
	def := Default()
	def.Thresholds = thresholds.Overrides{
		C:      u(1000),
		T:      d(10 * time.Second),
		Events: map[string]thresholds.Partial{"ob1.send_pending.new": {C: u(500), T: d(30 * time.Second)}},
	}
	def.Events = []string{"default"}
	def.LibraryPaths = []string{"/opt/openmpi/lib"}
	def.DebugDirs = []string{"/opt/openmpi/lib/debug"}
	def.SharedDir = "/shared/mpiprobe"
	def.Lines = got.Lines
	if !reflect.DeepEqual(got, def) {
		t.Fatalf("uncommented example file =\n%+v\nwant the defaults\n%+v", got, def)
	}
	if len(got.Lines) != len(want) {
		t.Fatalf("Lines = %v, want one per key", got.Lines)
	}
	for i, line := range strings.Split(uncommented, "\n") {
		key, _, ok := strings.Cut(line, " = ")
		if ok && !strings.HasPrefix(key, "#") && got.Lines[key] != i+1 {
			t.Errorf("Lines[%q] = %d, want %d", key, got.Lines[key], i+1)
		}
	}
}

// TestFormatRoundTrip checks that Parse reads what Overrides.Format writes.
func TestFormatRoundTrip(t *testing.T) {
	o := thresholds.Overrides{
		C: u(0),
		T: d(1500 * time.Millisecond),
		Events: map[string]thresholds.Partial{
			"a":                    {C: u(18446744073709551615)},
			"ob1.send_pending.new": {C: u(500), T: d(9223372036854775807)},
			"b-c_d":                {T: d(0)},
		},
	}
	got, err := Parse(strings.NewReader(o.Format()), "formatted", Options{})
	if err != nil {
		t.Fatalf("Parse(Format()): %v\n%s", err, o.Format())
	}
	if !reflect.DeepEqual(got.Thresholds, o) {
		t.Fatalf("round trip =\n%s\nwant\n%s", got.Thresholds.Format(), o.Format())
	}
}

// TestKeyListHasEveryKey: the list an unknown key is answered with names
// every key of the file (debug_dirs was once missing from it).
func TestKeyListHasEveryKey(t *testing.T) {
	list := keyList()
	for _, k := range keys {
		if !strings.Contains(list, k.name) {
			t.Errorf("key list %q lacks %q", list, k.name)
		}
	}
	if !strings.Contains(list, "debug_dirs") || !strings.Contains(list, "threshold.EVENT") {
		t.Errorf("key list %q", list)
	}
}
