package metrics_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/metrics"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// somePage returns the handler of a registry whose collector adds a
// gauge and two counters, calling fill first when it is not nil.
func somePage(t *testing.T, fill func()) http.Handler {
	t.Helper()
	c := metrics.NewCollector(func(p *metrics.Page) {
		if fill != nil {
			fill()
		}
		p.Add(active, 2)
		p.Add(events, 5, metrics.Label{Name: "mpi_job", Value: "b"})
		p.Add(events, 7, metrics.Label{Name: "mpi_job", Value: `a"`})
	}, 0, slog.New(slog.DiscardHandler))
	reg, err := metrics.NewRegistry(c)
	if err != nil {
		t.Fatal(err)
	}
	return metrics.Handler(reg, nil)
}

func TestHandler(t *testing.T) {
	var calls atomic.Int32
	h := somePage(t, func() { calls.Add(1) })
	tests := []struct {
		name, method     string
		header           map[string]string
		status           int
		contentType      string // prefix
		encoding         string
		wantInBody, tail string
	}{
		{name: "GET", method: http.MethodGet, status: 200, contentType: "text/plain; version=0.0.4",
			wantInBody: "mpiprobe_events_total{mpi_job=\"a\\\"\"} 7\n"},
		{name: "HEAD", method: http.MethodHead, status: 200, contentType: "text/plain; version=0.0.4"},
		{name: "gzip", method: http.MethodGet, header: map[string]string{"Accept-Encoding": "gzip"}, status: 200,
			contentType: "text/plain; version=0.0.4", encoding: "gzip", wantInBody: "mpiprobe_jobs_active 2\n"},
		{name: "OpenMetrics", method: http.MethodGet,
			header: map[string]string{"Accept": "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"},
			status: 200, contentType: "application/openmetrics-text; version=1.0.0",
			wantInBody: "# TYPE mpiprobe_events counter\n", tail: "# EOF\n"},
		{name: "POST", method: http.MethodPost, status: 405},
		{name: "PUT", method: http.MethodPut, status: 405},
		{name: "BREW", method: "BREW", status: 405},
	}
	scrapes := int32(0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "/metrics", strings.NewReader(""))
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			res := rec.Result()
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tt.status)
			}
			if tt.status == 405 {
				if allow := res.Header.Get("Allow"); allow != "GET, HEAD" {
					t.Errorf("Allow %q", allow)
				}
				if strings.Contains(rec.Body.String(), "# TYPE") {
					t.Error("got the page")
				}
				return
			}
			scrapes++
			if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, tt.contentType) {
				t.Errorf("Content-Type %q, want %q", ct, tt.contentType)
			}
			if enc := res.Header.Get("Content-Encoding"); enc != tt.encoding {
				t.Errorf("Content-Encoding %q, want %q", enc, tt.encoding)
			}
			var body []byte = rec.Body.Bytes()
			if tt.encoding == "gzip" {
				zr, err := gzip.NewReader(rec.Body)
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Contains(body, []byte(tt.wantInBody)) || !bytes.HasSuffix(body, []byte(tt.tail)) {
				t.Errorf("body lacks %q or does not end in %q:\n%s", tt.wantInBody, tt.tail, body)
			}
		})
	}
	if calls.Load() != scrapes {
		t.Errorf("collected %d times for %d scrapes", calls.Load(), scrapes)
	}
}

// serve starts Serve on 127.0.0.1:0, with the web configuration file
// webConfig ("" for none), and returns the base URL (http:), the cancel
// function and the channel Serve's result arrives on.
func serve(t *testing.T, h http.Handler, webConfig string) (string, context.CancelFunc, <-chan error) {
	t.Helper()
	ln, err := metrics.Listen("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, finished := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(finished)
		done <- metrics.Serve(ctx, ln, h, webConfig, nil)
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
	url, cancel, done := serve(t, somePage(t, nil), "")
	res, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 || !strings.Contains(string(body), "mpiprobe_jobs_active 2\n") ||
		!strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
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
	slow := func() {
		close(started)
		<-release
	}
	url, cancel, done := serve(t, somePage(t, slow), "")
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
	ln, err := metrics.Listen("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := metrics.Serve(ctx, ln, http.NotFoundHandler(), "", nil); err != nil {
		t.Errorf("Serve: %v, want nil", err)
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Error("Serve did not close the listener")
	}
}

func TestServeError(t *testing.T) {
	ln, err := metrics.Listen("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	err = metrics.Serve(context.Background(), ln, http.NotFoundHandler(), "", nil)
	if err == nil || !errors.Is(err, net.ErrClosed) || !strings.HasPrefix(err.Error(), "metrics: serve on "+addr+": ") {
		t.Errorf("Serve on a closed listener: %v", err)
	}
}

func TestListenErrors(t *testing.T) {
	ln, err := metrics.Listen("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()

	_, err = metrics.Listen(addr, "/etc/mpiprobe/config.conf")
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
		_, err := metrics.Listen(tt.addr, "/etc/mpiprobe/config.conf")
		if err == nil || err.Error() != tt.want {
			t.Errorf("Listen(%q):\n got %v\nwant %s", tt.addr, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("Listen(%q): error not one line", tt.addr)
		}
	}
}

// TestListenErrorNamesConfig: the error names the configuration file the
// agent actually read, or none, and still unwraps to the system's error.
func TestListenErrorNamesConfig(t *testing.T) {
	ln, err := metrics.Listen("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct{ cfg, want string }{
		{"/etc/mpiprobe/config.conf", "set metrics_addr in /etc/mpiprobe/config.conf or --metrics-addr"},
		{"/tmp/other.conf", "set metrics_addr in /tmp/other.conf or --metrics-addr"},
		{"", "set --metrics-addr (or metrics_addr in a --config file)"},
	} {
		_, err := metrics.Listen(ln.Addr().String(), tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, syscall.EADDRINUSE) {
			t.Errorf("Listen with config %q = %v, want %q and EADDRINUSE", tc.cfg, err, tc.want)
		}
		if tc.cfg != "/etc/mpiprobe/config.conf" && err != nil && strings.Contains(err.Error(), "/etc/mpiprobe") {
			t.Errorf("Listen with config %q still names the default file: %v", tc.cfg, err)
		}
	}
}

// TestServeTLS: with a web configuration, the page is served over TLS
// with the configuration's certificate and only to its user; a scrape
// without the password, with a wrong one or over plain HTTP is refused.
func TestServeTLS(t *testing.T) {
	w := mpitest.NewWebConfig(t)
	if err := metrics.CheckWebConfig(w.Path); err != nil {
		t.Fatal(err)
	}
	base, _, _ := serve(t, somePage(t, nil), w.Path)
	url := strings.Replace(base, "http:", "https:", 1) + "/metrics"
	get := func(client *http.Client, url, user, password string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	client := w.Client()
	if code, body, err := get(client, url, w.User, w.Password); err != nil || code != http.StatusOK || !strings.Contains(body, "mpiprobe_jobs_active 2") {
		t.Errorf("scrape with the user's password: %v, status %d, body\n%s", err, code, body)
	}
	for _, c := range []struct{ what, user, password string }{
		{"no credentials", "", ""},
		{"a wrong password", w.User, w.Password + "x"},
		{"another user", "other", w.Password},
	} {
		if code, body, err := get(client, url, c.user, c.password); err != nil || code != http.StatusUnauthorized || strings.Contains(body, "mpiprobe_") {
			t.Errorf("scrape with %s: %v, status %d (want 401), body\n%s", c.what, err, code, body)
		}
	}
	// Plain HTTP gets no page; a client that does not trust the
	// certificate does not connect.
	if code, body, err := get(http.DefaultClient, base+"/metrics", w.User, w.Password); err == nil && (code == http.StatusOK || strings.Contains(body, "mpiprobe_")) {
		t.Errorf("plain HTTP scrape: status %d, body\n%s", code, body)
	}
	if _, _, err := get(http.DefaultClient, url, w.User, w.Password); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client without the certificate connected (err %v)", err)
	}
}

// TestCheckWebConfig: a web configuration that cannot be served is
// refused in one line naming the file and the fix.
func TestCheckWebConfig(t *testing.T) {
	w := mpitest.NewWebConfig(t)
	write := func(name, content string) string {
		p := filepath.Join(w.Dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct{ name, content, want string }{
		{"plain.yml", "basic_auth_users:\n  scraper: secret\n", "crypto/bcrypt"},
		{"nokey.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: missing.pem\n", "missing.pem"},
		{"typo.yml", "tls_server_conf:\n  cert_file: cert.pem\n", "tls_server_conf"},
	} {
		path := write(c.name, c.content)
		err := metrics.CheckWebConfig(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line naming the file and %q", c.name, err, c.want)
		}
	}
	if err := metrics.CheckWebConfig(filepath.Join(w.Dir, "absent.yml")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing file: %v", err)
	}
}

// TestMaxScrapes: while MaxScrapes scrapes wait for the page, one more
// gets 503 at once, saying why; once they are served, scrapes are
// served again.
func TestMaxScrapes(t *testing.T) {
	entered, release := make(chan struct{}, metrics.MaxScrapes), make(chan struct{})
	var blocking atomic.Bool
	blocking.Store(true)
	url, _, _ := serve(t, somePage(t, func() {
		if blocking.Load() {
			entered <- struct{}{}
			<-release
		}
	}), "")
	get := func() (int, string) {
		res, err := http.Get(url)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	codes := make(chan int, metrics.MaxScrapes)
	for range metrics.MaxScrapes {
		go func() { c, _ := get(); codes <- c }()
	}
	for range metrics.MaxScrapes {
		<-entered
	}
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, "Limit of concurrent requests reached (4)") {
		t.Errorf("scrape %d: status %d, body %q; want 503 naming the limit", metrics.MaxScrapes+1, code, body)
	}
	blocking.Store(false)
	close(release)
	for range metrics.MaxScrapes {
		if c := <-codes; c != http.StatusOK {
			t.Errorf("a waiting scrape got %d", c)
		}
	}
	if code, _ := get(); code != http.StatusOK {
		t.Errorf("a scrape after the others: %d", code)
	}
}
