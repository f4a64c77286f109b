package metrics

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/mpiprobe/mpiprobe/internal/text"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
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

// Family describes a metric family: its name, help text and kind. The
// same Family value is passed for every sample of the family.
type Family struct {
	Name, Help string
	Kind       Kind
}

// Label is one label of a sample, such as mpi_job="4242".
type Label struct{ Name, Value string }

// DroppedName is the gauge every [Collector] adds, by reason: "series_cap"
// for the samples left out because the page exceeded its series cap,
// "invalid" for those left out because they could not be written (a label
// set given twice, an invalid name). Nonzero means metrics are missing.
const DroppedName = "mpiprobe_metrics_series_dropped"

// The values of DroppedName's reason label.
const (
	DroppedCap     = "series_cap"
	DroppedInvalid = "invalid"
)

var droppedFamily = Family{Name: DroppedName, Kind: Gauge,
	Help: "Samples left out of this scrape, by reason: series_cap (the page exceeded its series cap) or invalid (a label set given twice, an invalid name; logged by the agent). Nonzero means metrics are missing."}

// Collector is a [prometheus.Collector] over state that is read at each
// scrape: its fill function adds the samples of the moment to a [Page].
// It is unchecked (it describes no metric in advance), as the families and
// label sets depend on the jobs running. One bad sample never fails the
// page: it is left out, counted in [DroppedName] and logged once.
type Collector struct {
	fill      func(*Page)
	maxSeries int
	log       *onceLog
}

// NewCollector returns a Collector that calls fill for every scrape.
// When maxSeries > 0, a scrape holds at most maxSeries samples added by
// fill, the first ones added; the rest are dropped and counted. Problems
// with samples are logged to log (slog.Default() when nil), each kind of
// problem of a family once.
func NewCollector(fill func(*Page), maxSeries int, log *slog.Logger) *Collector {
	return &Collector{fill: fill, maxSeries: maxSeries, log: newOnceLog(log)}
}

// Describe sends nothing: the Collector is unchecked.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect calls the fill function and sends its samples, then the
// [DroppedName] gauge.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	p := &Page{ch: ch, limit: c.maxSeries, log: c.log,
		families: map[string]Family{}, descs: map[string]*prometheus.Desc{}, seen: map[string]bool{}}
	c.fill(p)
	capped, invalid := p.capped, p.invalid
	p.limit = 0 // the gauge itself is never cut
	p.Add(droppedFamily, float64(capped), Label{"reason", DroppedCap})
	p.Add(droppedFamily, float64(invalid), Label{"reason", DroppedInvalid})
}

// Page receives the samples of one scrape from a [Collector]'s fill
// function. It is not safe for concurrent use.
type Page struct {
	ch  chan<- prometheus.Metric
	log *onceLog
	// limit is the series cap (0: none), sent the samples sent so far.
	limit, sent     int
	capped, invalid int
	// families are the families of the samples sent, by name; seen the
	// label sets sent (seriesKey).
	families map[string]Family
	seen     map[string]bool
	// descs are the descriptors made so far, by name and label names.
	descs map[string]*prometheus.Desc
}

// Add adds a sample of f with value v and the given labels, in any order.
// Label values have every character that does not print, and every byte
// of invalid UTF-8, escaped in place by text.Escape (a job id with U+202E
// reads "a\u202eb"); the exposition then escapes quotes, backslashes and
// newlines. A sample is left
// out, counted and logged once per family and problem when its label set
// repeats one of this scrape (after that replacement), when f differs
// from an earlier Family of the same name, or when a name is invalid.
// Samples beyond the Collector's cap are left out and counted.
func (p *Page) Add(f Family, v float64, labels ...Label) {
	names := make([]string, len(labels))
	values := make([]string, len(labels))
	for i, l := range labels {
		names[i], values[i] = l.Name, text.Escape(l.Value)
	}
	if err := p.check(f); err != nil {
		p.drop(f.Name, "family", err)
		return
	}
	for _, n := range names {
		if !model.LegacyValidation.IsValidLabelName(n) || strings.HasPrefix(n, "__") {
			p.drop(f.Name, "label name", fmt.Errorf("label %q: invalid name (use [a-zA-Z_][a-zA-Z0-9_]*, not starting with __)", n))
			return
		}
	}
	key := seriesKey(f.Name, names, values)
	if p.seen[key] {
		p.drop(f.Name, "twice", fmt.Errorf("label set %s given twice in one scrape (the later sample is left out)", formatLabels(names, values)))
		return
	}
	if p.limit > 0 && p.sent >= p.limit {
		p.capped++
		return
	}
	vt := prometheus.GaugeValue
	if f.Kind == Counter {
		vt = prometheus.CounterValue
	}
	dk := f.Name + "\xff" + strings.Join(names, "\xff")
	desc, ok := p.descs[dk]
	if !ok {
		desc = prometheus.NewDesc(f.Name, f.Help, names, nil)
		p.descs[dk] = desc
	}
	m, err := prometheus.NewConstMetric(desc, vt, v, values...)
	if err != nil {
		p.drop(f.Name, "invalid", fmt.Errorf("labels %s: %w", formatLabels(names, values), err))
		return
	}
	p.seen[key] = true
	p.families[f.Name] = f
	p.sent++
	p.ch <- m
}

// check validates f: a classic metric name (client_golang would accept
// any UTF-8), the kind, a counter's suffix, the help text, and that f
// agrees with earlier samples of its name.
func (p *Page) check(f Family) error {
	if !model.LegacyValidation.IsValidMetricName(f.Name) {
		return fmt.Errorf("invalid metric name (use [a-zA-Z_:][a-zA-Z0-9_:]*)")
	}
	switch f.Kind {
	case Counter:
		if !strings.HasSuffix(f.Name, "_total") {
			return fmt.Errorf("a counter's name must end in _total")
		}
	case Gauge:
		if strings.HasSuffix(f.Name, "_total") {
			return fmt.Errorf("a gauge's name must not end in _total (only counters do)")
		}
	default:
		return fmt.Errorf("unknown kind %d (use Counter or Gauge)", int(f.Kind))
	}
	if strings.TrimSpace(f.Help) == "" {
		return fmt.Errorf("empty help text (say what it counts)")
	}
	if prev, ok := p.families[f.Name]; ok && prev != f {
		return fmt.Errorf("help text or kind differs from an earlier sample's (use one Family value per name)")
	}
	return nil
}

// drop leaves a sample out: it is counted, and logged unless a problem of
// the same kind in the same family was logged before.
func (p *Page) drop(family, kind string, err error) {
	p.invalid++
	p.log.once(family+"\x00"+kind, "metrics: sample left out of the page", "family", family, "err", err)
}

// seriesKey identifies a sample regardless of the order of its labels.
// The separator 0xff never occurs in valid UTF-8 nor in names.
func seriesKey(name string, names, values []string) string {
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	var b strings.Builder
	b.WriteString(name)
	for _, i := range idx {
		b.WriteByte(0xff)
		b.WriteString(names[i])
		b.WriteByte(0xff)
		b.WriteString(values[i])
	}
	return b.String()
}

// formatLabels returns {a="1",b="2"} for a log message, quoted as Go does.
func formatLabels(names, values []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", names[i], values[i])
	}
	b.WriteByte('}')
	return b.String()
}

// maxLogged bounds the problems a onceLog remembers, so that a stream of
// distinct problems cannot grow the agent's memory.
const maxLogged = 256

// onceLog logs each problem, named by a key, once.
type onceLog struct {
	log  *slog.Logger
	mu   sync.Mutex
	seen map[string]bool
	full bool
}

func newOnceLog(log *slog.Logger) *onceLog {
	if log == nil {
		log = slog.Default()
	}
	return &onceLog{log: log, seen: map[string]bool{}}
}

// once logs msg with args at level error unless key was logged before.
// After maxLogged keys, one last entry says that further problems are not
// logged.
func (o *onceLog) once(key, msg string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen[key] || o.full {
		return
	}
	if len(o.seen) >= maxLogged {
		o.full = true
		o.log.Error("metrics: too many distinct problems; further ones are not logged (see " + DroppedName + ")")
		return
	}
	o.seen[key] = true
	o.log.Error(msg, args...)
}
