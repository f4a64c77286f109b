package thresholds

import (
	"cmp"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Clock tells the current time. A [Limiter] reads it on every call so tests
// can inject a fake clock.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
}

// SystemClock is the real [Clock]; it returns [time.Now].
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Rule is the C/T rule of one event: report once C counts have accumulated
// since the last report, but not more than once every T.
type Rule struct {
	// C is the count threshold. 0 and 1 both mean every new count is
	// reportable.
	C uint64
	// T is the minimum delay between two reports of the same key. 0 means no
	// time limit. Negative values are treated as 0.
	T time.Duration
}

// Kind says why a [Report] was made.
type Kind int

const (
	// Threshold is a report made because C counts accumulated after at
	// least T had passed since the previous report (medium rate):
	// "1,003 warnings".
	Threshold Kind = iota + 1
	// Window is a report that was held back because C counts accumulated
	// before T had passed since the previous report (high rate); it gives
	// the count accrued in the window: "1,234,567 warnings (in 10 seconds)".
	Window
	// Final is the summary, made by [Limiter.Finalize] or
	// [Limiter.FinalizeKey], of counts not reported yet:
	// "At finalize : 23 times".
	Final
)

// String returns the name of the kind: "threshold", "window" or "final".
func (k Kind) String() string {
	switch k {
	case Threshold:
		return "threshold"
	case Window:
		return "window"
	case Final:
		return "final"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Report says that Count new occurrences of the event identified by Key
// should be printed.
type Report[K comparable] struct {
	// Key is the key passed to [Limiter.Observe].
	Key K
	// Kind is why the report was made.
	Kind Kind
	// Count is the number of occurrences since the previous report of Key
	// (or since the key was first observed).
	Count uint64
	// Window is the rule's T for Kind == Window, and 0 otherwise.
	Window time.Duration
	// Time is the clock's time when the report was made.
	Time time.Time
}

// Limiter applies the C/T rule to cumulative running totals, independently
// for each key. The zero value is not usable; call [NewLimiter]. A Limiter is
// safe for concurrent use.
type Limiter[K comparable] struct {
	clock Clock

	mu    sync.Mutex
	state map[K]*keyState
	seq   uint64 // number of keys ever added; orders keys by first observation
}

type keyState struct {
	total    uint64    // highest total seen
	reported uint64    // total at the last report
	last     time.Time // time of the last report
	hasLast  bool      // whether there was a report
	heldBack bool      // C was reached while T had not passed yet
	seq      uint64    // when the key was first observed, for Finalize's order
}

// NewLimiter returns a Limiter that reads the time from clock. A nil clock
// means [SystemClock].
func NewLimiter[K comparable](clock Clock) *Limiter[K] {
	if clock == nil {
		clock = SystemClock{}
	}
	return &Limiter[K]{clock: clock, state: make(map[K]*keyState)}
}

// Observe records that the running total for key is now total and applies
// rule. It returns a report and true when the counts since the last report
// of key should be printed now, otherwise false. A total lower than a total
// seen before for key means no new counts.
//
// The first report of a key is made as soon as C counts have accumulated.
// Later reports are made once C counts have accumulated and T has passed
// since the previous report; if C was reached before T had passed, the
// report is of kind [Window], otherwise of kind [Threshold].
func (l *Limiter[K]) Observe(key K, rule Rule, total uint64) (Report[K], bool) {
	now := l.clock.Now()

	l.mu.Lock()
	defer l.mu.Unlock()

	s := l.state[key]
	if s == nil {
		l.seq++
		s = &keyState{seq: l.seq}
		l.state[key] = s
	}
	if total > s.total {
		s.total = total
	}
	pending := s.total - s.reported
	c := max(rule.C, 1)
	if pending < c {
		return Report[K]{}, false
	}
	if s.hasLast && rule.T > 0 && now.Sub(s.last) < rule.T {
		s.heldBack = true
		return Report[K]{}, false
	}

	r := Report[K]{Key: key, Kind: Threshold, Count: pending, Time: now}
	if s.heldBack {
		r.Kind = Window
		r.Window = rule.T
	}
	s.reported = s.total
	s.last = now
	s.hasLast = true
	s.heldBack = false
	return r, true
}

// Finalize returns one [Final] report for each key whose count since its
// last report is not zero, in the order the keys were first observed, and
// marks those counts reported: a second Finalize without new counts returns
// nothing.
func (l *Limiter[K]) Finalize() []Report[K] {
	now := l.clock.Now()

	l.mu.Lock()
	defer l.mu.Unlock()

	type entry struct {
		key K
		s   *keyState
	}
	var todo []entry
	for key, s := range l.state {
		if s.total != s.reported {
			todo = append(todo, entry{key, s})
		}
	}
	slices.SortFunc(todo, func(a, b entry) int { return cmp.Compare(a.s.seq, b.s.seq) })

	out := make([]Report[K], 0, len(todo))
	for _, e := range todo {
		r, _ := finalize(e.key, e.s, now)
		out = append(out, r)
	}
	return out
}

// FinalizeKey returns the [Final] report of one key, as [Limiter.Finalize]
// would, and then forgets the key, so that a later total for the same key
// (for example a reused pid) starts from zero. It returns false when the key
// has no unreported count or was never observed.
func (l *Limiter[K]) FinalizeKey(key K) (Report[K], bool) {
	now := l.clock.Now()

	l.mu.Lock()
	defer l.mu.Unlock()

	s := l.state[key]
	if s == nil {
		return Report[K]{}, false
	}
	delete(l.state, key)
	return finalize(key, s, now)
}

func finalize[K comparable](key K, s *keyState, now time.Time) (Report[K], bool) {
	pending := s.total - s.reported
	if pending == 0 {
		return Report[K]{}, false
	}
	s.reported = s.total
	s.last = now
	s.hasLast = true
	s.heldBack = false
	return Report[K]{Key: key, Kind: Final, Count: pending, Time: now}, true
}

// KeyState is what a Limiter remembers of one key, for saving it across a
// restart of the program (see [Limiter.Snapshot] and [Limiter.Restore]).
type KeyState[K comparable] struct {
	// Key is the limiter key.
	Key K `json:"key"`
	// Total is the highest running total seen.
	Total uint64 `json:"total"`
	// Reported is the total at the last report.
	Reported uint64 `json:"reported"`
	// Last is the time of the last report; zero when there was none.
	Last time.Time `json:"last,omitzero"`
	// HeldBack says C was reached while T had not passed yet.
	HeldBack bool `json:"held_back,omitempty"`
}

// Snapshot returns the state of every key, in the order keys were first
// observed.
func (l *Limiter[K]) Snapshot() []KeyState[K] {
	l.mu.Lock()
	defer l.mu.Unlock()
	type entry struct {
		key K
		s   *keyState
	}
	all := make([]entry, 0, len(l.state))
	for k, s := range l.state {
		all = append(all, entry{k, s})
	}
	slices.SortFunc(all, func(a, b entry) int { return cmp.Compare(a.s.seq, b.s.seq) })
	out := make([]KeyState[K], 0, len(all))
	for _, e := range all {
		ks := KeyState[K]{Key: e.key, Total: e.s.total, Reported: e.s.reported, HeldBack: e.s.heldBack}
		if e.s.hasLast {
			ks.Last = e.s.last
		}
		out = append(out, ks)
	}
	return out
}

// Restore sets the state of the given keys, as a [Limiter.Snapshot] of an
// earlier Limiter returned it, so that what was reported before is not
// reported again. A Reported above Total is lowered to Total.
func (l *Limiter[K]) Restore(states []KeyState[K]) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ks := range states {
		l.seq++
		s := &keyState{total: ks.Total, reported: min(ks.Reported, ks.Total), heldBack: ks.HeldBack, seq: l.seq}
		if !ks.Last.IsZero() {
			s.last, s.hasLast = ks.Last, true
		}
		l.state[ks.Key] = s
	}
}
