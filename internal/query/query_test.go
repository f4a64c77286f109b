package query

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

func TestParseRequest(t *testing.T) {
	ok := `{"version":1,"command":"status","pids":[42],"window_ns":1000000000,"format":"json"}`
	if r, err := ParseRequest([]byte(ok)); err != nil || r.PIDs[0] != 42 || r.Window != time.Second || r.Format != FormatJSON {
		t.Fatalf("ParseRequest(%s) = %+v, %v", ok, r, err)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"version":2,"command":"status","pids":[1],"window_ns":1,"format":"json"}`, "protocol version 2"},
		{`{"version":1,"command":"kill","pids":[1],"window_ns":1,"format":"json"}`, `unknown command "kill"`},
		{`{"version":1,"command":"status","window_ns":1,"format":"json"}`, "no target"},
		{`{"version":1,"command":"status","pids":[1],"job":"j","window_ns":1,"format":"json"}`, "both given"},
		{`{"version":1,"command":"status","pids":[0],"window_ns":1,"format":"json"}`, "pid 0"},
		{`{"version":1,"command":"status","pids":[1],"window_ns":0,"format":"json"}`, "window 0s"},
		{`{"version":1,"command":"status","pids":[1],"window_ns":1,"min_wait_ns":-1,"format":"json"}`, "min-wait"},
		{`{"version":1,"command":"status","pids":[1],"window_ns":6000000000000,"format":"json"}`, "at most 10m0s"},
		{`{"version":1,"command":"status","pids":[1],"window_ns":1,"format":"xml"}`, `format "xml"`},
		{`{"version":1,"command":"status","pids":[1],"window_ns":1,"format":"json","uid":0}`, "unknown field"},
		{`{"version":1,"command":"status","pids":[1],"window_ns":1,"format":"json"}{}`, "one request per connection"},
		{`{"version":1,"command":"status","job":"` + strings.Repeat("j", 300) + `","window_ns":1,"format":"json"}`, "longer than 256"},
		{`[1]`, "not this protocol's JSON"},
		{`{"version":1,"command":"status","pids":[` + strings.Repeat("1,", MaxRequest/2) + `1]}`, "longer than 65536 bytes"},
	} {
		_, err := ParseRequest([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseRequest(%.80s) = %v, want one line with %q", tc.in, err, tc.want)
		}
	}
}

// FuzzParseRequest: any bytes from any local user give a checked request
// or a one-line error, never a panic.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"version":1,"command":"status","pids":[42],"window_ns":1000000000,"format":"json"}`))
	f.Add([]byte(`{"version":1,"command":"status","job":"4242.0","window_ns":1,"min_wait_ns":5,"format":"node_facts","verbose":true}`))
	f.Add([]byte(`{"version":1,"pids":[-1,1e30]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRequest(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %q", err)
			}
			return
		}
		if r.Check() != nil || r.Window <= 0 || (len(r.PIDs) == 0) == (r.Job == "") {
			t.Fatalf("accepted %+v", r)
		}
		for _, p := range r.PIDs {
			if p <= 0 {
				t.Fatalf("accepted pid %d", p)
			}
		}
	})
}

// fakeStatus writes a /proc/PID/status with real uid uid.
func fakeStatus(t *testing.T, root string, pid, uid int) {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprint(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("Name:\tring\nUid:\t%d\t0\t%d\t%d\n", uid, uid, uid)
	if err := os.WriteFile(filepath.Join(dir, "status"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOwns: a user sees their processes only (by real uid), root all.
func TestOwns(t *testing.T) {
	root := t.TempDir()
	fakeStatus(t, root, 10, 1000)
	fakeStatus(t, root, 11, 1001)
	pfs := procfs.FS{Root: root}
	if err := Owns(pfs, 1000)(10); err != nil {
		t.Errorf("uid 1000, its pid 10: %v", err)
	}
	err := Owns(pfs, 1000)(11)
	if err == nil || !strings.Contains(err.Error(), "pid 11 is not yours: it is owned by uid 1001, you are uid 1000") {
		t.Errorf("uid 1000, pid 11 of uid 1001: %v", err)
	}
	if err := Owns(pfs, 1000)(12); err == nil || !strings.Contains(err.Error(), "no such process") {
		t.Errorf("uid 1000, no pid 12: %v", err)
	}
	for _, pid := range []int{10, 11, 12} {
		if err := Owns(pfs, 0)(pid); err != nil {
			t.Errorf("root, pid %d: %v", pid, err)
		}
	}
}

// serve starts a server with h on a socket in a temporary directory.
func serve(t *testing.T, s *Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "q", "query.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return path
}

// TestServer: a request goes through the socket to the handler with the
// caller's credentials, the document comes back; errors come back as
// their line; the socket is 0666.
func TestServer(t *testing.T) {
	s := NewServer(func(_ context.Context, req Request, p Peer) ([]byte, error) {
		if req.Job == "bad" {
			return nil, errors.New("job bad: no such job")
		}
		return fmt.Appendf(nil, "uid %d pid %d job %s", p.UID, p.PID, req.Job), nil
	}, nil)
	path := serve(t, s)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o666 {
		t.Fatalf("socket mode: %v %v", fi.Mode(), err)
	}
	req := Request{Command: CommandStatus, Job: "j1", Window: time.Millisecond, Format: FormatTable}
	out, err := Ask(context.Background(), path, req)
	want := fmt.Sprintf("uid %d pid %d job j1", os.Getuid(), os.Getpid())
	if err != nil || string(out) != want {
		t.Fatalf("Ask = %q, %v; want %q", out, err, want)
	}
	req.Job = "bad"
	if _, err := Ask(context.Background(), path, req); err == nil || err.Error() != "job bad: no such job" {
		t.Errorf("Ask bad = %v", err)
	}
	req.Format = "xml"
	if _, err := Ask(context.Background(), path, req); err == nil || !strings.Contains(err.Error(), `format "xml"`) {
		t.Errorf("Ask xml = %v", err)
	}
	// A second agent on the same path is refused.
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "another agent answers there") {
		t.Errorf("second Listen = %v", err)
	}
}

// TestServerBusy: one status at a time; a caller that waits longer than
// Wait is told to retry.
func TestServerBusy(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	s := NewServer(func(ctx context.Context, _ Request, _ Peer) ([]byte, error) {
		started <- struct{}{}
		<-release
		return []byte("done"), nil
	}, nil)
	s.Wait = 200 * time.Millisecond
	path := serve(t, s)
	req := Request{Command: CommandStatus, PIDs: []int{1}, Window: time.Millisecond, Format: FormatJSON}
	var wg sync.WaitGroup
	wg.Add(1)
	var first []byte
	var firstErr error
	go func() { defer wg.Done(); first, firstErr = Ask(context.Background(), path, req) }()
	<-started
	_, err := Ask(context.Background(), path, req)
	if err == nil || !strings.Contains(err.Error(), "retry in a few seconds") {
		t.Errorf("second caller: %v, want busy", err)
	}
	close(release)
	wg.Wait()
	if firstErr != nil || string(first) != "done" {
		t.Errorf("first caller: %q, %v", first, firstErr)
	}
}

// TestAskNoAgent: no socket gives the one line naming the path and how to
// start the agent.
func TestAskNoAgent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.sock")
	_, err := Ask(context.Background(), path, Request{Command: CommandStatus, PIDs: []int{1}, Window: time.Second, Format: FormatJSON})
	if !IsNoAgent(err) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "systemctl start mpiprobe") {
		t.Errorf("Ask without agent = %v", err)
	}
}

// TestServerTooMany: connections beyond MaxConns are told at once that
// the agent is busy, while the held ones still get their answer.
func TestServerTooMany(t *testing.T) {
	release := make(chan struct{})
	s := NewServer(func(ctx context.Context, _ Request, _ Peer) ([]byte, error) {
		<-release
		return []byte("done"), nil
	}, nil)
	s.Wait = time.Minute
	path := serve(t, s)
	// MaxConns connections that send nothing yet hold every slot.
	var held []net.Conn
	for range MaxConns {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(s.conns) < MaxConns && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	req := Request{Command: CommandStatus, PIDs: []int{1}, Window: time.Millisecond, Format: FormatJSON}
	_, err := Ask(context.Background(), path, req)
	if err == nil || !strings.Contains(err.Error(), "holds 64 requests already: retry") {
		t.Errorf("caller beyond %d: %v, want busy", MaxConns, err)
	}
	close(release)
	for _, c := range held {
		c.Close()
	}
}
