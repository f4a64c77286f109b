package config

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/query"
	"github.com/mpiprobe/mpiprobe/internal/text"
	"github.com/mpiprobe/mpiprobe/thresholds"
)

// DefaultPath is where the node-wide agent reads its configuration.
const DefaultPath = "/etc/mpiprobe/config.conf"

// MaxLine is the longest line, in bytes, that [Parse] accepts.
const MaxLine = 64 * 1024

// The limits of the agent keys.
const (
	// MinInterval and MaxInterval bound the interval key.
	MinInterval = 100 * time.Millisecond
	MaxInterval = time.Minute
	// MinRetentionAge is the shortest retention.age.
	MinRetentionAge = time.Minute
	// BPFRoot is the BPF file system; pin_dir must be below it.
	BPFRoot = "/sys/fs/bpf"
)

// Config is the parsed configuration file. [Default] gives the values of
// keys the file does not set.
type Config struct {
	// Thresholds are the C/T overrides of the file: C, T and
	// threshold.EVENT. Unset parts are nil, leaving the catalog's values.
	Thresholds thresholds.Overrides
	// Events are the probe levels to enable ("default", "retries", or the
	// single level "all"); nil when not set, which means the "default"
	// level.
	Events []string
	// LibraryPaths are absolute paths of files or directories searched for
	// MPI libraries in addition to those ldconfig knows; nil when not set.
	LibraryPaths []string
	// DebugDirs are absolute directories searched, before /usr/lib/debug,
	// for the separate debug file of an MPI library whose struct layout
	// mpiprobe does not know (<dir>/.build-id/ab/cdef….debug); nil when not
	// set.
	DebugDirs []string
	// MetricsAddr is the host:port the agent serves metrics on; "" means
	// off.
	MetricsAddr string
	// StateDir is the absolute path of the agent's state directory.
	StateDir string
	// SharedDir is the absolute path of a directory the nodes share, where
	// the agent writes its node's part of each job; "" when not set.
	SharedDir string
	// RetentionJobs is how many job summaries the agent keeps (1 or more).
	RetentionJobs int
	// RetentionAge is how long the agent keeps job summaries (1m or more).
	RetentionAge time.Duration
	// Interval is the time between two reads of the counters
	// ([MinInterval] to [MaxInterval]).
	Interval time.Duration
	// PinDir is the absolute directory below [BPFRoot] where the agent pins
	// its BPF objects.
	PinDir string
	// MetricsTTL is how long finished jobs stay in the metrics (0 or more).
	MetricsTTL time.Duration
	// Scope is which processes of the node mpiprobe watches: "host" (all)
	// or "netns" (those of its own network namespace).
	Scope string
	// QuerySocket is the unix socket where the agent answers users'
	// status (package query); "" means off.
	QuerySocket string
	// Lines maps each key set in the file to its line number (callers use
	// it to let the command line win and to name the line in later errors).
	// Per-event keys appear in full, e.g. "threshold.ob1.send_pending.new".
	Lines map[string]int
}

// Options tell [Parse] what the probe catalog knows.
type Options struct {
	// KnownEvent reports whether an event id exists in the catalog; nil
	// accepts any syntactically valid id. An unknown event in
	// threshold.EVENT is an error at its line:
	// `key "threshold.x": unknown event "x" (mpiprobe -h lists them)`.
	KnownEvent func(id string) bool
	// Levels are the probe levels the catalog knows (e.g. default,
	// retries); the events key accepts them and "all". Nil accepts any
	// level name made of lowercase letters, digits, '_' and '-'.
	Levels []string
}

// Default returns the configuration of an empty file: no threshold
// overrides, Events and LibraryPaths nil, and the documented defaults of the
// other keys. Lines is empty but not nil.
func Default() Config {
	return Config{
		MetricsAddr:   "127.0.0.1:9767",
		StateDir:      "/var/lib/mpiprobe",
		RetentionJobs: 1000,
		RetentionAge:  30 * 24 * time.Hour,
		Interval:      time.Second,
		PinDir:        BPFRoot + "/mpiprobe/agent",
		MetricsTTL:    10 * time.Minute,
		Scope:         procfs.ScopeHost,
		QuerySocket:   query.DefaultPath,
		Lines:         map[string]int{},
	}
}

// Load reads the configuration file at path with [Parse]. A file that
// cannot be opened, is missing or is a directory is an error of the form
//
//	config PATH: cannot read: PROBLEM (FIX)
//
// which wraps the system error, so errors.Is(err, fs.ErrNotExist) tells a
// missing file.
func Load(path string, opt Options) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, readError(path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return Config{}, readError(path, syscall.EISDIR)
	}
	return Parse(f, path, opt)
}

// Parse reads a configuration file in the format described in the package
// documentation, starting from [Default]. name is the file's name, used in
// error messages. Every error is a single line of the form
//
//	config NAME:LINE: key "KEY": PROBLEM (FIX)
//
// or, for lines that are not a setting, without `key "KEY": `. Errors of
// the reader give `config NAME: cannot read: PROBLEM (FIX)` and wrap the
// reader's error.
func Parse(r io.Reader, name string, opt Options) (Config, error) {
	c := Default()
	display := text.Quote(name)

	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLine+len("\r\n")) // a longest line and its end
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		at := func(format string, args ...any) error {
			return fmt.Errorf("config %s:%d: "+format, append([]any{display, lineNo}, args...)...)
		}
		if len(line) > MaxLine {
			return Config{}, at("line is longer than %d bytes (shorten it)", MaxLine)
		}
		if lineNo == 1 {
			line = strings.TrimPrefix(line, "\uFEFF")
		}
		if !utf8.ValidString(line) {
			return Config{}, at("line is not valid UTF-8 (save the file as UTF-8)")
		}
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return Config{}, at("%s is not a \"key = value\" setting (use e.g. T = 10s)", text.Echo(line))
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if key == "" {
			return Config{}, at("missing key before \"=\" (use e.g. T = 10s)")
		}
		bad := func(err error) error {
			return at("key %s: %s", text.Echo(key), err)
		}

		var example string
		var set func(*Config, string) error
		if event, ok := strings.CutPrefix(key, thresholdPrefix); ok {
			if err := thresholds.CheckEvent(event, thresholdHelp); err != nil {
				return Config{}, bad(err)
			}
			if opt.KnownEvent != nil && !opt.KnownEvent(event) {
				return Config{}, bad(fmt.Errorf("unknown event %s (mpiprobe -h lists them)", text.Echo(event)))
			}
			example = key + " = 500/10s"
			set = func(c *Config, value string) error {
				p, err := thresholds.ParsePartial(value, "use C/T, e.g. 500/10s, 500/ or /30s")
				if err != nil {
					return err
				}
				if c.Thresholds.Events == nil {
					c.Thresholds.Events = make(map[string]thresholds.Partial)
				}
				c.Thresholds.Events[event] = p
				return nil
			}
		} else if k := lookup(key); k != nil {
			example = k.name + " = " + k.example
			set = func(c *Config, value string) error { return k.set(c, value, opt) }
		} else {
			return Config{}, at("unknown key %s (%s)", text.Echo(key), suggest(key, opt))
		}
		if prev, dup := c.Lines[key]; dup {
			return Config{}, at("key %s repeats line %d (keep only one of them)", text.Echo(key), prev)
		}
		c.Lines[key] = lineNo
		if value == "" {
			return Config{}, bad(fmt.Errorf("missing value (use e.g. %s)", example))
		}
		if err := set(&c, value); err != nil {
			return Config{}, bad(err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Config{}, fmt.Errorf("config %s:%d: line is longer than %d bytes (shorten it)",
				display, lineNo+1, MaxLine)
		}
		return Config{}, readError(name, err)
	}
	return c, nil
}

// readError renders an error opening or reading the file name as
// "config NAME: cannot read: PROBLEM (FIX)", wrapping err.
func readError(name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is already in the message
	}
	fix := "check the file and its permissions"
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fix = "create it or give the path of another file"
	case errors.Is(err, fs.ErrPermission):
		fix = "run as root or make the file readable"
	case errors.Is(err, syscall.EISDIR):
		fix = "give the path of a file, not a directory"
	}
	msg := strings.Join(strings.Fields(err.Error()), " ") // one line
	return &readErr{text: fmt.Sprintf("config %s: cannot read: %s (%s)", text.Quote(name), msg, fix), err: err}
}

// readErr is a read error with a one-line message that wraps the cause.
type readErr struct {
	text string
	err  error
}

func (e *readErr) Error() string { return e.text }
func (e *readErr) Unwrap() error { return e.err }
