package text

import (
	"strings"
	"unicode"
)

// MaxLine is how many runes of a caller-provided string Line keeps.
const MaxLine = 160

// Line makes a caller-provided string safe for a one-line message: control
// and line-separator characters become spaces, and text longer than MaxLine
// runes is cut and ends in "...".
func Line(s string) string {
	n := 0
	cut := false
	s = strings.Map(func(r rune) rune {
		n++
		if n > MaxLine {
			cut = true
			return -1
		}
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	if cut {
		s += "..."
	}
	return s
}
