package metrics_test

import (
	"bytes"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/metrics"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// nastyValues are label values a job id or event name could carry in the
// worst case.
var nastyValues = []string{
	`quote"inside`,
	`back\slash\`,
	"new\nline",
	"\x1b[31mred\x1b[0m",
	"bad\xff\xfeutf8",
	"\xc3",
	"right\u202eto-left",
	"csi\u009b31m",
	"tab\tcr\rnul\x00",
	"naïve €",
	`\n`,
	" ",
	"}",
	`",evil="1`,
}

var (
	events = metrics.Family{Name: "mpiprobe_events_total", Kind: metrics.Counter, Help: "Events."}
	initT  = metrics.Family{Name: "mpiprobe_mpi_init_seconds", Kind: metrics.Gauge, Help: "MPI_Init time."}
	active = metrics.Family{Name: "mpiprobe_jobs_active", Kind: metrics.Gauge, Help: "Jobs."}
)

func l(kv ...string) []metrics.Label {
	var out []metrics.Label
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, metrics.Label{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

type sample struct {
	f      metrics.Family
	v      float64
	labels []metrics.Label
}

func TestCollector(t *testing.T) {
	nasty := func() []sample {
		var out []sample
		for i, v := range nastyValues {
			out = append(out, sample{events, float64(i), l("mpi_job", v, "rank", "0", "event", "e")})
		}
		return out
	}
	nastyWant := map[string]float64{}
	for i, v := range nastyValues {
		nastyWant[mpitest.SeriesKey("mpiprobe_events_total", "mpi_job", text.Escape(v), "rank", "0", "event", "e")] = float64(i)
	}
	tests := []struct {
		name       string
		samples    []sample
		maxSeries  int
		want       map[string]float64
		capped     float64
		invalid    float64
		logEntries int
	}{
		{
			name: "two processes without identity, told apart by pid",
			samples: []sample{
				{initT, 0.5, l("mpi_job", "?", "rank", "?", "pid", "101")},
				{initT, 0.7, l("mpi_job", "?", "rank", "?", "pid", "102")},
				{initT, 0.6, l("mpi_job", "4242", "rank", "0")},
			},
			want: map[string]float64{
				mpitest.SeriesKey("mpiprobe_mpi_init_seconds", "mpi_job", "?", "rank", "?", "pid", "101"): 0.5,
				mpitest.SeriesKey("mpiprobe_mpi_init_seconds", "mpi_job", "?", "rank", "?", "pid", "102"): 0.7,
				mpitest.SeriesKey("mpiprobe_mpi_init_seconds", "mpi_job", "4242", "rank", "0"):            0.6,
			},
		},
		{
			name: "a label set twice: the later sample alone is left out",
			samples: []sample{
				{initT, 0.5, l("mpi_job", "?", "rank", "?")},
				{initT, 0.7, l("mpi_job", "?", "rank", "?")},
				{initT, 0.6, l("mpi_job", "4242", "rank", "0")},
				{active, 2, nil},
			},
			want: map[string]float64{
				mpitest.SeriesKey("mpiprobe_mpi_init_seconds", "mpi_job", "?", "rank", "?"):    0.5,
				mpitest.SeriesKey("mpiprobe_mpi_init_seconds", "mpi_job", "4242", "rank", "0"): 0.6,
				mpitest.SeriesKey("mpiprobe_jobs_active"):                                      2,
			},
			invalid: 1, logEntries: 1,
		},
		{
			name: "the same labels in another order",
			samples: []sample{
				{events, 1, l("mpi_job", "1", "rank", "0", "event", "e")},
				{events, 2, l("event", "e", "rank", "0", "mpi_job", "1")},
				{events, 3, l("event", "e", "rank", "0", "mpi_job", "1")},
			},
			want:    map[string]float64{mpitest.SeriesKey("mpiprobe_events_total", "mpi_job", "1", "rank", "0", "event", "e"): 1},
			invalid: 2, logEntries: 1,
		},
		{
			name: "label values equal once escaped",
			samples: []sample{
				{initT, 1, l("mpi_job", "a\u202e")},
				{initT, 2, l("mpi_job", `a\u202e`)},
				{initT, 3, l("mpi_job", "a\xff")},
				{initT, 4, l("mpi_job", "a\xfe")},
			},
			want: map[string]float64{
				mpitest.SeriesKey("mpiprobe_mpi_init_seconds", "mpi_job", `a\u202e`): 1,
				mpitest.SeriesKey("mpiprobe_mpi_init_seconds", "mpi_job", `a\xff`):   3,
				mpitest.SeriesKey("mpiprobe_mpi_init_seconds", "mpi_job", `a\xfe`):   4,
			},
			invalid: 1, logEntries: 1,
		},
		{name: "nasty label values", samples: nasty(), want: nastyWant},
		{
			name: "bad families are left out, the others stay",
			samples: []sample{
				{metrics.Family{Name: "mpiprobe_events", Kind: metrics.Counter, Help: "h"}, 1, nil},
				{metrics.Family{Name: "mpiprobe_jobs_total", Kind: metrics.Gauge, Help: "h"}, 1, nil},
				{metrics.Family{Name: "mpiprobe_x", Help: "h"}, 1, nil},
				{metrics.Family{Name: "mpiprobe_y", Kind: metrics.Gauge, Help: " "}, 1, nil},
				{metrics.Family{Name: "mpiprobe-z", Kind: metrics.Gauge, Help: "h"}, 1, nil},
				{metrics.Family{Name: "mpiprobe_w", Kind: metrics.Gauge, Help: "h"}, 1, l("bad-label", "x")},
				{metrics.Family{Name: "mpiprobe_w", Kind: metrics.Gauge, Help: "h"}, 1, l("__name__", "x")},
				{active, 3, nil},
				{metrics.Family{Name: "mpiprobe_jobs_active", Kind: metrics.Gauge, Help: "Other help."}, 4, l("x", "y")},
			},
			want:    map[string]float64{mpitest.SeriesKey("mpiprobe_jobs_active"): 3},
			invalid: 8, logEntries: 7,
		},
		{
			name: "over the cap",
			samples: []sample{
				{active, 1, nil},
				{initT, 1, l("rank", "0")},
				{initT, 2, l("rank", "1")},
				{initT, 3, l("rank", "2")},
			},
			maxSeries: 2,
			want: map[string]float64{
				mpitest.SeriesKey("mpiprobe_jobs_active"):                   1,
				mpitest.SeriesKey("mpiprobe_mpi_init_seconds", "rank", "0"): 1,
			},
			capped: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logBuf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logBuf, nil))
			c := metrics.NewCollector(func(p *metrics.Page) {
				for _, s := range tt.samples {
					p.Add(s.f, s.v, s.labels...)
				}
			}, tt.maxSeries, log)
			reg, err := metrics.NewRegistry(c)
			if err != nil {
				t.Fatal(err)
			}
			h := metrics.Handler(reg, log)
			var page string
			for range 3 { // problems are logged once, not per scrape
				page = mpitest.GetPage(t, h)
			}
			mpitest.CheckWithPromtool(t, []byte(page))
			got := mpitest.ParseMetrics(t, page)
			want := maps(tt.want, map[string]float64{
				mpitest.SeriesKey(metrics.DroppedName, "reason", "series_cap"): tt.capped,
				mpitest.SeriesKey(metrics.DroppedName, "reason", "invalid"):    tt.invalid,
			})
			for k, v := range want {
				if g, ok := got[k]; !ok || g != v {
					t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
				}
			}
			for k := range got {
				if strings.HasPrefix(k, "mpiprobe_") && !strings.HasPrefix(k, metrics.BuildInfoName) {
					if _, ok := want[k]; !ok {
						t.Errorf("unexpected sample %s", k)
					}
				}
			}
			// The other collectors' families are all there.
			for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "promhttp_metric_handler_requests_total", metrics.BuildInfoName} {
				if !strings.Contains(page, "\n"+name) {
					t.Errorf("page lacks %s", name)
				}
			}
			if n := strings.Count(logBuf.String(), "level=ERROR"); n != tt.logEntries {
				t.Errorf("%d log entries over 3 scrapes, want %d:\n%s", n, tt.logEntries, logBuf.String())
			}
			if strings.Contains(logBuf.String(), "\xff") {
				t.Errorf("the log holds invalid UTF-8: %q", logBuf.String())
			}
		})
	}
}

func maps(ms ...map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestBuildInfo(t *testing.T) {
	reg, err := metrics.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	got := mpitest.ParseMetrics(t, mpitest.GetPage(t, metrics.Handler(reg, nil)))
	k := mpitest.SeriesKey(metrics.BuildInfoName, "version", metrics.Version(), "goversion", runtime.Version())
	if got[k] != 1 {
		t.Errorf("%s = %v, want 1; page has %v", k, got[k], got)
	}
	if metrics.Version() == "" {
		t.Error("empty version")
	}
}

// TestLogBounded: a stream of distinct problems is logged up to a bound,
// then once more to say that the rest are not.
func TestLogBounded(t *testing.T) {
	var logBuf bytes.Buffer
	n := 0
	c := metrics.NewCollector(func(p *metrics.Page) {
		for range 100 {
			n++
			p.Add(metrics.Family{Name: "bad_" + strconv.Itoa(n), Help: "h"}, 1)
		}
	}, 0, slog.New(slog.NewTextHandler(&logBuf, nil)))
	reg, err := metrics.NewRegistry(c)
	if err != nil {
		t.Fatal(err)
	}
	h := metrics.Handler(reg, nil)
	for range 5 {
		mpitest.GetPage(t, h)
	}
	lines := strings.Split(strings.TrimSpace(logBuf.String()), "\n")
	if len(lines) != 257 || !strings.Contains(lines[256], "further ones are not logged") {
		t.Errorf("%d log lines, want 256 and one saying the rest are not logged; last: %q", len(lines), lines[len(lines)-1])
	}
}

// TestEmptyPage: a page without samples still carries the dropped-sample gauges.
func TestEmptyPage(t *testing.T) {
	reg, err := metrics.NewRegistry(metrics.NewCollector(func(*metrics.Page) {}, 10, nil))
	if err != nil {
		t.Fatal(err)
	}
	got := mpitest.ParseMetrics(t, mpitest.GetPage(t, metrics.Handler(reg, nil)))
	for _, r := range []string{metrics.DroppedCap, metrics.DroppedInvalid} {
		if v, ok := got[mpitest.SeriesKey(metrics.DroppedName, "reason", r)]; !ok || v != 0 {
			t.Errorf("%s{reason=%q} = %v (present %v), want 0", metrics.DroppedName, r, v, ok)
		}
	}
}
