package thresholds

import (
	"math"
	"reflect"
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func newFakeClock() *fakeClock { return &fakeClock{t: epoch} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// at returns the fake time s seconds after the epoch.
func at(s float64) time.Time { return epoch.Add(time.Duration(s * float64(time.Second))) }

// step moves the clock by advance and then observes total; want is the
// report expected, nil for none.
type step struct {
	advance time.Duration
	total   uint64
	want    *Report[string]
}

func rep(kind Kind, count uint64, window time.Duration, t time.Time) *Report[string] {
	return &Report[string]{Key: "k", Kind: kind, Count: count, Window: window, Time: t}
}

func TestLimiterSingleKey(t *testing.T) {
	const sec = time.Second
	tests := []struct {
		name      string
		rule      Rule
		steps     []step
		wantFinal []Report[string] // Finalize after all steps
	}{
		{
			name: "low rate reports only at finalize",
			rule: Rule{C: 1000, T: 10 * sec},
			steps: []step{
				{sec, 5, nil}, {sec, 10, nil}, {30 * sec, 23, nil}, {sec, 23, nil},
			},
			wantFinal: []Report[string]{{Key: "k", Kind: Final, Count: 23, Time: at(33)}},
		},
		{
			name: "low rate never observed above zero has no final report",
			rule: Rule{C: 1000, T: 10 * sec},
			steps: []step{
				{sec, 0, nil}, {sec, 0, nil},
			},
			wantFinal: nil,
		},
		{
			name: "medium rate is C-limited with the actual count",
			rule: Rule{C: 1000, T: 10 * sec},
			steps: []step{
				{5 * sec, 999, nil},
				{sec, 1003, rep(Threshold, 1003, 0, at(6))}, // first report: no T wait
				{5 * sec, 1500, nil},
				{10 * sec, 2002, nil},                             // 999 since last report
				{10 * sec, 2003, rep(Threshold, 1000, 0, at(31))}, // C reached 25s after last report
				{20 * sec, 3100, rep(Threshold, 1097, 0, at(51))},
				{sec, 3500, nil},
			},
			wantFinal: []Report[string]{{Key: "k", Kind: Final, Count: 400, Time: at(52)}},
		},
		{
			name: "high rate is T-limited and reports the window count",
			rule: Rule{C: 1000, T: 10 * sec},
			steps: []step{
				{sec, 500_000, rep(Threshold, 500_000, 0, at(1))}, // first report as soon as C is reached
				{sec, 1_000_000, nil},
				{sec, 1_500_000, nil},
				{7 * sec, 5_000_000, nil}, // 9s since last report
				{sec, 5_500_000, rep(Window, 5_000_000, 10*sec, at(11))},
				{5 * sec, 8_000_000, nil},
				{5 * sec, 10_734_567, rep(Window, 5_234_567, 10*sec, at(21))},
				// slows down: C reached only after T, so back to Threshold
				{20 * sec, 10_735_567, rep(Threshold, 1000, 0, at(41))},
			},
			wantFinal: nil,
		},
		{
			name: "held back report waits for T even when sampled late",
			rule: Rule{C: 10, T: 10 * sec},
			steps: []step{
				{0, 10, rep(Threshold, 10, 0, at(0))},
				{sec, 20, nil},
				{30 * sec, 25, rep(Window, 15, 10*sec, at(31))},
			},
		},
		{
			name: "T=0 means no time limit",
			rule: Rule{C: 10, T: 0},
			steps: []step{
				{0, 10, rep(Threshold, 10, 0, at(0))},
				{0, 25, rep(Threshold, 15, 0, at(0))},
				{0, 34, nil},
				{time.Millisecond, 1_000_000, rep(Threshold, 999_975, 0, at(0.001))},
			},
			wantFinal: nil,
		},
		{
			name: "negative T is treated as no time limit",
			rule: Rule{C: 10, T: -sec},
			steps: []step{
				{0, 10, rep(Threshold, 10, 0, at(0))},
				{0, 20, rep(Threshold, 10, 0, at(0))},
			},
		},
		{
			name: "C=0 reports every new count",
			rule: Rule{C: 0, T: 0},
			steps: []step{
				{0, 0, nil},
				{sec, 1, rep(Threshold, 1, 0, at(1))},
				{sec, 1, nil},
				{sec, 3, rep(Threshold, 2, 0, at(3))},
			},
		},
		{
			name: "C=1 reports every new count",
			rule: Rule{C: 1, T: 0},
			steps: []step{
				{sec, 1, rep(Threshold, 1, 0, at(1))},
				{sec, 1, nil},
				{sec, 2, rep(Threshold, 1, 0, at(3))},
			},
		},
		{
			name: "C=1 is still T-limited",
			rule: Rule{C: 1, T: 10 * sec},
			steps: []step{
				{0, 1, rep(Threshold, 1, 0, at(0))},
				{sec, 2, nil},
				{sec, 5, nil},
				{8 * sec, 5, rep(Window, 4, 10*sec, at(10))},
				{sec, 6, nil},
			},
			wantFinal: []Report[string]{{Key: "k", Kind: Final, Count: 1, Time: at(11)}},
		},
		{
			name: "totals going backwards are no new counts",
			rule: Rule{C: 10, T: 0},
			steps: []step{
				{sec, 15, rep(Threshold, 15, 0, at(1))},
				{sec, 5, nil},
				{sec, 0, nil},
				{sec, 15, nil},
				{sec, 24, nil},
				{sec, 25, rep(Threshold, 10, 0, at(6))},
				{sec, 10, nil},
				{sec, 28, nil},
			},
			wantFinal: []Report[string]{{Key: "k", Kind: Final, Count: 3, Time: at(8)}},
		},
		{
			name: "huge totals do not overflow",
			rule: Rule{C: math.MaxUint64, T: 0},
			steps: []step{
				{sec, math.MaxUint64 - 1, nil},
				{sec, math.MaxUint64, rep(Threshold, math.MaxUint64, 0, at(2))},
				{sec, 1, nil},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			l := NewLimiter[string](clock)
			for i, s := range tt.steps {
				clock.Advance(s.advance)
				got, ok := l.Observe("k", tt.rule, s.total)
				switch {
				case s.want == nil && ok:
					t.Fatalf("step %d (total %d): unexpected report %+v", i, s.total, got)
				case s.want != nil && !ok:
					t.Fatalf("step %d (total %d): no report, want %+v", i, s.total, *s.want)
				case s.want != nil && got != *s.want:
					t.Fatalf("step %d (total %d): report %+v, want %+v", i, s.total, got, *s.want)
				}
			}
			got := l.Finalize()
			if len(got) != len(tt.wantFinal) || (len(got) > 0 && !reflect.DeepEqual(got, tt.wantFinal)) {
				t.Fatalf("Finalize() = %+v, want %+v", got, tt.wantFinal)
			}
			if again := l.Finalize(); len(again) != 0 {
				t.Fatalf("second Finalize() = %+v, want nothing", again)
			}
		})
	}
}

type pidEvent struct {
	pid   uint32
	event string
}

func TestLimiterKeysAreIndependent(t *testing.T) {
	clock := newFakeClock()
	l := NewLimiter[pidEvent](clock)
	rule := Rule{C: 100, T: 10 * time.Second}
	a := pidEvent{1, "ob1.send_pending.new"}
	b := pidEvent{2, "ob1.send_pending.new"}
	c := pidEvent{1, "other"}

	expect := func(key pidEvent, total uint64, wantKind Kind, wantCount uint64) {
		t.Helper()
		got, ok := l.Observe(key, rule, total)
		if wantKind == 0 {
			if ok {
				t.Fatalf("Observe(%v, %d): unexpected report %+v", key, total, got)
			}
			return
		}
		if !ok || got.Key != key || got.Kind != wantKind || got.Count != wantCount {
			t.Fatalf("Observe(%v, %d) = %+v, %v; want %v %d", key, total, got, ok, wantKind, wantCount)
		}
	}

	expect(a, 100, Threshold, 100) // a's first report
	clock.Advance(time.Second)
	expect(b, 100, Threshold, 100) // b's first report is not delayed by a's T
	expect(c, 99, 0, 0)
	expect(a, 200, 0, 0) // a is T-limited
	clock.Advance(9 * time.Second)
	expect(a, 250, Window, 150) // 10s after a's report
	expect(b, 300, 0, 0)        // only 9s after b's report
	expect(c, 100, Threshold, 100)
	clock.Advance(time.Second)
	expect(b, 300, Window, 200)

	want := []Report[pidEvent]{{Key: a, Kind: Final, Count: 5, Time: at(11)}}
	expect(a, 255, 0, 0)
	if got := l.Finalize(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Finalize() = %+v, want %+v", got, want)
	}
}

func TestFinalizeOrder(t *testing.T) {
	clock := newFakeClock()
	l := NewLimiter[string](clock)
	rule := Rule{C: 1000, T: time.Second}
	for _, o := range []struct {
		key   string
		total uint64
	}{
		{"c", 1}, {"a", 2}, {"zero", 0}, {"b", 3}, {"a", 4}, {"c", 5}, {"d", 6},
	} {
		if r, ok := l.Observe(o.key, rule, o.total); ok {
			t.Fatalf("unexpected report %+v", r)
		}
	}
	var keys []string
	var counts []uint64
	for _, r := range l.Finalize() {
		if r.Kind != Final {
			t.Errorf("report %+v: kind %v, want final", r, r.Kind)
		}
		keys = append(keys, r.Key)
		counts = append(counts, r.Count)
	}
	if want := []string{"c", "a", "b", "d"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("Finalize keys = %q, want %q (first-observed order, zero counts left out)", keys, want)
	}
	if want := []uint64{5, 4, 3, 6}; !reflect.DeepEqual(counts, want) {
		t.Errorf("Finalize counts = %v, want %v", counts, want)
	}
}

func TestFinalizeKey(t *testing.T) {
	clock := newFakeClock()
	l := NewLimiter[string](clock)
	rule := Rule{C: 10, T: time.Minute}

	if _, ok := l.FinalizeKey("never"); ok {
		t.Fatal("FinalizeKey of an unknown key reported")
	}
	l.Observe("a", rule, 3)
	l.Observe("b", rule, 10) // reported at once
	l.Observe("c", rule, 1)
	clock.Advance(time.Second)
	l.Observe("b", rule, 12)

	got, ok := l.FinalizeKey("b")
	want := Report[string]{Key: "b", Kind: Final, Count: 2, Time: at(1)}
	if !ok || got != want {
		t.Fatalf("FinalizeKey(b) = %+v, %v; want %+v", got, ok, want)
	}
	if _, ok := l.FinalizeKey("b"); ok {
		t.Fatal("second FinalizeKey(b) reported")
	}
	// b is forgotten: a reused key starts from zero, with no T wait, and
	// now comes last in Finalize's order.
	if r, ok := l.Observe("b", rule, 10); !ok || r.Count != 10 || r.Kind != Threshold {
		t.Fatalf("Observe(b) after FinalizeKey = %+v, %v; want a threshold report of 10", r, ok)
	}
	l.Observe("b", rule, 11)
	var keys []string
	for _, r := range l.Finalize() {
		keys = append(keys, r.Key)
	}
	if want := []string{"a", "c", "b"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("Finalize keys = %q, want %q", keys, want)
	}
}

func TestRuleChangesApplyImmediately(t *testing.T) {
	clock := newFakeClock()
	l := NewLimiter[string](clock)
	if _, ok := l.Observe("k", Rule{C: 100}, 50); ok {
		t.Fatal("reported below C")
	}
	if r, ok := l.Observe("k", Rule{C: 50}, 50); !ok || r.Count != 50 {
		t.Fatalf("Observe with lowered C = %+v, %v; want a report of 50", r, ok)
	}
}

func TestNewLimiterNilClock(t *testing.T) {
	l := NewLimiter[int](nil)
	r, ok := l.Observe(1, Rule{C: 1}, 1)
	if !ok || r.Time.IsZero() {
		t.Fatalf("Observe with system clock = %+v, %v", r, ok)
	}
}

func TestLimiterConcurrent(t *testing.T) {
	l := NewLimiter[int](SystemClock{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range uint64(1000) {
				l.Observe(g, Rule{C: 10, T: 0}, i)
			}
		})
	}
	wg.Wait()
	if got := len(l.Finalize()); got != 8 {
		t.Fatalf("Finalize returned %d reports, want 8", got)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{Threshold: "threshold", Window: "window", Final: "final", 0: "kind(0)", 9: "kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}

func TestSnapshotRestore(t *testing.T) {
	clock := newFakeClock()
	rule := Rule{C: 10, T: 10 * time.Second}
	a := NewLimiter[string](clock)
	if _, ok := a.Observe("x", rule, 15); !ok {
		t.Fatal("first report expected at 15 >= C")
	}
	a.Observe("y", rule, 3)
	clock.Advance(2 * time.Second)
	a.Observe("x", rule, 30) // held back: T has not passed
	snap := a.Snapshot()
	if len(snap) != 2 || snap[0].Key != "x" || snap[1].Key != "y" {
		t.Fatalf("snapshot order = %+v, want x then y", snap)
	}

	// A restarted program restores the state: nothing reported twice, the
	// held-back window is reported once T has passed since the first report.
	b := NewLimiter[string](clock)
	b.Restore(snap)
	if r, ok := b.Observe("x", rule, 30); ok {
		t.Fatalf("restored limiter reported again before T: %+v", r)
	}
	clock.Advance(9 * time.Second)
	r, ok := b.Observe("x", rule, 31)
	if !ok || r.Count != 16 || r.Kind != Window {
		t.Fatalf("after T: got %+v, %v; want a window report of 16", r, ok)
	}
	fin := b.Finalize()
	if len(fin) != 1 || fin[0].Key != "y" || fin[0].Count != 3 {
		t.Fatalf("finalize = %+v, want y: 3", fin)
	}
	// Reported above Total (a corrupt file) never underflows.
	c := NewLimiter[string](clock)
	c.Restore([]KeyState[string]{{Key: "z", Total: 5, Reported: 9}})
	if fin := c.Finalize(); len(fin) != 0 {
		t.Fatalf("finalize after clamped restore = %+v, want nothing", fin)
	}
}
