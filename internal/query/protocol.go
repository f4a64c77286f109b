package query

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"
)

// Version is the protocol's version; a request of another version is
// refused with an answer that names both.
const Version = 1

// Limits of the protocol.
const (
	// MaxRequest bounds a request: a few pids and flags.
	MaxRequest = 64 << 10
	// MaxResponse bounds an answer: a status of thousands of ranks with
	// their stacks.
	MaxResponse = 64 << 20
	// MaxPIDs bounds the pids of a request.
	MaxPIDs = 4096
	// MaxWindow bounds a request's window and min-wait.
	MaxWindow = 10 * time.Minute
	maxJob    = 256
)

// Command names what a request asks for.
const CommandStatus = "status"

// Formats of the answer: what `mpiprobe status` prints.
const (
	FormatTable     = "table"
	FormatJSON      = "json"
	FormatNodeFacts = "node_facts"
)

// Request is what a caller asks: the status flags that select and watch
// ranks, and the format to print.
type Request struct {
	Version int    `json:"version"`
	Command string `json:"command"`
	PIDs    []int  `json:"pids,omitempty"`
	Job     string `json:"job,omitempty"`
	// Window and MinWait are in nanoseconds.
	Window  time.Duration `json:"window_ns"`
	MinWait time.Duration `json:"min_wait_ns,omitempty"`
	Format  string        `json:"format"`
	Verbose bool          `json:"verbose,omitempty"`
}

// Response is the agent's answer: Output is the document status prints,
// or Error a one-line message; Busy says the agent was answering another
// caller (Error says to retry).
type Response struct {
	Version int    `json:"version"`
	Output  string `json:"output,omitempty"`
	Error   string `json:"error,omitempty"`
	Busy    bool   `json:"busy,omitempty"`
}

// ReadRequest reads and checks one request of at most MaxRequest bytes:
// it comes from any local user.
func ReadRequest(r io.Reader) (Request, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxRequest+1))
	if err != nil {
		return Request{}, fmt.Errorf("read request: %w", err)
	}
	return ParseRequest(data)
}

// ParseRequest decodes and checks a request.
func ParseRequest(data []byte) (Request, error) {
	if len(data) > MaxRequest {
		return Request{}, fmt.Errorf("request longer than %d bytes: give fewer pids", MaxRequest)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var req Request
	if err := dec.Decode(&req); err != nil {
		return Request{}, fmt.Errorf("request is not this protocol's JSON (%v): use an mpiprobe of the agent's version", err)
	}
	if dec.More() {
		return Request{}, errors.New("request has data after its JSON object: send one request per connection")
	}
	return req, req.Check()
}

// Check checks a request's fields.
func (r Request) Check() error {
	switch {
	case r.Version != Version:
		return fmt.Errorf("request of protocol version %d, the agent speaks %d: use an mpiprobe of the agent's version", r.Version, Version)
	case r.Command != CommandStatus:
		return fmt.Errorf("unknown command %q: the agent answers %q", clip(r.Command), CommandStatus)
	case len(r.PIDs) == 0 && r.Job == "":
		return errors.New("no target: give -p PID or --job JOBID")
	case len(r.PIDs) > 0 && r.Job != "":
		return errors.New("-p and --job both given: give one of them")
	case len(r.PIDs) > MaxPIDs:
		return fmt.Errorf("%d pids: give at most %d", len(r.PIDs), MaxPIDs)
	case len(r.Job) > maxJob || !utf8.ValidString(r.Job):
		return fmt.Errorf("job id longer than %d bytes or not UTF-8: give the id mpiprobe ps shows", maxJob)
	case r.Window <= 0 || r.Window > MaxWindow:
		return fmt.Errorf("window %s: give a duration above 0 and at most %s", r.Window, MaxWindow)
	case r.MinWait < 0 || r.MinWait > MaxWindow:
		return fmt.Errorf("min-wait %s: give 0 (the window) or a duration up to %s", r.MinWait, MaxWindow)
	}
	for _, pid := range r.PIDs {
		if pid <= 0 {
			return fmt.Errorf("pid %d: give a process id above 0", pid)
		}
	}
	switch r.Format {
	case FormatTable, FormatJSON, FormatNodeFacts:
		return nil
	}
	return fmt.Errorf("format %q: give %s, %s or %s", clip(r.Format), FormatTable, FormatJSON, FormatNodeFacts)
}

// clip shortens untrusted text quoted in an error.
func clip(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// writeJSON writes v as one JSON document.
func writeJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}
