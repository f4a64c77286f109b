package thresholds

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/text"
)

// Partial is a possibly incomplete override of a [Rule]: a nil field leaves
// that part of the rule as weaker layers set it.
type Partial struct {
	// C overrides Rule.C when not nil.
	C *uint64
	// T overrides Rule.T when not nil.
	T *time.Duration
}

// String renders p as the right side of an event spec: "500/10s", "500/"
// (C only), "/30s" (T only), or "" when p sets nothing.
func (p Partial) String() string {
	if p.C == nil && p.T == nil {
		return ""
	}
	var b strings.Builder
	if p.C != nil {
		b.WriteString(strconv.FormatUint(*p.C, 10))
	}
	b.WriteByte('/')
	if p.T != nil {
		b.WriteString(p.T.String())
	}
	return b.String()
}

// apply returns r with the parts p sets replaced.
func (p Partial) apply(r Rule) Rule {
	if p.C != nil {
		r.C = *p.C
	}
	if p.T != nil {
		r.T = *p.T
	}
	return r
}

// Overrides is one layer of settings, such as a config file or the command
// line: C and T apply to all events, Events to single events and beat C and
// T of the same layer. Nil fields and missing events set nothing.
type Overrides struct {
	// C overrides the count threshold of all events when not nil.
	C *uint64
	// T overrides the time delay of all events when not nil.
	T *time.Duration
	// Events overrides single events, keyed by event name.
	Events map[string]Partial
}

// AddEventSpec parses an "EVENT=C/T" spec with [ParseEventSpec] and merges
// it into o.Events: the parts it sets replace those set before for the same
// event, so a later --threshold flag wins. It fits flag.Func.
func (o *Overrides) AddEventSpec(spec string) error {
	event, p, err := ParseEventSpec(spec)
	if err != nil {
		return err
	}
	if o.Events == nil {
		o.Events = make(map[string]Partial)
	}
	old := o.Events[event]
	if p.C == nil {
		p.C = old.C
	}
	if p.T == nil {
		p.T = old.T
	}
	o.Events[event] = p
	return nil
}

// Format renders o in the config file format (package config reads it): global
// C and T first, then one threshold line per event in name order. Events
// whose Partial sets nothing are left out.
func (o Overrides) Format() string {
	var b strings.Builder
	if o.C != nil {
		b.WriteString("C = " + strconv.FormatUint(*o.C, 10) + "\n")
	}
	if o.T != nil {
		b.WriteString("T = " + o.T.String() + "\n")
	}
	names := make([]string, 0, len(o.Events))
	for name, p := range o.Events {
		if p.C != nil || p.T != nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		b.WriteString(thresholdPrefix + name + " = " + o.Events[name].String() + "\n")
	}
	return b.String()
}

// Resolve returns the rule for event: def (the catalog default) with the
// layers applied weakest first. Within each layer the global C and T apply
// first and the layer's setting for event after them. C and T resolve
// independently.
func Resolve(event string, def Rule, layers ...Overrides) Rule {
	r := def
	for _, l := range layers {
		r = Partial{C: l.C, T: l.T}.apply(r)
		if p, ok := l.Events[event]; ok {
			r = p.apply(r)
		}
	}
	return r
}

const specHelp = "use EVENT=C/T, e.g. ob1.send_pending.new=500/10s, =500/ or =/30s"

// ParseEventSpec parses "EVENT=C/T", the argument of --threshold. Either C
// or T may be empty ("EVENT=500/", "EVENT=/30s") but not both; "EVENT=500"
// sets only C. C is a decimal whole number, T a duration as for [ParseT].
// Spaces around the parts are ignored.
func ParseEventSpec(s string) (event string, p Partial, err error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok {
		return "", Partial{}, errors.New("threshold " + text.Echo(s) + ": missing \"=\" (" + specHelp + ")")
	}
	event = strings.TrimSpace(name)
	if err := checkEvent(event, specHelp); err != nil {
		return "", Partial{}, errors.New("threshold " + text.Echo(s) + ": " + err.Error())
	}
	p, err = parsePartial(value, specHelp)
	if err != nil {
		return "", Partial{}, errors.New("threshold " + text.Echo(s) + ": " + err.Error())
	}
	return event, p, nil
}

// ParseC parses a count threshold: a decimal whole number such as 1000.
func ParseC(s string) (uint64, error) {
	if s == "" || s[0] == '+' || s[0] == '-' || !isInteger(s) {
		return 0, errors.New(text.Echo(s) + " is not a count (use a whole number, e.g. 1000)")
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil { // only digits, so the number is too large
		return 0, errors.New(text.Echo(s) + " is too large (the largest count is " +
			strconv.FormatUint(math.MaxUint64, 10) + ")")
	}
	return n, nil
}

// ParseT parses a time delay: a Go duration such as 10s, 2m or 1m30s, or a
// bare whole number of seconds. It must not be negative.
func ParseT(s string) (time.Duration, error) {
	if isInteger(s) {
		n, err := strconv.ParseInt(s, 10, 64)
		switch {
		case err != nil || n > math.MaxInt64/int64(time.Second) || n < math.MinInt64/int64(time.Second):
			return 0, errors.New(text.Echo(s) + " is too large (use e.g. 10s, 2m)")
		case n < 0:
			return 0, errors.New(text.Echo(s) + " is negative (use 0 or more, e.g. 10s)")
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New(text.Echo(s) + " is not a duration (use e.g. 10s, 2m)")
	}
	if d < 0 {
		return 0, errors.New(text.Echo(s) + " is negative (use 0 or more, e.g. 10s)")
	}
	return d, nil
}

// parsePartial parses the right side of an event spec, "C/T". help says how
// to write it and ends error messages about its shape.
func parsePartial(s, help string) (Partial, error) {
	cs, ts, _ := strings.Cut(s, "/")
	cs, ts = strings.TrimSpace(cs), strings.TrimSpace(ts)
	if cs == "" && ts == "" {
		return Partial{}, errors.New(text.Echo(s) + " sets neither C nor T (" + help + ")")
	}
	var p Partial
	if cs != "" {
		c, err := ParseC(cs)
		if err != nil {
			return Partial{}, errors.New("C " + err.Error())
		}
		p.C = &c
	}
	if ts != "" {
		t, err := ParseT(ts)
		if err != nil {
			return Partial{}, errors.New("T " + err.Error())
		}
		p.T = &t
	}
	return p, nil
}

// checkEvent reports whether name is a valid event name: [a-z0-9_.-]+. help
// says how to write an event setting and ends the message about a missing
// name.
func checkEvent(name, help string) error {
	if name == "" {
		return errors.New("missing event name (" + help + ")")
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return errors.New("event name " + text.Echo(name) +
				" is invalid (use lowercase letters, digits, '_', '.' and '-')")
		}
	}
	return nil
}

// isInteger reports whether s is an optionally signed run of decimal digits.
func isInteger(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	return text.IsDigits(s)
}
