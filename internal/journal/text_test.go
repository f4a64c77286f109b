package journal

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestText(t *testing.T) {
	for _, tc := range []struct {
		name  string
		entry Entry
		want  string
	}{
		{"plain", Entry{Priority: Warning, Message: "rank 3 (pid 1234) on n1: MPI_Wait spinning"},
			"warning: rank 3 (pid 1234) on n1: MPI_Wait spinning\n"},
		{"fields are not written", Entry{Priority: Err, Message: "m", Fields: []Field{{"HOST", "n1"}}}, "error: m\n"},
		{"empty", Entry{Priority: Debug}, "debug: \n"},
		{"ESC", Entry{Priority: Warning, Message: "comm \x1b[31mred\x1b[0m \x1b]0;title\a"},
			`warning: comm \x1b[31mred\x1b[0m \x1b]0;title\a` + "\n"},
		{"CR cannot overwrite the line", Entry{Priority: Warning, Message: "bad\rwarning: fine"},
			`warning: bad\rwarning: fine` + "\n"},
		{"CRLF", Entry{Priority: Info, Message: "a\r\nb"}, "info: a\\r\n      b\n"},
		{"backspace, DEL, NUL, bell", Entry{Priority: Info, Message: "a\bb\x7fc\x00d\x07"}, `info: a\bb\x7fc\x00d\a` + "\n"},
		{"invalid UTF-8", Entry{Priority: Info, Message: "job \xff\xfe \xe2\x82 end"}, `info: job \xff\xfe \xe2\x82 end` + "\n"},
		{"C1 controls", Entry{Priority: Info, Message: "a\u0085b\u009bc"}, `info: a\u0085b\u009bc` + "\n"},
		{"bidi override and line separator", Entry{Priority: Info, Message: "x\u202ey\u2028z"}, `info: x\u202ey\u2028z` + "\n"},
		{"printable Unicode and tab kept", Entry{Priority: Info, Message: "/home/é/日本\tU+FFFD:\uFFFD"}, "info: /home/é/日本\tU+FFFD:\uFFFD\n"},
		{"backslash kept", Entry{Priority: Info, Message: `C:\x1b`}, `info: C:\x1b` + "\n"},
		{"multi-line summary", Entry{Priority: Info, Message: "job 42 summary\nRANK  EVENTS\n0     3\n\n1     0\n"},
			"info: job 42 summary\n      RANK  EVENTS\n      0     3\n      \n      1     0\n"},
		{"forged entry stays indented", Entry{Priority: Notice, Message: "comm x\nerror: rank 0 crashed"},
			"notice: comm x\n        error: rank 0 crashed\n"},
		{"escapes on continuation lines", Entry{Priority: Err, Message: "a\n\x1b[2Jb\xff"}, "error: a\n       \\x1b[2Jb\\xff\n"},
		{"trailing newlines dropped", Entry{Priority: Info, Message: "a\n\n\n"}, "info: a\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			s := NewText(&buf)
			if err := s.Send(tc.entry); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != tc.want {
				t.Fatalf("text:\n got %q\nwant %q", got, tc.want)
			}
			// Nothing a terminal interprets survives except \n and \t.
			for _, r := range buf.String() {
				if r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r < 0xa0 {
					t.Fatalf("control character %U in output", r)
				}
			}
		})
	}
}

func TestTextErrors(t *testing.T) {
	var buf bytes.Buffer
	s := NewText(&buf)
	if err := s.Send(Entry{Priority: Info, Message: "m", Fields: []Field{{"job", "1"}}}); err == nil || !strings.Contains(err.Error(), `"job"`) {
		t.Errorf("invalid field name: Send = %v", err)
	}
	if err := s.Send(Entry{Message: "m"}); err == nil || !strings.Contains(err.Error(), "invalid priority 0") {
		t.Errorf("zero priority: Send = %v", err)
	}
	if buf.Len() != 0 {
		t.Errorf("invalid entries wrote %q", buf.String())
	}
	failing := NewText(failWriter{})
	if err := failing.Send(Entry{Priority: Info, Message: "m"}); err == nil || !strings.HasPrefix(err.Error(), "journal: send: ") {
		t.Errorf("failing writer: Send = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if err := s.Send(Entry{Priority: Info, Message: "m"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close = %v, want ErrClosed", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// writes records every Write call separately.
type writes struct {
	mu    sync.Mutex
	calls []string
}

func (w *writes) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, string(b))
	return len(b), nil
}

func TestTextConcurrent(t *testing.T) {
	w := &writes{}
	s := NewText(w)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				if err := s.Send(Entry{Priority: Info, Message: fmt.Sprintf("entry %d.%d\nsecond line", i, j)}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if len(w.calls) != 400 {
		t.Fatalf("%d writes, want one per entry (400)", len(w.calls))
	}
	for _, c := range w.calls {
		if !strings.HasPrefix(c, "info: entry ") || !strings.HasSuffix(c, "\n      second line\n") {
			t.Fatalf("write %q is not one whole entry", c)
		}
	}
}
