package mpitest

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Agent is one `mpiprobe agent` process started by a test.
type Agent struct {
	// Cmd is the agent process.
	Cmd *exec.Cmd
	// LogPath is the file holding its stdout and stderr.
	LogPath string
	// Metrics is the host:port of its metrics server.
	Metrics string
	// Web, when set, is the web configuration the metrics page is served
	// with (StartAgentTLS): Scrape uses HTTPS and its user.
	Web  *WebConfig
	done chan error
}

// AgentDirs are the state and pin directories of a test's agents.
type AgentDirs struct {
	// State is the state directory, Pin the pin directory (under
	// /sys/fs/bpf, removed at the end of the test), Config the config file.
	State, Pin, Config string
	// MetricsAddr is where the agent serves its metrics; "" is a free
	// loopback port (127.0.0.1:0).
	MetricsAddr string
	// Query is the agent's query socket; "" is off.
	Query string
}

// NewAgentDirs makes the directories and the config file of a test's agents.
func NewAgentDirs(t testing.TB) AgentDirs {
	t.Helper()
	d := AgentDirs{State: t.TempDir(), Pin: fmt.Sprintf("/sys/fs/bpf/mpiprobe/test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))}
	d.Config = filepath.Join(t.TempDir(), "config.conf")
	// The per-test config: a small C so that every queueing run warns, and
	// a short metrics TTL the test does not reach.
	if err := os.WriteFile(d.Config, []byte("C = 500\nT = 1s\nmetrics_ttl = 10m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d.Pin) })
	return d
}

// StartAgent starts the agent and waits until it has attached and scanned.
// With a journal socket, the agent is made to believe it runs under
// systemd and sends its entries there. wrap, when given, is a command that
// runs the agent (e.g. setpriv with a capability set).
func StartAgent(t testing.TB, bin string, d AgentDirs, journalSocket string, wrap ...string) *Agent {
	t.Helper()
	return startAgent(t, bin, d, journalSocket, nil, wrap)
}

// StartAgentTLS is StartAgent with the metrics page served with the web
// configuration w (--web.config.file): TLS and basic authentication.
func StartAgentTLS(t testing.TB, bin string, d AgentDirs, w WebConfig) *Agent {
	t.Helper()
	return startAgent(t, bin, d, "", &w, nil)
}

func startAgent(t testing.TB, bin string, d AgentDirs, journalSocket string, w *WebConfig, wrap []string) *Agent {
	t.Helper()
	logf, err := os.CreateTemp(t.TempDir(), "agent-*.log")
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{LogPath: logf.Name(), Web: w, done: make(chan error, 1)}
	metrics := d.MetricsAddr
	if metrics == "" {
		metrics = "127.0.0.1:0"
	}
	query := d.Query
	if query == "" {
		query = "off"
	}
	argv := slices.Concat(wrap, []string{bin, "agent", "--config", d.Config, "--state-dir", d.State, "--pin-dir", d.Pin, "--metrics-addr", metrics, "--query-socket", query})
	if w != nil {
		argv = append(argv, "--web.config.file", w.Path)
	}
	a.Cmd = exec.Command(argv[0], argv[1:]...)
	a.Cmd.Stdout, a.Cmd.Stderr = logf, logf
	a.Cmd.Env = os.Environ()
	if journalSocket != "" {
		a.Cmd.Env = append(a.Cmd.Env, journalEnv(t, a.LogPath, journalSocket)...)
	}
	if err := a.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close()
	go func() { a.done <- a.Cmd.Wait() }()
	t.Cleanup(func() { _ = a.Cmd.Process.Kill() })
	addr := regexp.MustCompile(`msg=metrics addr=(\S+)`)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		log := a.Log(t)
		if m := addr.FindStringSubmatch(log); m != nil {
			a.Metrics = m[1]
		}
		if strings.Contains(log, `msg="agent started"`) {
			return a
		}
		select {
		case err := <-a.done:
			t.Fatalf("agent exited before it started: %v\n%s", err, log)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("agent did not start within 60 s:\n%s", a.Log(t))
	return nil
}

// Log returns what the agent printed so far.
func (a *Agent) Log(t testing.TB) string {
	b, err := os.ReadFile(a.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Stop sends sig and waits for the agent to exit.
func (a *Agent) Stop(t testing.TB, sig syscall.Signal) {
	t.Helper()
	_ = a.Cmd.Process.Signal(sig)
	select {
	case err := <-a.done:
		if sig == syscall.SIGTERM && err != nil {
			t.Fatalf("agent did not exit cleanly on SIGTERM: %v\n%s", err, a.Log(t))
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("agent did not exit within 30 s of %v:\n%s", sig, a.Log(t))
	}
}

// Scrape fetches the metrics page and checks it with promtool.
func (a *Agent) Scrape(t testing.TB) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+a.Metrics+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	client := http.DefaultClient
	if a.Web != nil {
		req.URL.Scheme = "https"
		req.SetBasicAuth(a.Web.User, a.Web.Password)
		client = a.Web.Client()
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("scrape: %v, status %d\n%s", err, resp.StatusCode, b)
	}
	CheckWithPromtool(t, b)
	return string(b)
}

// WaitMetrics scrapes the agent's metrics (each page checked by promtool)
// until ok accepts a page, which it returns; after 20 s the test fails,
// saying what it waited for.
func (a *Agent) WaitMetrics(t testing.TB, what string, ok func(page string) bool) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		page := a.Scrape(t)
		if ok(page) {
			return page
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics never showed %s within 20 s:\n%s\nagent log:\n%s", what, page, a.Log(t))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// MetricValue returns the value of a sample of name whose labels include
// every want label with exactly that value (the first in the page's
// order), and whether there was one. A page that does not parse has none.
func MetricValue(page, name string, want map[string]string) (float64, bool) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		return 0, false
	}
	for _, m := range fams[name].GetMetric() {
		n := 0
		for _, lp := range m.GetLabel() {
			if v, ok := want[lp.GetName()]; ok && v == lp.GetValue() {
				n++
			}
		}
		if n != len(want) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Untyped != nil:
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

// journalEnv makes the agent believe its stderr is the journal's stream,
// as systemd's JOURNAL_STREAM says, and points it at the test's socket.
func journalEnv(t testing.TB, logPath, socket string) []string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(logPath, &st); err != nil {
		t.Fatal(err)
	}
	return []string{fmt.Sprintf("JOURNAL_STREAM=%d:%d", st.Dev, st.Ino), "MPIPROBE_JOURNAL_SOCKET=" + socket}
}
