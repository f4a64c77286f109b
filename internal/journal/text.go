package journal

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/mpiprobe/mpiprobe/internal/text"
)

type textSink struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

// NewText returns a sink writing each entry to w as text, with a single
// Write per entry: "<priority word>: <message>", further message lines
// indented, control characters and invalid UTF-8 escaped (see the package
// documentation). Fields are checked as by the native sink but not written.
func NewText(w io.Writer) Sink {
	return &textSink{w: w}
}

func (s *textSink) Send(e Entry) error {
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

func (s *textSink) Close() error {
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

// appendSanitized appends line as text.Escape shows it, with its tabs
// kept, so that tables aligned with tabs stay aligned.
func appendSanitized(b []byte, line string) []byte {
	for i, part := range strings.Split(line, "\t") {
		if i > 0 {
			b = append(b, '\t')
		}
		b = append(b, text.Escape(part)...)
	}
	return b
}
