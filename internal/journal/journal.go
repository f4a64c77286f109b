package journal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DefaultSocket is the journal's native protocol socket.
const DefaultSocket = "/run/systemd/journal/socket"

// DefaultIdentifier is the SYSLOG_IDENTIFIER of entries when none is given.
const DefaultIdentifier = "mpiprobe"

// Priority is a syslog level, sent as the journal's PRIORITY field.
type Priority int

// The syslog levels an entry may have. Emergency, alert and critical (0-2)
// are deliberately absent: a zero Priority is rejected rather than sent as
// an emergency that journald would broadcast to every terminal.
const (
	Err     Priority = 3
	Warning Priority = 4
	Notice  Priority = 5
	Info    Priority = 6
	Debug   Priority = 7
)

// String returns the word the text sink writes before a message: "error",
// "warning", "notice", "info" or "debug", and "priority(N)" for any other
// value.
func (p Priority) String() string {
	switch p {
	case Err:
		return "error"
	case Warning:
		return "warning"
	case Notice:
		return "notice"
	case Info:
		return "info"
	case Debug:
		return "debug"
	}
	return "priority(" + strconv.Itoa(int(p)) + ")"
}

// Field is one extra journal field of an entry.
//
// Name must be a valid journal field name: only A-Z, 0-9 and '_', not
// starting with '_' (those are the fields journald itself adds) or a digit,
// 1 to 64 bytes long, and not one of MESSAGE, PRIORITY or
// SYSLOG_IDENTIFIER, which come from [Entry] and [Options]. Value is
// arbitrary bytes and may be empty.
type Field struct {
	Name, Value string
}

// Entry is one log entry: a warning or a per-job summary.
type Entry struct {
	// Priority must be one of Err, Warning, Notice, Info and Debug.
	Priority Priority
	// Message is the human-readable text (MESSAGE); it may span lines.
	Message string
	// Fields are sent to the journal after MESSAGE, PRIORITY and
	// SYSLOG_IDENTIFIER, in this order; the same name may repeat.
	Fields []Field
}

// Sink receives entries. Its methods are safe for concurrent use.
type Sink interface {
	// Send writes one entry. An entry with an invalid priority or field
	// name is an error and nothing is written, whichever the sink.
	Send(Entry) error
	// Close releases the sink; Send then fails with ErrClosed. Closing the
	// text sink does not close its writer. Close may be called more than
	// once.
	Close() error
}

// ErrClosed is returned (wrapped) by Send after Close.
var ErrClosed = errors.New("journal: sink closed")

// Options configures Open. The zero value is the real environment.
type Options struct {
	// Socket is the journal's socket; default DefaultSocket.
	Socket string
	// Stderr receives the text sink's lines; default os.Stderr.
	Stderr io.Writer
	// Env looks up environment variables; default os.Getenv.
	Env func(string) string
	// StderrStat returns the device and inode of the process's stderr;
	// default fstat of file descriptor 2.
	StderrStat func() (dev, ino uint64, err error)
	// Identifier is the SYSLOG_IDENTIFIER of journal entries; default
	// DefaultIdentifier.
	Identifier string
}

// Open returns the native sink when stderr is connected to the journal (see
// UnderJournal) and the text sink writing to opts.Stderr otherwise,
// including when stderr cannot be examined. An error means the process is
// under the journal but its socket cannot be used; stderr still reaches
// the journal then, so NewText(os.Stderr) is a working fallback.
func Open(opts Options) (Sink, error) {
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Env == nil {
		opts.Env = os.Getenv
	}
	if opts.StderrStat == nil {
		opts.StderrStat = stderrStat
	}
	dev, ino, err := opts.StderrStat()
	if err == nil && UnderJournal(opts.Env, dev, ino) {
		return NewNative(opts.Socket, opts.Identifier)
	}
	return NewText(opts.Stderr), nil
}

// UnderJournal reports whether the JOURNAL_STREAM variable that env returns
// is two decimal numbers "DEV:INODE" equal to dev and ino, the device and
// inode of stderr: then stderr is the stream systemd connected to the
// journal. A nil env, an unset, empty or malformed variable (signs, spaces,
// hex, missing or extra parts, overflow) is false.
func UnderJournal(env func(string) string, dev, ino uint64) bool {
	if env == nil {
		return false
	}
	d, i, ok := strings.Cut(env("JOURNAL_STREAM"), ":")
	if !ok {
		return false
	}
	jd, err := strconv.ParseUint(d, 10, 64)
	if err != nil {
		return false
	}
	ji, err := strconv.ParseUint(i, 10, 64)
	if err != nil {
		return false
	}
	return jd == dev && ji == ino
}

func stderrStat() (dev, ino uint64, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(2, &st); err != nil {
		return 0, 0, fmt.Errorf("journal: fstat stderr: %w", err)
	}
	return uint64(st.Dev), uint64(st.Ino), nil
}

// validate checks what both sinks refuse.
func validate(e Entry) error {
	if e.Priority < Err || e.Priority > Debug {
		return fmt.Errorf("journal: invalid priority %d (want %d to %d)", int(e.Priority), int(Err), int(Debug))
	}
	for _, f := range e.Fields {
		if err := checkName(f.Name); err != nil {
			return err
		}
	}
	return nil
}

// checkName enforces journald's rule for field names clients may send.
func checkName(name string) error {
	switch name {
	case "MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER":
		return fmt.Errorf("journal: field %s is reserved (set by Entry and Options)", name)
	}
	if name == "" || len(name) > 64 || name[0] == '_' || (name[0] >= '0' && name[0] <= '9') {
		return fmt.Errorf("journal: invalid field name %q: want 1-64 of A-Z, 0-9, _ not starting with _ or a digit", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return fmt.Errorf("journal: invalid field name %q: want 1-64 of A-Z, 0-9, _ not starting with _ or a digit", name)
		}
	}
	return nil
}
