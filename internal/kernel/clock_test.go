package kernel

import (
	"testing"
	"time"
)

func TestTimebaseWall(t *testing.T) {
	epoch := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		offset time.Duration
		ns     uint64
		want   time.Time
	}{
		{"zero stamp", time.Duration(epoch.UnixNano()), 0, epoch},
		{"one second after boot", time.Duration(epoch.UnixNano()), uint64(time.Second), epoch.Add(time.Second)},
		{"nanoseconds kept", time.Duration(epoch.UnixNano()), 1_000_000_007, epoch.Add(1_000_000_007)},
		{"no offset", 0, 5, time.Unix(0, 5)},
	}
	for _, tt := range tests {
		if got := (Timebase{Offset: tt.offset}).Wall(tt.ns); !got.Equal(tt.want) {
			t.Errorf("%s: Wall(%d) = %v, want %v", tt.name, tt.ns, got, tt.want)
		}
	}
}

// TestNewTimebase checks the offset against the clocks themselves: a BPF
// timestamp taken now is now on the wall clock.
func TestNewTimebase(t *testing.T) {
	before := time.Now()
	tb := NewTimebase()
	mono, err := MonotonicNow()
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	got := tb.Wall(mono)
	if got.Before(before.Add(-time.Millisecond)) || got.After(after.Add(time.Millisecond)) {
		t.Errorf("Wall(MonotonicNow()) = %v, want between %v and %v", got, before, after)
	}
}
