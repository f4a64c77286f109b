package probes

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
)

// Library names a kind of MPI library file: a shared object whose symbols
// the catalog probes. See Classify for how a file name maps to a Library.
type Library string

// The libraries the catalog knows.
const (
	// OMPILibMPI is Open MPI's libmpi.so.40.
	OMPILibMPI Library = "libmpi"
	// OMPIPmlOb1 is Open MPI's ob1 point-to-point component, mca_pml_ob1.so.
	OMPIPmlOb1 Library = "mca_pml_ob1"
	// MPICHLib is MPICH's libmpich.so.12 (also installed as libmpi.so.12).
	MPICHLib Library = "libmpich"
)

// Side says whether a probe fires on a function's entry or on its return.
type Side uint8

// The two sides of a function.
const (
	Entry Side = iota
	Return
)

func (s Side) String() string {
	if s == Return {
		return "return"
	}
	return "entry"
}

// Probe is one place whose hits count towards an Event: the entry or return
// of Symbol, or, when CallTo is set, every instruction in Symbol that calls
// (or tail-jumps to) CallTo, hit just before the call.
type Probe struct {
	Library Library
	Symbol  string
	Side    Side
	// CallTo makes the probe a call-site probe; Side must be Entry.
	CallTo string
	// Cond filters hits; the zero value counts every hit. At a call site
	// the arguments are the callee's, already in their registers.
	Cond Condition
}

func (p Probe) String() string {
	if p.CallTo != "" {
		return p.Symbol + "→" + p.CallTo
	}
	return p.Symbol + " (" + p.Side.String() + ")"
}

// Level groups events by their cost. The default level holds only probes on
// cold paths; other levels are enabled by name.
type Level string

// The levels of the catalog.
const (
	// Default events fire only when the unusual thing happens.
	Default Level = "default"
	// Retries count every retry of a queued operation: they fire in a loop
	// while the trouble lasts, and cost a probe hit per retry.
	Retries Level = "retries"
)

// Event is one kind of unusual MPI event: what is probed, what it means,
// how often it may be reported, and what to tune.
type Event struct {
	// ID is the stable name used in output, overrides and JSON.
	ID string
	// Layer is the MPI software layer the event belongs to (pml, btl, ...).
	Layer string
	// Level says when the event is enabled.
	Level Level
	// Probes all count towards the event.
	Probes []Probe
	// Message says what happened, for a person.
	Message string
	// Advice says which parameter to tune.
	Advice string
	// Suggest, when set, turns the detail and peak of one total into a
	// suggested setting that completes Advice, e.g. "try
	// --mca btl_vader_free_list_max 1024"; it returns "" when it has none.
	Suggest func(detail string, peak uint64) string
	// C and T are the default count threshold and time delay of the C/T rule.
	C uint64
	T time.Duration
}

// Catalog is the set of events mpiprobe knows. An event's index in Events
// is the id the BPF side counts it under.
type Catalog struct {
	Events []Event
}

// Full returns every event mpiprobe knows, at every level.
func Full() Catalog {
	const freeListAdvice = "raise the BTL's send free list: --mca btl_vader_free_list_max (default 512) " +
		"or --mca btl_tcp_free_list_max; lasting queueing also means a slow receiver"
	// mca_pml_ob1_enable_progress(1) follows every append to ob1's
	// send_pending list. The calls from the send entry points are new
	// queueings; the calls from the two loops that re-run the list are
	// retries, and happen on every progress pass while sends are queued.
	enable := func(fn string) Probe {
		return Probe{Library: OMPIPmlOb1, Symbol: fn, CallTo: "mca_pml_ob1_enable_progress",
			Cond: Condition{Src: Arg(1), Cmp: Gt, Value: 0}}
	}
	return Catalog{Events: []Event{
		{
			ID:    "ob1.send_pending.new",
			Layer: "pml",
			Level: Default,
			Probes: []Probe{
				enable("mca_pml_ob1_isend"),
				enable("mca_pml_ob1_send"),
				enable("mca_pml_ob1_start"),
			},
			Message: "send request queued as pending: no BTL send fragment was free",
			Advice:  freeListAdvice,
			C:       1000,
			T:       10 * time.Second,
		},
		{
			// MCA_PML_OB1_PROGRESS_PENDING calls it only when send_pending is non-empty.
			ID:      "ob1.send_pending.drain",
			Layer:   "pml",
			Level:   Default,
			Probes:  []Probe{{Library: OMPIPmlOb1, Symbol: "mca_pml_ob1_send_request_process_pending"}},
			Message: "pass over the pending-send queue after a BTL returned fragments",
			Advice:  freeListAdvice,
			C:       10000,
			T:       30 * time.Second,
		},
		{
			ID:    "ob1.send_pending.retry",
			Layer: "pml",
			Level: Retries,
			Probes: []Probe{
				enable("mca_pml_ob1_progress"),
				enable("mca_pml_ob1_send_request_process_pending"),
			},
			Message: "pending send retried and queued again: still no BTL send fragment free",
			Advice:  freeListAdvice,
			C:       100000,
			T:       30 * time.Second,
		},
	}}
}

// DefaultCatalog returns the catalog of the default level: cold-path probes only.
func DefaultCatalog() Catalog { return Full().Select(Default) }

// Select returns the events of the given levels, in catalog order.
func (c Catalog) Select(levels ...Level) Catalog {
	var out Catalog
	for _, e := range c.Events {
		if slices.Contains(levels, e.Level) {
			out.Events = append(out.Events, e)
		}
	}
	return out
}

// Levels returns the levels that occur in the catalog, in first-use order.
func (c Catalog) Levels() []Level {
	var out []Level
	for _, e := range c.Events {
		if !slices.Contains(out, e.Level) {
			out = append(out, e.Level)
		}
	}
	return out
}

var eventIDPattern = regexp.MustCompile(`^[a-z0-9_]+(\.[a-z0-9_]+)+$`)

// Validate checks the catalog's internal consistency: unique ids, conditions
// the BPF side can evaluate, and at most MaxEvents events.
func (c Catalog) Validate() error {
	if len(c.Events) > MaxEvents {
		return fmt.Errorf("catalog has %d events, at most %d fit in a cookie", len(c.Events), MaxEvents)
	}
	seen := map[string]bool{}
	for _, e := range c.Events {
		if !eventIDPattern.MatchString(e.ID) {
			return fmt.Errorf("event id %q: want dotted lowercase words", e.ID)
		}
		if seen[e.ID] {
			return fmt.Errorf("event %q defined twice", e.ID)
		}
		seen[e.ID] = true
		if e.Message == "" || len(e.Probes) == 0 || e.Level == "" {
			return fmt.Errorf("event %q needs a message, a level and at least one probe", e.ID)
		}
		for _, p := range e.Probes {
			if p.Side == Return && p.Cond.Cmp != Always && p.Cond.Src != RetVal {
				return fmt.Errorf("event %q: %s: arguments are gone on return", e.ID, p)
			}
			if p.Side == Entry && p.Cond.Cmp != Always && p.Cond.Src == RetVal {
				return fmt.Errorf("event %q: %s: no return value on entry", e.ID, p)
			}
			if p.CallTo != "" && p.Side != Entry {
				return fmt.Errorf("event %q: %s: a call site has no return side", e.ID, p)
			}
		}
	}
	return nil
}

// Lookup returns the event with the given id and its index (the id the BPF side counts under).
func (c Catalog) Lookup(id string) (Event, int, bool) {
	for i, e := range c.Events {
		if e.ID == id {
			return e, i, true
		}
	}
	return Event{}, -1, false
}

// Libraries returns the libraries the catalog probes, in first-use order.
func (c Catalog) Libraries() []Library {
	var out []Library
	for _, e := range c.Events {
		for _, p := range e.Probes {
			if !slices.Contains(out, p.Library) {
				out = append(out, p.Library)
			}
		}
	}
	return out
}

// Describe says what the catalog knows about an event for the summary: its
// message, layer and advice, the advice completed by the event's Suggest
// from the detail and peak of one total. It reports false for an id the
// catalog does not hold.
func (c Catalog) Describe(id, detail string, peak uint64) (agg.EventInfo, bool) {
	e, _, ok := c.Lookup(id)
	if !ok {
		return agg.EventInfo{}, false
	}
	advice := e.Advice
	if e.Suggest != nil {
		if s := e.Suggest(detail, peak); s != "" {
			advice = strings.TrimSuffix(advice, ".") + "; " + s
		}
	}
	return agg.EventInfo{Message: e.Message, Advice: advice, Layer: e.Layer}, true
}
