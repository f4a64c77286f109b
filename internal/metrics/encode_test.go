package metrics_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/metrics"
)

func l(name, value string) metrics.Label { return metrics.Label{Name: name, Value: value} }

func ls(kv ...string) []metrics.Label {
	var out []metrics.Label
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, l(kv[i], kv[i+1]))
	}
	return out
}

func gauge(name string, samples ...metrics.Sample) metrics.Family {
	return metrics.Family{Name: name, Help: "Help of " + name + ".", Kind: metrics.Gauge, Samples: samples}
}

func counter(name string, samples ...metrics.Sample) metrics.Family {
	return metrics.Family{Name: name, Help: "Help of " + name + ".", Kind: metrics.Counter, Samples: samples}
}

func s(v float64, kv ...string) metrics.Sample { return metrics.Sample{Labels: ls(kv...), Value: v} }

func TestEncode(t *testing.T) {
	tests := []struct {
		name      string
		fams      []metrics.Family
		maxSeries int
		want      string
	}{
		{"nothing", nil, 0, ""},
		{"nothing with a cap", nil, 10, `# HELP mpiprobe_metrics_series_dropped Samples left out of this scrape because the page exceeded its series cap; nonzero means metrics are missing.
# TYPE mpiprobe_metrics_series_dropped gauge
mpiprobe_metrics_series_dropped 0
`},
		{"one gauge without labels", []metrics.Family{gauge("mpiprobe_jobs_active", s(3))}, 0,
			`# HELP mpiprobe_jobs_active Help of mpiprobe_jobs_active.
# TYPE mpiprobe_jobs_active gauge
mpiprobe_jobs_active 3
`},
		{"family without samples", []metrics.Family{counter("a_total")}, 0,
			"# HELP a_total Help of a_total.\n# TYPE a_total counter\n"},
		{"sorted families and samples", []metrics.Family{
			gauge("z_gauge", s(1, "b", "2"), s(2, "b", "10"), s(3, "b", "1")),
			counter("a_total",
				s(4, "host", "n2", "job", "7"),
				s(5, "host", "n1", "job", "8"),
				s(6, "host", "n1", "job", "7"),
				s(7, "host", "n1"),
				s(8),
			),
			gauge("m:ratio", s(0.5)),
		}, 0, `# HELP a_total Help of a_total.
# TYPE a_total counter
a_total 8
a_total{host="n1"} 7
a_total{host="n1",job="7"} 6
a_total{host="n1",job="8"} 5
a_total{host="n2",job="7"} 4
# HELP m:ratio Help of m:ratio.
# TYPE m:ratio gauge
m:ratio 0.5
# HELP z_gauge Help of z_gauge.
# TYPE z_gauge gauge
z_gauge{b="1"} 3
z_gauge{b="10"} 2
z_gauge{b="2"} 1
`},
		{"values", []metrics.Family{gauge("v",
			s(math.Inf(1), "i", "a"), s(math.Inf(-1), "i", "b"), s(math.NaN(), "i", "c"),
			s(1e6, "i", "d"), s(0.1, "i", "e"), s(-2.5, "i", "f"), s(12345678901234567890, "i", "g"),
			s(math.SmallestNonzeroFloat64, "i", "h"), s(0, "i", "j"), s(1e21, "i", "k"))}, 0,
			`# HELP v Help of v.
# TYPE v gauge
v{i="a"} +Inf
v{i="b"} -Inf
v{i="c"} NaN
v{i="d"} 1e+06
v{i="e"} 0.1
v{i="f"} -2.5
v{i="g"} 1.2345678901234567e+19
v{i="h"} 5e-324
v{i="j"} 0
v{i="k"} 1e+21
`},
		{"escaping", []metrics.Family{{Name: "e", Kind: metrics.Gauge,
			Help: "Back\\slash, \"quotes\",\nnew line, \xffbad.",
			Samples: []metrics.Sample{
				s(1, "v", `say "hi"`),
				s(2, "v", `C:\dir\`),
				s(3, "v", "two\nlines"),
				s(4, "v", "\x1b[31mred\x1b[0m"),
				s(5, "v", "bad\xff\xfeutf8"),
				s(6, "v", "tab\tcr\rnul\x00"),
				s(7, "v", "naïve €"),
				s(8, "v", `\n`),
			}}}, 0,
			"# HELP e Back\\\\slash, \"quotes\",\\nnew line, \uFFFDbad.\n" +
				"# TYPE e gauge\n" +
				"e{v=\"\x1b[31mred\x1b[0m\"} 4\n" +
				`e{v="C:\\dir\\"} 2` + "\n" +
				`e{v="\\n"} 8` + "\n" +
				"e{v=\"bad\uFFFDutf8\"} 5\n" +
				`e{v="naïve €"} 7` + "\n" +
				`e{v="say \"hi\""} 1` + "\n" +
				"e{v=\"tab\tcr\rnul\x00\"} 6\n" +
				`e{v="two\nlines"} 3` + "\n"},
		{"labels in the order given", []metrics.Family{gauge("g", s(1, "z", "1", "a", "2"))}, 0,
			"# HELP g Help of g.\n# TYPE g gauge\ng{z=\"1\",a=\"2\"} 1\n"},
		{"under the cap", []metrics.Family{gauge("g", s(1, "a", "1"), s(2, "a", "2"))}, 2,
			`# HELP g Help of g.
# TYPE g gauge
g{a="1"} 1
g{a="2"} 2
# HELP mpiprobe_metrics_series_dropped Samples left out of this scrape because the page exceeded its series cap; nonzero means metrics are missing.
# TYPE mpiprobe_metrics_series_dropped gauge
mpiprobe_metrics_series_dropped 0
`},
		{"over the cap", []metrics.Family{
			gauge("z", s(9)),
			counter("mpiprobe_events_total", s(3, "job", "c"), s(1, "job", "a"), s(2, "job", "b")),
			gauge("a", s(1, "x", "2"), s(2, "x", "1")),
		}, 3, `# HELP a Help of a.
# TYPE a gauge
a{x="1"} 2
a{x="2"} 1
# HELP mpiprobe_events_total Help of mpiprobe_events_total.
# TYPE mpiprobe_events_total counter
mpiprobe_events_total{job="a"} 1
# HELP mpiprobe_metrics_series_dropped Samples left out of this scrape because the page exceeded its series cap; nonzero means metrics are missing.
# TYPE mpiprobe_metrics_series_dropped gauge
mpiprobe_metrics_series_dropped 3
# HELP z Help of z.
# TYPE z gauge
`},
		{"cap of one", []metrics.Family{gauge("b", s(2)), gauge("a", s(1))}, 1,
			`# HELP a Help of a.
# TYPE a gauge
a 1
# HELP b Help of b.
# TYPE b gauge
# HELP mpiprobe_metrics_series_dropped Samples left out of this scrape because the page exceeded its series cap; nonzero means metrics are missing.
# TYPE mpiprobe_metrics_series_dropped gauge
mpiprobe_metrics_series_dropped 1
`},
		{"no cap below 1", []metrics.Family{gauge("a", s(1), s(2, "x", "y"))}, -1,
			"# HELP a Help of a.\n# TYPE a gauge\na 1\na{x=\"y\"} 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := metrics.Encode(&buf, tt.fams, tt.maxSeries); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			// The input is not modified and encoding it again gives the same page.
			var again bytes.Buffer
			if err := metrics.Encode(&again, tt.fams, tt.maxSeries); err != nil || again.String() != buf.String() {
				t.Errorf("second encoding differs (err %v):\n%s", err, again.String())
			}
		})
	}
}

func TestEncodeDoesNotModifyInput(t *testing.T) {
	fams := []metrics.Family{gauge("b", s(2, "x", "b\xff")), gauge("a", s(1, "x", "z"), s(0, "x", "a"))}
	var buf bytes.Buffer
	if err := metrics.Encode(&buf, fams, 1); err != nil {
		t.Fatal(err)
	}
	if fams[0].Name != "b" || fams[0].Samples[0].Labels[0].Value != "b\xff" || fams[1].Samples[0].Labels[0].Value != "z" || len(fams[1].Samples) != 2 {
		t.Errorf("Encode modified its input: %+v", fams)
	}
}

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name string
		fams []metrics.Family
		want string
	}{
		{"empty metric name", []metrics.Family{gauge("")},
			`metrics: family "": invalid metric name (use [a-zA-Z_:][a-zA-Z0-9_:]*)`},
		{"metric name with a dash", []metrics.Family{gauge("mpiprobe-jobs")},
			`metrics: family "mpiprobe-jobs": invalid metric name`},
		{"metric name starting with a digit", []metrics.Family{gauge("1jobs")},
			`metrics: family "1jobs": invalid metric name`},
		{"metric name with a newline", []metrics.Family{gauge("a\nb")},
			`metrics: family "a\nb": invalid metric name`},
		{"metric name not ASCII", []metrics.Family{gauge("jobs_é")},
			`metrics: family "jobs_é": invalid metric name`},
		{"counter without _total", []metrics.Family{counter("mpiprobe_events")},
			`metrics: family "mpiprobe_events": a counter's name must end in _total`},
		{"gauge with _total", []metrics.Family{gauge("mpiprobe_jobs_total")},
			`metrics: family "mpiprobe_jobs_total": a gauge's name must not end in _total (only counters do)`},
		{"zero kind", []metrics.Family{{Name: "a", Help: "h"}},
			`metrics: family "a": unknown kind 0 (use Counter or Gauge)`},
		{"unknown kind", []metrics.Family{{Name: "a", Help: "h", Kind: 7}},
			`metrics: family "a": unknown kind 7 (use Counter or Gauge)`},
		{"empty help", []metrics.Family{{Name: "a", Help: " \t", Kind: metrics.Gauge}},
			`metrics: family "a": empty help text (say what it counts)`},
		{"family twice", []metrics.Family{gauge("a", s(1)), gauge("b"), gauge("a", s(2, "x", "y"))},
			`metrics: family "a": given twice (merge the samples into one family)`},
		{"reserved family", []metrics.Family{gauge("mpiprobe_metrics_series_dropped", s(1))},
			`metrics: family "mpiprobe_metrics_series_dropped": the name is reserved for the series cap's own gauge`},
		{"empty label name", []metrics.Family{gauge("a", s(1, "", "x"))},
			`metrics: family "a": label "": invalid label name (use [a-zA-Z_][a-zA-Z0-9_]*)`},
		{"label name with a colon", []metrics.Family{gauge("a", s(1, "a:b", "x"))},
			`metrics: family "a": label "a:b": invalid label name`},
		{"label name starting with a digit", []metrics.Family{gauge("a", s(1, "0rank", "x"))},
			`metrics: family "a": label "0rank": invalid label name`},
		{"label name with a quote", []metrics.Family{gauge("a", s(1, `x"y`, "x"))},
			`metrics: family "a": label "x\"y": invalid label name`},
		{"reserved label name", []metrics.Family{gauge("a", s(1, "__name__", "x"))},
			`metrics: family "a": label "__name__": label names starting with __ are reserved for Prometheus`},
		{"label name twice", []metrics.Family{gauge("a", s(1, "job", "1", "rank", "0", "job", "2"))},
			`metrics: family "a": label "job": given twice in one sample`},
		{"label set twice", []metrics.Family{gauge("a", s(1, "job", "1"), s(2, "job", "2"), s(3, "job", "1"))},
			`metrics: family "a": label set {job="1"}: given twice (after replacing invalid UTF-8)`},
		{"label set twice in another order", []metrics.Family{gauge("a", s(1, "job", "1", "rank", "0"), s(2, "rank", "0", "job", "1"))},
			`metrics: family "a": label set {rank="0",job="1"}: given twice`},
		{"no labels twice", []metrics.Family{gauge("a", s(1), s(2, "x", "y"), metrics.Sample{Labels: []metrics.Label{}, Value: 3})},
			`metrics: family "a": label set {}: given twice`},
		{"label sets equal after replacing invalid UTF-8", []metrics.Family{gauge("a", s(1, "job", "\xff\n"), s(2, "job", "\xfe\n"))},
			`metrics: family "a": label set {job="` + "\uFFFD" + `\n"}: given twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := metrics.Encode(&buf, tt.fams, 100)
			if err == nil {
				t.Fatalf("no error; page:\n%s", buf.String())
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error\n%s\nwant it to start with\n%s", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is not one line", err)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %q despite the error", buf.String())
			}
		})
	}
}

type failWriter struct{}

var errDisk = errors.New("disk on fire")

func (failWriter) Write([]byte) (int, error) { return 0, errDisk }

func TestEncodeWriteError(t *testing.T) {
	err := metrics.Encode(failWriter{}, []metrics.Family{gauge("a", s(1))}, 0)
	if !errors.Is(err, errDisk) || err.Error() != "metrics: write the page: disk on fire" {
		t.Errorf("got %v", err)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[metrics.Kind]string{metrics.Counter: "counter", metrics.Gauge: "gauge", 0: "Kind(0)", 9: "Kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}
