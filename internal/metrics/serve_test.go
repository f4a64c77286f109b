package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/metrics"
)

func somePage() []metrics.Family {
	return []metrics.Family{
		gauge("mpiprobe_jobs_active", s(2)),
		counter("mpiprobe_events_total", s(5, "job", "b"), s(7, "job", "a\"")),
	}
}

func TestHandler(t *testing.T) {
	var want bytes.Buffer
	if err := metrics.Encode(&want, somePage(), 10); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	h := metrics.Handler(func() []metrics.Family { calls.Add(1); return somePage() }, 10, slog.New(slog.DiscardHandler))

	for _, method := range []string{http.MethodGet, http.MethodHead} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "/metrics", nil))
		res := rec.Result()
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d", method, res.StatusCode)
		}
		if ct := res.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", method, ct)
		}
		if cl := res.Header.Get("Content-Length"); cl != itoa(want.Len()) {
			t.Errorf("%s: Content-Length %q, want %d", method, cl, want.Len())
		}
		body := rec.Body.String()
		if method == http.MethodHead {
			if body != "" {
				t.Errorf("HEAD: body %q", body)
			}
		} else if body != want.String() {
			t.Errorf("GET: body\n%s\nwant\n%s", body, want.String())
		}
	}
	if calls.Load() != 2 {
		t.Errorf("collect called %d times for 2 scrapes", calls.Load())
	}

	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodOptions, "BREW"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "/metrics", strings.NewReader("x")))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s: status %d, want 405", method, rec.Code)
		}
		if allow := rec.Header().Get("Allow"); allow != "GET, HEAD" {
			t.Errorf("%s: Allow %q", method, allow)
		}
		if strings.Contains(rec.Body.String(), "# TYPE") {
			t.Errorf("%s: got the page", method)
		}
	}
	if calls.Load() != 2 {
		t.Errorf("collect called for a refused method")
	}
}

func TestHandlerEncodeError(t *testing.T) {
	var logBuf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logBuf, nil))
	bad := func() []metrics.Family {
		return []metrics.Family{
			gauge("a_fine_one", s(1)),
			gauge("mpiprobe_jobs", s(1, "job\n", "x"), s(2)),
		}
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	metrics.Handler(bad, 0, log).ServeHTTP(rec, req)
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("status %d, want 500", rec.Code)
	}
	body := rec.Body.String()
	wantBody := `metrics: cannot encode the metrics page (see the agent's log): metrics: family "mpiprobe_jobs": label "job\n": invalid label name (use [a-zA-Z_][a-zA-Z0-9_]*)` + "\n"
	if body != wantBody {
		t.Errorf("body\n%q\nwant\n%q", body, wantBody)
	}
	if strings.Count(body, "\n") != 1 || strings.Contains(body, "# TYPE") {
		t.Errorf("body is not one line without the page: %q", body)
	}
	if ct := rec.Header().Get("Content-Type"); strings.Contains(ct, "version=0.0.4") {
		t.Errorf("an error claims to be a metrics page: Content-Type %q", ct)
	}
	var entry map[string]any
	if err := json.Unmarshal(logBuf.Bytes(), &entry); err != nil {
		t.Fatalf("log %q: %v", logBuf.String(), err)
	}
	if entry["level"] != "ERROR" || entry["msg"] != "metrics: cannot encode the metrics page" ||
		!strings.Contains(entry["err"].(string), `family "mpiprobe_jobs": label "job\n"`) || entry["remote"] != req.RemoteAddr {
		t.Errorf("log entry %v", entry)
	}
	if strings.Count(logBuf.String(), "\n") != 1 {
		t.Errorf("want one log entry, got %q", logBuf.String())
	}
}

func TestHandlerNilLogger(t *testing.T) {
	var logBuf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logBuf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	rec := httptest.NewRecorder()
	metrics.Handler(func() []metrics.Family { return []metrics.Family{counter("x")} }, 0, nil).
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(logBuf.String(), "must end in _total") {
		t.Errorf("status %d, default log %q", rec.Code, logBuf.String())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// serve starts Serve on 127.0.0.1:0 and returns the base URL, the cancel
// function and the channel Serve's result arrives on.
func serve(t *testing.T, h http.Handler) (string, context.CancelFunc, <-chan error) {
	t.Helper()
	ln, err := metrics.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, finished := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(finished)
		done <- metrics.Serve(ctx, ln, h)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after cancel")
		}
	})
	return "http://" + ln.Addr().String(), cancel, done
}

func TestServe(t *testing.T) {
	var want bytes.Buffer
	if err := metrics.Encode(&want, somePage(), 0); err != nil {
		t.Fatal(err)
	}
	url, cancel, done := serve(t, metrics.Handler(somePage, 0, nil))
	res, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 || string(body) != want.String() ||
		res.Header.Get("Content-Type") != metrics.ContentType {
		t.Errorf("GET: %v, status %d, Content-Type %q, body\n%s", err, res.StatusCode, res.Header.Get("Content-Type"), body)
	}

	// Headers are kept small.
	req, _ := http.NewRequest(http.MethodGet, url+"/metrics", nil)
	req.Header.Set("X-Big", strings.Repeat("x", 64<<10))
	if res, err := http.DefaultClient.Do(req); err != nil {
		t.Errorf("GET with big header: %v", err)
	} else {
		res.Body.Close()
		if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("GET with a 64 KiB header: status %d, want 431", res.StatusCode)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve returned %v after cancel, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), time.Second); err == nil {
		t.Error("the port still accepts connections after Serve returned")
	}
}

// TestServeGraceful: a scrape in progress when ctx ends still gets its
// whole page; new connections are refused meanwhile; then Serve returns nil.
func TestServeGraceful(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	slow := func() []metrics.Family {
		close(started)
		<-release
		return somePage()
	}
	url, cancel, done := serve(t, metrics.Handler(slow, 0, nil))
	type result struct {
		status int
		body   string
		err    error
	}
	got := make(chan result, 1)
	go func() {
		res, err := http.Get(url)
		if err != nil {
			got <- result{err: err}
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		got <- result{res.StatusCode, string(b), err}
	}()
	<-started
	cancel()

	addr := strings.TrimPrefix(url, "http://")
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the listener is still open 5 s after cancel")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("Serve returned (%v) while a scrape was in progress", err)
	case <-time.After(100 * time.Millisecond):
	}

	close(release)
	r := <-got
	if r.err != nil || r.status != 200 || !strings.Contains(r.body, "mpiprobe_jobs_active 2\n") {
		t.Errorf("scrape in progress: %v, status %d, body\n%s", r.err, r.status, r.body)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the scrape finished")
	}
}

func TestServeAlreadyCanceled(t *testing.T) {
	ln, err := metrics.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := metrics.Serve(ctx, ln, http.NotFoundHandler()); err != nil {
		t.Errorf("Serve: %v, want nil", err)
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Error("Serve did not close the listener")
	}
}

func TestServeError(t *testing.T) {
	ln, err := metrics.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	err = metrics.Serve(context.Background(), ln, http.NotFoundHandler())
	if err == nil || !errors.Is(err, net.ErrClosed) || !strings.HasPrefix(err.Error(), "metrics: serve on "+addr+": ") {
		t.Errorf("Serve on a closed listener: %v", err)
	}
}

func TestListenErrors(t *testing.T) {
	ln, err := metrics.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()

	_, err = metrics.Listen(addr)
	want := "metrics: listen on " + addr + ": address already in use: another mpiprobe agent or service uses the port; set metrics_addr in /etc/mpiprobe/config.conf or --metrics-addr"
	if err == nil || err.Error() != want {
		t.Errorf("port in use:\n got %v\nwant %s", err, want)
	}
	var opErr *net.OpError
	if !errors.Is(err, syscall.EADDRINUSE) || !errors.As(err, &opErr) {
		t.Errorf("port in use: %v does not wrap EADDRINUSE and the *net.OpError", err)
	}

	for _, tt := range []struct{ addr, want string }{
		{"127.0.0.1", `metrics: listen on 127.0.0.1: missing port in address: use host:port; set metrics_addr in /etc/mpiprobe/config.conf or --metrics-addr (e.g. 127.0.0.1:9767)`},
		{"127.0.0.1:99999", `metrics: listen on 127.0.0.1:99999: invalid port: use host:port; set metrics_addr in /etc/mpiprobe/config.conf or --metrics-addr (e.g. 127.0.0.1:9767)`},
		{"192.0.2.1:9767", `metrics: listen on 192.0.2.1:9767: no such address on this host: set metrics_addr in /etc/mpiprobe/config.conf or --metrics-addr to an address of this host (e.g. 127.0.0.1:9767)`},
	} {
		_, err := metrics.Listen(tt.addr)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Listen(%q):\n got %v\nwant %s", tt.addr, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("Listen(%q): error not one line", tt.addr)
		}
	}
}
