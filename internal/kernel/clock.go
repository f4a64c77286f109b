package kernel

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Timebase converts BPF timestamps, CLOCK_MONOTONIC nanoseconds as
// bpf_ktime_get_ns gives them, to wall-clock time.
type Timebase struct {
	// Offset is the wall clock minus CLOCK_MONOTONIC.
	Offset time.Duration
}

// NewTimebase reads the offset between the two clocks now. The offset
// changes when the wall clock is set; a session keeps the one it started
// with, so that its times stay in order.
func NewTimebase() Timebase {
	mono, err := MonotonicNow()
	if err != nil {
		return Timebase{}
	}
	return Timebase{Offset: time.Duration(time.Now().UnixNano() - int64(mono))}
}

// Wall returns the wall-clock time of a BPF timestamp.
func (t Timebase) Wall(ns uint64) time.Time {
	return time.Unix(0, int64(ns)+int64(t.Offset))
}

// MonotonicNow returns CLOCK_MONOTONIC now, in nanoseconds: the clock of
// BPF timestamps.
func MonotonicNow() (uint64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, fmt.Errorf("read the monotonic clock: %w", err)
	}
	return uint64(ts.Nano()), nil
}
