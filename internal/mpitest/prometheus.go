package mpitest

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// Prometheus is a Prometheus server started by a test
// ([StartPrometheus]), with a storage of its own.
type Prometheus struct {
	// URL is its base URL, e.g. http://127.0.0.1:40123.
	URL     string
	LogPath string
	// client reaches URL: http.DefaultClient, or one whose connections
	// are made in the namespace Prometheus listens in.
	client *http.Client
}

// StartPrometheus starts the prometheus binary (Debian package prometheus)
// on a free loopback port with the configuration config (YAML; relative
// paths in it are read from dir) and waits until it is ready; it is killed
// at the end of the test. Without prometheus the test skips (fails under
// MPIPROBE_E2E=require).
func StartPrometheus(t testing.TB, dir, config string) *Prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		Require(t, "prometheus (Debian package prometheus)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return startPrometheus(t, bin, dir, config, addr, nil, http.DefaultClient)
}

// startPrometheus starts prometheus (the binary bin) listening on addr,
// run by wrap (a command that enters a namespace, or none), and waits
// until client reaches it ready.
func startPrometheus(t testing.TB, bin, dir, config, addr string, wrap []string, client *http.Client) *Prometheus {
	t.Helper()
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &Prometheus{URL: "http://" + addr, LogPath: filepath.Join(dir, "prometheus.log"), client: client}
	logf, err := os.Create(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	argv := append(slices.Clone(wrap), bin, "--config.file", path, "--storage.tsdb.path", filepath.Join(dir, "data"),
		"--web.listen-address", addr)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := p.client.Get(p.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-done:
			t.Fatalf("prometheus exited before it was ready:\n%s", p.Log(t))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready within 60 s:\n%s", p.Log(t))
		}
	}
}

// Log returns what Prometheus printed so far.
func (p *Prometheus) Log(t testing.TB) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Sample is one element of an instant query's result.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Query evaluates an instant PromQL query now.
func (p *Prometheus) Query(t testing.TB, q string) []Sample {
	t.Helper()
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	p.get(t, "/api/v1/query?query="+url.QueryEscape(q), &out)
	if out.Status != "success" {
		t.Fatalf("query %s: %s", q, out.Error)
	}
	var samples []Sample
	for _, r := range out.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("query %s: value %v: %v", q, r.Value, err)
		}
		samples = append(samples, Sample{Labels: r.Metric, Value: v})
	}
	return samples
}

// Target is the scrape state of one target.
type Target struct {
	Health, LastError string
	LastScrape        time.Time
}

// Targets returns the state of the active scrape targets.
func (p *Prometheus) Targets(t testing.TB) []Target {
	t.Helper()
	var out struct {
		Data struct {
			Active []struct {
				Health     string    `json:"health"`
				LastError  string    `json:"lastError"`
				LastScrape time.Time `json:"lastScrape"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	p.get(t, "/api/v1/targets", &out)
	var ts []Target
	for _, a := range out.Data.Active {
		ts = append(ts, Target{Health: a.Health, LastError: a.LastError, LastScrape: a.LastScrape})
	}
	return ts
}

func (p *Prometheus) get(t testing.TB, path string, v any) {
	t.Helper()
	resp, err := p.client.Get(p.URL + path)
	if err != nil {
		t.Fatalf("prometheus %s: %v", path, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("prometheus %s: status %d: %v", path, resp.StatusCode, err)
	}
}
