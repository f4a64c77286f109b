package thresholds

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxConfigLine is the longest line, in bytes, that [ParseConfig] accepts.
const MaxConfigLine = 64 * 1024

const thresholdPrefix = "threshold."

// ParseConfig reads a config file in the format described in the package
// documentation and returns the Overrides it sets. name is the file's name,
// used in error messages. Every error is a single line of the form
//
//	config NAME:LINE: key "KEY": PROBLEM (FIX)
//
// except read errors, which wrap the reader's error.
func ParseConfig(r io.Reader, name string) (Overrides, error) {
	var o Overrides
	seen := make(map[string]int) // key -> line it was set on

	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxConfigLine)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if lineNo == 1 {
			line = strings.TrimPrefix(line, "\uFEFF")
		}
		at := func(format string, args ...any) error {
			return fmt.Errorf("config %s:%d: "+format, append([]any{name, lineNo}, args...)...)
		}
		if !utf8.ValidString(line) {
			return Overrides{}, at("line is not valid UTF-8 (save the file as UTF-8)")
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
			return Overrides{}, at("%s is not a \"key = value\" setting (use e.g. T = 10s)", quote(line))
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if key == "" {
			return Overrides{}, at("missing key before \"=\" (use e.g. T = 10s)")
		}
		bad := func(format string, args ...any) error {
			return at("key %s: "+format, append([]any{quote(key)}, args...)...)
		}

		var example string
		switch {
		case key == "C":
			example = "C = 1000"
		case key == "T":
			example = "T = 10s"
		case strings.HasPrefix(key, thresholdPrefix):
			err := checkEvent(key[len(thresholdPrefix):],
				"use threshold.EVENT = C/T, e.g. threshold.ob1.send_pending.new = 500/10s")
			if err != nil {
				return Overrides{}, bad("%s", err)
			}
			example = key + " = 500/10s"
		case key == "c" || key == "t":
			return Overrides{}, at("unknown key %s (keys are case-sensitive: use %s)",
				quote(key), strconv.Quote(strings.ToUpper(key)))
		default:
			return Overrides{}, at("unknown key %s (use C, T or threshold.EVENT)", quote(key))
		}
		if prev, dup := seen[key]; dup {
			return Overrides{}, at("key %s repeats line %d (keep only one of them)", quote(key), prev)
		}
		seen[key] = lineNo
		if value == "" {
			return Overrides{}, bad("missing value (use e.g. %s)", example)
		}

		switch key {
		case "C":
			c, err := ParseC(value)
			if err != nil {
				return Overrides{}, bad("%s", err)
			}
			o.C = &c
		case "T":
			t, err := ParseT(value)
			if err != nil {
				return Overrides{}, bad("%s", err)
			}
			o.T = &t
		default:
			p, err := parsePartial(value, "use C/T, e.g. 500/10s, 500/ or /30s")
			if err != nil {
				return Overrides{}, bad("%s", err)
			}
			if o.Events == nil {
				o.Events = make(map[string]Partial)
			}
			o.Events[key[len(thresholdPrefix):]] = p
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Overrides{}, fmt.Errorf("config %s:%d: line is longer than %d bytes (shorten it)",
				name, lineNo+1, MaxConfigLine)
		}
		return Overrides{}, fmt.Errorf("config %s: %w", name, err)
	}
	return o, nil
}
