package chromecheck

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// Stats counts what a checked document holds.
type Stats struct {
	Complete  int            // "X" events
	Metadata  int            // "M" events
	Processes int            // distinct pids with events
	Tracks    int            // distinct (pid, tid) with events
	Names     map[string]int // "X" events by name
}

// event is the part of an event the rules are about.
type event struct {
	Ph   *string          `json:"ph"`
	Name *string          `json:"name"`
	Cat  *json.RawMessage `json:"cat"`
	Ts   *json.RawMessage `json:"ts"`
	Dur  *json.RawMessage `json:"dur"`
	Pid  *json.RawMessage `json:"pid"`
	Tid  *json.RawMessage `json:"tid"`
	Args *json.RawMessage `json:"args"`
}

type track struct{ pid, tid int64 }

type span struct{ ts, end float64 }

// Check reads a JSON object with a "traceEvents" array from r and checks
// that: it is valid JSON; every event has a string ph of a phase it knows
// (X, B, E, M), a string cat (the format's category, which Chrome's and
// Perfetto's own exports put on every event, "__metadata" on M events) and
// an integer pid of 1 or more (Perfetto sets pid 0, the kernel's, apart),
// and any ts is a number of 0 or more (Perfetto drops events before 0); X
// events have a name, ts, numeric non-negative dur and integer tid; B and E
// events pair up on their track; M events have an integer tid and are
// process_name, process_labels, process_sort_index, thread_name or
// thread_sort_index with the args each needs; on every track the events
// are either in sequence or properly nested, never overlapping part-way;
// and every process with events is named.
func Check(r io.Reader) (Stats, error) {
	st := Stats{Names: map[string]int{}}
	dec := json.NewDecoder(r)
	if err := delim(dec, '{'); err != nil {
		return st, err
	}
	tracks := map[track][]span{}
	open := map[track][]float64{} // B events awaiting their E
	named := map[int64]bool{}
	found := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return st, fmt.Errorf("invalid JSON: %w", err)
		}
		if tok != "traceEvents" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return st, fmt.Errorf("invalid JSON in %v: %w", tok, err)
			}
			continue
		}
		found = true
		if err := delim(dec, '['); err != nil {
			return st, err
		}
		for i := 0; dec.More(); i++ {
			var ev event
			if err := dec.Decode(&ev); err != nil {
				return st, fmt.Errorf("event %d: invalid: %w", i, err)
			}
			if err := check(&ev, &st, tracks, open, named); err != nil {
				return st, fmt.Errorf("event %d: %w", i, err)
			}
		}
		if err := delim(dec, ']'); err != nil {
			return st, err
		}
	}
	if err := delim(dec, '}'); err != nil {
		return st, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return st, errors.New("data after the JSON object")
	}
	if !found {
		return st, errors.New(`no "traceEvents" array`)
	}
	for k, o := range open {
		if len(o) > 0 {
			return st, fmt.Errorf("pid %d tid %d: %d B events without their E", k.pid, k.tid, len(o))
		}
	}
	pids := map[int64]bool{}
	for k, spans := range tracks {
		pids[k.pid] = true
		if !named[k.pid] {
			return st, fmt.Errorf("pid %d has events but no process_name", k.pid)
		}
		slices.SortFunc(spans, func(a, b span) int { return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(b.end, a.end)) })
		var stack []float64
		for _, s := range spans {
			for len(stack) > 0 && stack[len(stack)-1] <= s.ts {
				stack = stack[:len(stack)-1]
			}
			if len(stack) > 0 && s.end > stack[len(stack)-1] {
				return st, fmt.Errorf("pid %d tid %d: event at ts %v (to %v) overlaps one ending at %v without nesting in it", k.pid, k.tid, s.ts, s.end, stack[len(stack)-1])
			}
			stack = append(stack, s.end)
		}
	}
	st.Tracks = len(tracks)
	st.Processes = len(pids)
	return st, nil
}

func delim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if tok != want {
		return fmt.Errorf("want %v, found %v", want, tok)
	}
	return nil
}

// numeral returns the JSON number raw holds; a string is not one.
func numeral(raw *json.RawMessage, what string) (json.Number, error) {
	if raw == nil || string(*raw) == "null" {
		return "", fmt.Errorf("no %s", what)
	}
	if c := (*raw)[0]; c != '-' && (c < '0' || c > '9') {
		return "", fmt.Errorf("%s %s is not a number", what, *raw)
	}
	return json.Number(*raw), nil
}

func integer(raw *json.RawMessage, what string) (int64, error) {
	n, err := numeral(raw, what)
	if err != nil {
		return 0, err
	}
	v, err := n.Int64()
	if err != nil {
		return 0, fmt.Errorf("%s %s is not an integer", what, n)
	}
	return v, nil
}

func number(raw *json.RawMessage, what string) (float64, error) {
	n, err := numeral(raw, what)
	if err != nil {
		return 0, err
	}
	v, err := n.Float64()
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%s %s is not a number", what, n)
	}
	return v, nil
}

func check(ev *event, st *Stats, tracks map[track][]span, open map[track][]float64, named map[int64]bool) error {
	if ev.Ph == nil {
		return errors.New("no ph")
	}
	pid, err := integer(ev.Pid, "pid")
	if err != nil {
		return err
	}
	if pid < 1 {
		return fmt.Errorf("pid %d: give processes pids from 1", pid)
	}
	if ev.Cat == nil || len(*ev.Cat) == 0 || (*ev.Cat)[0] != '"' {
		return errors.New("no string cat")
	}
	if ev.Ts != nil {
		if ts, err := number(ev.Ts, "ts"); err != nil {
			return err
		} else if ts < 0 {
			return fmt.Errorf("negative ts %v", ts)
		}
	}
	switch *ev.Ph {
	case "X", "B", "E":
		tid, err := integer(ev.Tid, "tid")
		if err != nil {
			return err
		}
		ts, err := number(ev.Ts, "ts")
		if err != nil {
			return err
		}
		if ev.Name == nil && *ev.Ph != "E" {
			return fmt.Errorf("%s event without a name", *ev.Ph)
		}
		if ev.Args != nil && (len(*ev.Args) == 0 || (*ev.Args)[0] != '{') {
			return errors.New("args is not an object")
		}
		k := track{pid, tid}
		switch *ev.Ph {
		case "X":
			dur, err := number(ev.Dur, "dur")
			if err != nil {
				return err
			}
			if dur < 0 {
				return fmt.Errorf("negative dur %v", dur)
			}
			tracks[k] = append(tracks[k], span{ts, ts + dur})
			st.Complete++
			st.Names[*ev.Name]++
		case "B":
			open[k] = append(open[k], ts)
		case "E":
			o := open[k]
			if len(o) == 0 {
				return fmt.Errorf("E event without a B on pid %d tid %d", pid, tid)
			}
			if ts < o[len(o)-1] {
				return fmt.Errorf("E event at %v before its B at %v", ts, o[len(o)-1])
			}
			tracks[k] = append(tracks[k], span{o[len(o)-1], ts})
			open[k] = o[:len(o)-1]
		}
	case "M":
		if ev.Name == nil || ev.Args == nil {
			return errors.New("metadata event without name or args")
		}
		var args map[string]any
		if err := json.Unmarshal(*ev.Args, &args); err != nil {
			return fmt.Errorf("metadata args: %w", err)
		}
		var key string
		var isString bool
		switch *ev.Name {
		case "process_name":
			key, isString = "name", true
			named[pid] = true
		case "thread_name":
			key, isString = "name", true
		case "process_labels":
			key, isString = "labels", true
		case "process_sort_index", "thread_sort_index":
			key = "sort_index"
		default:
			return fmt.Errorf("unknown metadata event %q", *ev.Name)
		}
		if _, err := integer(ev.Tid, "tid"); err != nil {
			return fmt.Errorf("%s: %w", *ev.Name, err)
		}
		v, ok := args[key]
		if _, s := v.(string); !ok || s != isString {
			return fmt.Errorf("%s: args.%s missing or of the wrong type", *ev.Name, key)
		}
		st.Metadata++
	default:
		return fmt.Errorf("phase %q not expected in an mpiprobe timeline", *ev.Ph)
	}
	return nil
}
