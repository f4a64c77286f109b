package mpitest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// CheckWithPromtool runs "promtool check metrics" on text, a page in the
// Prometheus text exposition format, and fails the test on any complaint:
// a parse error or a lint problem (promtool prints them and exits
// non-zero), or any other output. Without promtool (Debian package
// prometheus) it skips the test, or fails it when MPIPROBE_E2E=require.
func CheckWithPromtool(t testing.TB, text []byte) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		Require(t, "promtool (Debian package prometheus)")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if err == nil && strings.TrimSpace(out.String()) == "" {
		return
	}
	var page strings.Builder
	for i, line := range strings.SplitAfter(string(text), "\n") {
		if line != "" {
			fmt.Fprintf(&page, "%4d  %q\n", i+1, strings.TrimSuffix(line, "\n"))
		}
	}
	t.Errorf("promtool check metrics: %v\n%s\npage (line numbers as promtool counts them):\n%s", err, strings.TrimSpace(out.String()), page.String())
}

// GetPage serves one GET of h (a metrics handler) and returns the page,
// failing the test unless the status is 200.
func GetPage(t testing.TB, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("metrics page: status %d: %s", rec.Code, rec.Body.String())
	}
	return rec.Body.String()
}

// ParseMetrics reads a page in the Prometheus text format and returns its
// counter, gauge and untyped samples by [SeriesKey], failing the test when
// the page does not parse.
func ParseMetrics(t testing.TB, page string) map[string]float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		t.Fatalf("parse the metrics page: %v\n%s", err, page)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var kv []string
			for _, lp := range m.GetLabel() {
				kv = append(kv, lp.GetName(), lp.GetValue())
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[SeriesKey(name, kv...)] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[SeriesKey(name, kv...)] = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				out[SeriesKey(name, kv...)] = m.GetUntyped().GetValue()
			}
		}
	}
	return out
}

// SeriesKey names a series as ParseMetrics does: the metric name, then the
// labels (name, value pairs in kv) sorted by name, their values Go-quoted:
// name{a="1",b="2"}.
func SeriesKey(name string, kv ...string) string {
	type label struct{ name, value string }
	var labels []label
	for i := 0; i+1 < len(kv); i += 2 {
		labels = append(labels, label{kv[i], kv[i+1]})
	}
	slices.SortFunc(labels, func(a, b label) int { return strings.Compare(a.name, b.name) })
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.name + "=" + strconv.Quote(l.value))
	}
	b.WriteByte('}')
	return b.String()
}
