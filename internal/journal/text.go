package journal

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

type text struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

// NewText returns a sink writing each entry to w as text, with a single
// Write per entry: "<priority word>: <message>", further message lines
// indented, control characters and invalid UTF-8 escaped (see the package
// documentation). Fields are checked as by the native sink but not written.
func NewText(w io.Writer) Sink {
	return &text{w: w}
}

func (s *text) Send(e Entry) error {
	if err := validate(e); err != nil {
		return err
	}
	b := formatText(e)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("journal: send: %w", ErrClosed)
	}
	if _, err := s.w.Write(b); err != nil {
		return fmt.Errorf("journal: send: %w", err)
	}
	return nil
}

func (s *text) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// formatText renders e as the text sink writes it.
func formatText(e Entry) []byte {
	prefix := e.Priority.String() + ": "
	indent := strings.Repeat(" ", len(prefix))
	msg := strings.TrimRight(e.Message, "\n")
	b := make([]byte, 0, len(prefix)+len(msg)+1)
	for i, line := range strings.Split(msg, "\n") {
		if i == 0 {
			b = append(b, prefix...)
		} else {
			b = append(b, indent...)
		}
		b = appendSanitized(b, line)
		b = append(b, '\n')
	}
	return b
}

// appendSanitized appends line with every byte of invalid UTF-8 written as
// \xNN and every character strconv.IsPrint rejects, except the tab, written
// as strconv.QuoteRune escapes it.
func appendSanitized(b []byte, line string) []byte {
	for i := 0; i < len(line); {
		r, size := utf8.DecodeRuneInString(line[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\x`...)
			b = append(b, "0123456789abcdef"[line[i]>>4], "0123456789abcdef"[line[i]&0xf])
		case r == '\t' || strconv.IsPrint(r):
			b = append(b, line[i:i+size]...)
		default:
			q := strconv.QuoteRune(r) // 'x' with x escaped
			b = append(b, q[1:len(q)-1]...)
		}
		i += size
	}
	return b
}

// Escape returns s unchanged when it is valid UTF-8 of characters that
// strconv.IsPrint accepts (letters, marks, numbers, punctuation, symbols
// and the ASCII space), and strconv.Quote(s) otherwise: a string with a
// newline, tab, ESC or other control character, a non-printing character
// such as U+2028 or U+202E, or invalid UTF-8 comes back in double quotes
// with those escaped. Use it for user-controlled values (process names,
// job ids, paths) put into an Entry's Message; the empty string is
// returned unchanged.
func Escape(s string) string {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return strconv.Quote(s)
			}
		}
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
