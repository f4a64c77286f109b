package thresholds

import (
	"math"
	"testing"
	"time"
)

func TestPrefix(t *testing.T) {
	tests := []struct {
		kind   Kind
		count  uint64
		window time.Duration
		want   string
	}{
		{Threshold, 1000, 0, "1,000 warnings"},
		{Threshold, 1003, 0, "1,003 warnings"},
		{Threshold, 999, 0, "999 warnings"},
		{Threshold, 1, 0, "1 warning"},
		{Threshold, 0, 0, "0 warnings"},
		{Threshold, 1234567, 10 * time.Second, "1,234,567 warnings"}, // window ignored
		{Window, 1234567, 10 * time.Second, "1,234,567 warnings (in 10 seconds)"},
		{Window, 5000, time.Second, "5,000 warnings (in 1 second)"},
		{Window, 5000, 2 * time.Minute, "5,000 warnings (in 120 seconds)"},
		{Window, 5000, 1500 * time.Millisecond, "5,000 warnings (in 1.5s)"},
		{Window, 5000, 250 * time.Millisecond, "5,000 warnings (in 250ms)"},
		{Window, 1, 10 * time.Second, "1 warning (in 10 seconds)"},
		{Final, 23, 0, "At finalize : 23 times"},
		{Final, 1, 0, "At finalize : 1 time"},
		{Final, 12345, 0, "At finalize : 12,345 times"},
	}
	for _, tt := range tests {
		r := Report[string]{Key: "k", Kind: tt.kind, Count: tt.count, Window: tt.window}
		if got := r.Prefix(); got != tt.want {
			t.Errorf("Report{%v, %d, %v}.Prefix() = %q, want %q", tt.kind, tt.count, tt.window, got, tt.want)
		}
	}
}

func TestFormatCount(t *testing.T) {
	tests := map[uint64]string{
		0:              "0",
		7:              "7",
		12:             "12",
		123:            "123",
		1234:           "1,234",
		12345:          "12,345",
		123456:         "123,456",
		1234567:        "1,234,567",
		1000000:        "1,000,000",
		math.MaxUint64: "18,446,744,073,709,551,615",
	}
	for n, want := range tests {
		if got := FormatCount(n); got != want {
			t.Errorf("FormatCount(%d) = %q, want %q", n, got, want)
		}
	}
}
