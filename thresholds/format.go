package thresholds

import (
	"strconv"
	"time"
)

// Prefix returns the text printed before " : <message>":
//
//	Threshold: "1,003 warnings"
//	Window:    "1,234,567 warnings (in 10 seconds)"
//	Final:     "At finalize : 23 times"
//
// Counts have thousands separators; a count of 1 reads "1 warning" and
// "1 time". The window is printed in whole seconds when it is a whole number
// of seconds ("in 1 second", "in 90 seconds"), and as a Go duration string
// otherwise ("in 1.5s").
func (r Report[K]) Prefix() string {
	switch r.Kind {
	case Window:
		return plural(r.Count, "warning") + " (in " + formatWindow(r.Window) + ")"
	case Final:
		return "At finalize : " + plural(r.Count, "time")
	default:
		return plural(r.Count, "warning")
	}
}

// FormatCount renders n in decimal with a comma every three digits, e.g.
// 1234567 as "1,234,567".
func FormatCount(n uint64) string {
	s := strconv.FormatUint(n, 10)
	if len(s) <= 3 {
		return s
	}
	out := make([]byte, 0, len(s)+(len(s)-1)/3)
	lead := len(s) % 3
	if lead == 0 {
		lead = 3
	}
	out = append(out, s[:lead]...)
	for i := lead; i < len(s); i += 3 {
		out = append(out, ',')
		out = append(out, s[i:i+3]...)
	}
	return string(out)
}

func plural(n uint64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return FormatCount(n) + " " + word + "s"
}

func formatWindow(d time.Duration) string {
	if d > 0 && d%time.Second == 0 {
		return plural(uint64(d/time.Second), "second")
	}
	return d.String()
}
