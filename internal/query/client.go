package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// errNoAgent is the cause when no agent answers at the socket.
var errNoAgent = errors.New("no agent answers")

// NoAgentError says no agent answers at Path.
type NoAgentError struct {
	Path string
	Err  error
}

func (e *NoAgentError) Error() string {
	return fmt.Sprintf("status needs root (BPF, reading the ranks' registers) or a running agent to ask, and no agent answers at %s (%v): start it (sudo systemctl start mpiprobe) or run sudo mpiprobe status", e.Path, e.Err)
}

func (e *NoAgentError) Unwrap() error { return errNoAgent }

// IsNoAgent reports whether err says no agent answers.
func IsNoAgent(err error) bool { return errors.Is(err, errNoAgent) }

// Ask sends req to the agent at path and returns its answer's document.
// An error of the agent (a pid that is not the caller's, busy) is
// returned as its one line.
func Ask(ctx context.Context, path string, req Request) ([]byte, error) {
	req.Version = Version
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ECONNREFUSED) {
			return nil, &NoAgentError{Path: path, Err: unwrapSyscall(err)}
		}
		return nil, fmt.Errorf("ask the agent at %s: %w", path, err)
	}
	defer c.Close()
	deadline := time.Now().Add(req.Window + req.MinWait + answerMargin + BusyWait + readTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = c.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	// A busy agent answers without reading: its answer is read even when
	// the request could not be written.
	werr := writeJSON(c, req)
	_ = c.(*net.UnixConn).CloseWrite()
	data, err := io.ReadAll(io.LimitReader(c, MaxResponse+1))
	if len(data) == 0 && werr != nil {
		err = werr
	}
	if err != nil {
		return nil, fmt.Errorf("ask the agent at %s: %w", path, err)
	}
	if len(data) > MaxResponse {
		return nil, fmt.Errorf("the agent at %s answered more than %d bytes", path, MaxResponse)
	}
	var resp Response
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, fmt.Errorf("the agent at %s answered no JSON (%v): is it an mpiprobe agent of this version?", path, err)
	}
	if resp.Version != Version {
		return nil, fmt.Errorf("the agent at %s speaks protocol version %d, this mpiprobe %d: use the agent's mpiprobe", path, resp.Version, Version)
	}
	if resp.Error != "" {
		return nil, errors.New(resp.Error)
	}
	return []byte(resp.Output), nil
}

// unwrapSyscall returns the errno inside a dial error.
func unwrapSyscall(err error) error {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}
