package query

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultPath is where the agent listens by default.
const DefaultPath = "/run/mpiprobe/query.sock"

// Off is the setting that turns the socket off (so does "").
const Off = "off"

// BusyWait is how long a caller waits for another caller's status to end
// before it is told the agent is busy.
const BusyWait = 10 * time.Second

// readTimeout bounds how long a caller may take to send its request;
// answerMargin is what an answer may take beyond the request's window.
const (
	readTimeout  = 5 * time.Second
	answerMargin = 60 * time.Second
)

// Peer is the caller, as the kernel saw it connect.
type Peer struct {
	UID, PID int
}

// Handler answers a checked request for peer: the document to send, or
// a one-line error.
type Handler func(ctx context.Context, req Request, peer Peer) ([]byte, error)

// Server answers requests on a listener, one status at a time.
type Server struct {
	Handle Handler
	Log    *slog.Logger
	// Wait is how long a caller waits for another's status (BusyWait).
	Wait time.Duration
	// one holds the right to run a status; conns bounds the connections
	// being answered or waiting (MaxConns).
	one, conns chan struct{}
}

// MaxConns bounds the connections the server holds at once: one runs a
// status, the others wait for it (BusyWait); a connection beyond them is
// told at once that the agent is busy.
const MaxConns = 64

// NewServer returns a server that answers with h.
func NewServer(h Handler, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{Handle: h, Log: log, Wait: BusyWait, one: make(chan struct{}, 1), conns: make(chan struct{}, MaxConns)}
}

// Listen listens on path, a unix socket any local user may connect to
// (mode 0666). A socket file left by an agent that is gone is replaced;
// any other file at path is an error.
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("query socket %s: %w", path, err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("query socket %s: a file that is not a socket is there: remove it or give another path (--query-socket)", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("query socket %s: another agent answers there: stop it (systemctl stop mpiprobe) or give another path (--query-socket)", path)
		}
		_ = os.Remove(path)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("query socket %s: %w", path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("query socket %s: %w", path, err)
	}
	return ln, nil
}

// Serve answers connections until ctx ends, then closes ln and waits for
// the answers under way.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			return fmt.Errorf("query socket: %w", err)
		}
		select {
		case s.conns <- struct{}{}:
		default:
			// Too many callers: told at once, and the request drained
			// for a second at most (closing on unread data would reset
			// the connection before the caller reads the answer).
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(time.Second))
				_ = writeJSON(c, Response{Version: Version, Busy: true, Error: fmt.Sprintf("the agent holds %d requests already: retry in a few seconds", MaxConns)})
				_, _ = io.Copy(io.Discard, io.LimitReader(c, MaxRequest))
			}()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-s.conns }()
			defer c.Close()
			s.answer(ctx, c.(*net.UnixConn))
		}()
	}
}

// answer reads one request from c and writes its answer.
func (s *Server) answer(ctx context.Context, c *net.UnixConn) {
	resp := s.respond(ctx, c)
	resp.Version = Version
	_ = c.SetWriteDeadline(time.Now().Add(answerMargin))
	if err := writeJSON(c, resp); err != nil {
		s.Log.Debug("query answer", "err", err)
	}
}

func (s *Server) respond(ctx context.Context, c *net.UnixConn) Response {
	peer, err := PeerOf(c)
	if err != nil {
		return Response{Error: err.Error()}
	}
	_ = c.SetReadDeadline(time.Now().Add(readTimeout))
	req, err := ReadRequest(c)
	if err != nil {
		return Response{Error: err.Error()}
	}
	wait := time.NewTimer(s.Wait)
	defer wait.Stop()
	select {
	case s.one <- struct{}{}:
		defer func() { <-s.one }()
	case <-wait.C:
		return Response{Busy: true, Error: fmt.Sprintf("the agent is answering another status for over %s: retry in a few seconds", s.Wait)}
	case <-ctx.Done():
		return Response{Error: "the agent is stopping: retry once it runs again (systemctl status mpiprobe)"}
	}
	ctx, cancel := context.WithTimeout(ctx, req.Window+req.MinWait+answerMargin)
	defer cancel()
	s.Log.Info("query", "uid", peer.UID, "pid", peer.PID, "pids", req.PIDs, "job", req.Job)
	out, err := s.Handle(ctx, req, peer)
	if err != nil {
		return Response{Error: err.Error()}
	}
	if len(out) > MaxResponse-1024 {
		return Response{Error: fmt.Sprintf("the answer is longer than %d bytes: ask for fewer ranks", MaxResponse)}
	}
	return Response{Output: string(out)}
}

// PeerOf returns who is at the other end of c (SO_PEERCRED).
func PeerOf(c *net.UnixConn) (Peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Peer{}, fmt.Errorf("query socket: %w", err)
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, fmt.Errorf("query socket: %w", err)
	}
	if cerr != nil {
		return Peer{}, fmt.Errorf("query socket: who is calling (SO_PEERCRED): %w", cerr)
	}
	return Peer{UID: int(cred.Uid), PID: int(cred.Pid)}, nil
}
