package metrics

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Kind is the Prometheus type of a metric family. Its zero value is
// invalid, so a [Family] must say what it is.
type Kind int

const (
	// Counter is a value that only goes up (and resets to 0 when the
	// process restarts). Its family's name must end in "_total".
	Counter Kind = iota + 1
	// Gauge is a value that goes up and down.
	Gauge
)

// String returns the kind as the "# TYPE" line spells it.
func (k Kind) String() string {
	switch k {
	case Counter:
		return "counter"
	case Gauge:
		return "gauge"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Label is one label of a sample, such as job="4242".
type Label struct{ Name, Value string }

// Sample is one series of a family, identified by its labels, and its
// current value. The labels are written in the order given.
type Sample struct {
	Labels []Label
	Value  float64
}

// Family is a metric: a name, its help text, its kind, and one sample per
// label set.
type Family struct {
	Name, Help string
	Kind       Kind
	Samples    []Sample
}

// DroppedName is the gauge that [Encode] adds, when given a cap, with the
// number of samples dropped from the page because of the cap. The name is
// reserved: a caller's family may not use it.
const DroppedName = "mpiprobe_metrics_series_dropped"

const droppedHelp = "Samples left out of this scrape because the page exceeded its series cap; nonzero means metrics are missing."

// Encode writes fams to w in the Prometheus text exposition format 0.0.4:
// families sorted by name, each with its "# HELP" and "# TYPE" lines and
// its samples sorted by label values. It validates everything first and
// writes nothing when fams are invalid: metric names must match
// [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* and not
// start with "__", counters must end in "_total" and gauges must not, help
// texts must not be empty, family names and the label sets of one family
// must not repeat, nor the label names of one sample.
//
// When maxSeries > 0, the page holds at most maxSeries samples of fams (in
// page order; the rest are dropped) plus the gauge [DroppedName] with the
// number dropped. When maxSeries <= 0 there is no cap and no such gauge.
func Encode(w io.Writer, fams []Family, maxSeries int) error {
	page, err := prepare(fams)
	if err != nil {
		return err
	}
	if maxSeries > 0 {
		page = capSeries(page, maxSeries)
	}
	var buf bytes.Buffer
	for _, f := range page {
		f.write(&buf)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("metrics: write the page: %w", err)
	}
	return nil
}

// family is a validated Family, with sanitized label values and sorted.
type family struct {
	name, help string
	kind       Kind
	samples    []Sample
}

// prepare validates fams and returns them sanitized and sorted.
func prepare(fams []Family) ([]family, error) {
	page := make([]family, 0, len(fams)+1)
	names := make(map[string]bool, len(fams))
	for _, f := range fams {
		if err := checkFamily(f); err != nil {
			return nil, err
		}
		if f.Name == DroppedName {
			return nil, fmt.Errorf("metrics: family %q: the name is reserved for the series cap's own gauge", f.Name)
		}
		if names[f.Name] {
			return nil, fmt.Errorf("metrics: family %q: given twice (merge the samples into one family)", f.Name)
		}
		names[f.Name] = true
		out := family{name: f.Name, help: sanitize(f.Help), kind: f.Kind, samples: make([]Sample, len(f.Samples))}
		seen := make(map[string]bool, len(f.Samples))
		for i, s := range f.Samples {
			labels := make([]Label, len(s.Labels))
			for j, l := range s.Labels {
				if err := checkLabelName(l.Name); err != nil {
					return nil, fmt.Errorf("metrics: family %q: label %q: %w", f.Name, l.Name, err)
				}
				for _, prev := range labels[:j] {
					if prev.Name == l.Name {
						return nil, fmt.Errorf("metrics: family %q: label %q: given twice in one sample", f.Name, l.Name)
					}
				}
				labels[j] = Label{Name: l.Name, Value: sanitize(l.Value)}
			}
			key := seriesKey(labels)
			if seen[key] {
				return nil, fmt.Errorf("metrics: family %q: label set %s: given twice (after replacing invalid UTF-8)", f.Name, formatLabels(labels))
			}
			seen[key] = true
			out.samples[i] = Sample{Labels: labels, Value: s.Value}
		}
		slices.SortStableFunc(out.samples, func(a, b Sample) int { return compareLabels(a.Labels, b.Labels) })
		page = append(page, out)
	}
	slices.SortFunc(page, func(a, b family) int { return strings.Compare(a.name, b.name) })
	return page, nil
}

func checkFamily(f Family) error {
	if !validName(f.Name, true) {
		return fmt.Errorf("metrics: family %q: invalid metric name (use [a-zA-Z_:][a-zA-Z0-9_:]*)", f.Name)
	}
	switch f.Kind {
	case Counter:
		if !strings.HasSuffix(f.Name, "_total") {
			return fmt.Errorf("metrics: family %q: a counter's name must end in _total", f.Name)
		}
	case Gauge:
		if strings.HasSuffix(f.Name, "_total") {
			return fmt.Errorf("metrics: family %q: a gauge's name must not end in _total (only counters do)", f.Name)
		}
	default:
		return fmt.Errorf("metrics: family %q: unknown kind %d (use Counter or Gauge)", f.Name, int(f.Kind))
	}
	if strings.TrimSpace(f.Help) == "" {
		return fmt.Errorf("metrics: family %q: empty help text (say what it counts)", f.Name)
	}
	return nil
}

func checkLabelName(name string) error {
	if !validName(name, false) {
		return fmt.Errorf("invalid label name (use [a-zA-Z_][a-zA-Z0-9_]*)")
	}
	if strings.HasPrefix(name, "__") {
		return fmt.Errorf("label names starting with __ are reserved for Prometheus")
	}
	return nil
}

// validName reports whether s is a valid metric name (colon allowed) or
// label name.
func validName(s string, colon bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' ||
			i > 0 && c >= '0' && c <= '9' || colon && c == ':'
		if !ok {
			return false
		}
	}
	return true
}

// sanitize replaces each run of invalid UTF-8 in s with U+FFFD.
func sanitize(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// seriesKey identifies a label set regardless of the order of its labels.
// The separator 0xff never occurs in valid UTF-8 nor in label names.
func seriesKey(labels []Label) string {
	sorted := slices.Clone(labels)
	slices.SortFunc(sorted, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	for _, l := range sorted {
		b.WriteString(l.Name)
		b.WriteByte(0xff)
		b.WriteString(l.Value)
		b.WriteByte(0xff)
	}
	return b.String()
}

// compareLabels orders samples by their label values, in the order the
// labels are given, then by label names and by number of labels, so that
// the order is total over the distinct label lists of a family.
func compareLabels(a, b []Label) int {
	for i := range min(len(a), len(b)) {
		if c := strings.Compare(a[i].Value, b[i].Value); c != 0 {
			return c
		}
		if c := strings.Compare(a[i].Name, b[i].Name); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// capSeries keeps the first maxSeries samples of page, in page order, and
// adds the gauge DroppedName with the number dropped.
func capSeries(page []family, maxSeries int) []family {
	left, dropped := maxSeries, 0
	for i := range page {
		n := len(page[i].samples)
		if n > left {
			dropped += n - left
			page[i].samples = page[i].samples[:left]
			n = left
		}
		left -= n
	}
	g := family{name: DroppedName, help: droppedHelp, kind: Gauge,
		samples: []Sample{{Value: float64(dropped)}}}
	i, _ := slices.BinarySearchFunc(page, DroppedName, func(f family, name string) int { return strings.Compare(f.name, name) })
	return slices.Insert(page, i, g)
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func (f family) write(buf *bytes.Buffer) {
	fmt.Fprintf(buf, "# HELP %s %s\n# TYPE %s %s\n", f.name, helpEscaper.Replace(f.help), f.name, f.kind)
	for _, s := range f.samples {
		buf.WriteString(f.name)
		if len(s.Labels) > 0 {
			buf.WriteString(formatLabels(s.Labels))
		}
		buf.WriteByte(' ')
		buf.WriteString(formatValue(s.Value))
		buf.WriteByte('\n')
	}
}

// formatLabels returns {a="1",b="2"}, escaped, on one line.
func formatLabels(labels []Label) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.Name)
		b.WriteString(`="`)
		labelEscaper.WriteString(&b, sanitize(l.Value))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// formatValue spells v as Prometheus does.
func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
