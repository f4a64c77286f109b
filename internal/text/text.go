package text

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxLine is how many runes of a caller-provided string Line keeps.
const MaxLine = 160

// MaxEcho is about how many bytes of bad input Echo keeps.
const MaxEcho = 60

// Line makes a caller-provided string safe for a one-line message: every
// character that does not print (control and line-separator characters,
// bidirectional overrides) becomes a space, invalid UTF-8 becomes U+FFFD,
// and text longer than MaxLine runes is cut and ends in "...".
func Line(s string) string {
	n := 0
	cut := false
	s = strings.Map(func(r rune) rune {
		n++
		if n > MaxLine {
			cut = true
			return -1
		}
		if !strconv.IsPrint(r) {
			return ' '
		}
		return r
	}, s)
	if cut {
		s += "..."
	}
	return s
}

// Quote returns s as a value standing on its own is shown: unchanged when
// it is plain, else Go-quoted (strconv.Quote). A string is plain when it is
// not empty, is valid UTF-8, and every character prints and is none of the
// space, '"', '\\' and ',', which would make it ambiguous in a message, a
// key=value label or a comma-separated list.
func Quote(s string) string {
	if plain(s) {
		return s
	}
	return strconv.Quote(s)
}

// plain reports whether Quote shows s as it is.
func plain(s string) bool {
	return s != "" && printable(s) && !strings.ContainsAny(s, ` "\,`)
}

// Echo returns bad input as an error message shows it back: always
// Go-quoted, so that where it starts and ends is plain, and, when longer
// than MaxEcho bytes, cut at a character boundary and followed by "...",
// so that a huge line does not make a huge message.
func Echo(s string) string {
	if len(s) <= MaxEcho {
		return strconv.Quote(s)
	}
	cut := MaxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}

// Escape returns running text with every character that does not print
// written as strconv.QuoteRune escapes it (\x1b, \n, \t, \u202e, ...) and
// every byte of invalid UTF-8 as \xNN; the rest, backslashes included, is
// unchanged. Text that only holds printing characters comes back as it is.
func Escape(s string) string {
	if printable(s) {
		return s
	}
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, '\\', 'x', hex[s[i]>>4], hex[s[i]&0xf])
		case strconv.IsPrint(r):
			b = append(b, s[i:i+size]...)
		default:
			q := strconv.QuoteRune(r) // 'x' with x escaped
			b = append(b, q[1:len(q)-1]...)
		}
		i += size
	}
	return string(b)
}

// printable reports whether s is valid UTF-8 of printing characters.
func printable(s string) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return false
			}
		}
		if !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}

// IsDigits reports whether s is a non-empty run of ASCII decimal digits,
// as a job id, a port or a count written by people or launchers must be.
func IsDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
