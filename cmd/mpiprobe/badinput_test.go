package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

func TestParseArgsErrors(t *testing.T) {
	dir := t.TempDir()
	badConfig := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(badConfig, []byte("C = 10\nthreshold.no.such_event = 5/1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-C", "many", "-p", "1"}, "-C"},
		{[]string{"-T", "soon", "-p", "1"}, "-T"},
		{[]string{"--threshold", "no.such_event=5/1s", "-p", "1"}, `unknown event "no.such_event"`},
		{[]string{"--threshold", "ob1.send_pending.new=x/1s", "-p", "1"}, "--threshold"},
		{[]string{"--events", "everything", "-p", "1"}, `unknown level "everything"`},
		{[]string{"--config", filepath.Join(dir, "missing.conf"), "-p", "1"}, "missing.conf"},
		{[]string{"--config", badConfig, "-p", "1"}, `unknown event "no.such_event"`},
		{[]string{"-p", "abc"}, `"abc" is not a process id`},
	}
	for _, tc := range tests {
		_, err := parseArgs(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseArgs(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestParseArgsOverrides(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "mpiprobe.conf")
	if err := os.WriteFile(conf, []byte("C = 10\nT = 5s\nthreshold.ob1.send_pending.drain = 7/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseArgs([]string{"--config", conf, "-T", "2s", "--threshold", "ob1.send_pending.new=3/", "-p", "1,2", "-p", "3"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.monitor.PIDs; len(got) != 3 || got[2] != 3 {
		t.Errorf("pids = %v, want [1 2 3]", got)
	}
	if n := len(cfg.monitor.Overrides); n != 2 {
		t.Fatalf("%d override layers, want config then command line", n)
	}
	cli, file := cfg.monitor.Overrides[1], cfg.monitor.Overrides[0]
	if cli.T == nil || *cli.T != 2*time.Second || file.C == nil || *file.C != 10 {
		t.Errorf("layers: file %+v, command line %+v", file, cli)
	}
}

// runBinary runs mpiprobe and returns its exit code and stderr.
func runBinary(t *testing.T, bin string, cred *syscall.Credential, args ...string) (int, string) {
	t.Helper()
	code, _, stderr := runOutput(t, bin, cred, args...)
	return code, stderr
}

// runOutput runs mpiprobe (as cred, if not nil) and returns its exit code,
// stdout and stderr.
func runOutput(t *testing.T, bin string, cred *syscall.Credential, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run mpiprobe: %v", err)
	}
	return code, stdout.String(), stderr.String()
}

// TestBadTargets: each bad target is one line that names the cause and the
// fix, and the exit code is non-zero because nothing was attached.
func TestBadTargets(t *testing.T) {
	mpitest.RequireE2E(t)
	bin := mpitest.BuildMpiprobe(t)
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()

	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no such pid", []string{"-p", "999999999"}, []string{"no process with pid 999999999", "check the pid"}},
		{"not MPI", []string{"-p", strconv.Itoa(sleeper.Process.Pid)}, []string{"maps no MPI library", "MPI_Init"}},
		{"kernel thread", []string{"-p", "2"}, []string{"kernel thread"}},
		{"no target", nil, []string{"nothing to trace"}},
		{"unknown job", []string{"--job", "no-such-job"}, []string{`no rank of job "no-such-job"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr := runBinary(t, bin, nil, tc.args...)
			if code == 0 {
				t.Errorf("exit 0, want non-zero; stderr:\n%s", stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			last := lines[len(lines)-1]
			for _, w := range tc.want {
				if !strings.Contains(last, w) {
					t.Errorf("last line %q lacks %q", last, w)
				}
			}
		})
	}
}

// TestUnprivileged runs mpiprobe as an unprivileged user: it must say that
// it needs root or the BPF capabilities, in one line.
func TestUnprivileged(t *testing.T) {
	mpitest.RequireE2E(t)
	bin := mpitest.BuildMpiprobe(t)
	// The nobody user must reach the binary.
	for dir := filepath.Dir(bin); dir != os.TempDir() && dir != "/"; dir = filepath.Dir(dir) {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	code, stderr := runBinary(t, bin, &syscall.Credential{Uid: 65534, Gid: 65534}, "--", "true")
	if code == 0 || !strings.Contains(stderr, "run mpiprobe as root") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("exit %d, stderr %q: want one line saying to run as root", code, stderr)
	}
}

// TestNoProbeForThisMPI attaches the retries level to an MPICH rank: its
// events all probe Open MPI's ob1 and libopen-pal, so nothing attaches and
// mpiprobe must say so.
func TestNoProbeForThisMPI(t *testing.T) {
	impl := mpitest.MPICH()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	flood := mpitest.Build(t, impl, "flood")
	job := mpitest.StartJob(t, impl.Command(2, nil, flood, "-n", "10", "-p", "20000"), flood, 1, "libmpich")
	code, stderr := runBinary(t, bin, nil, "--events", "retries", "-p", strconv.Itoa(job.Ranks[0]))
	if code == 0 || !strings.Contains(stderr, "no catalog event could be attached") {
		t.Errorf("exit %d, stderr:\n%s\nwant non-zero and \"no catalog event could be attached\"", code, stderr)
	}
}

func TestSubcommands(t *testing.T) {
	var usage strings.Builder
	if _, err := parseArgs([]string{"-h"}, &usage); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	seen := map[string]bool{}
	for _, sc := range subcommands() {
		if seen[sc.name] || sc.run == nil || sc.about == "" || !strings.HasPrefix(sc.synopsis, sc.name) {
			t.Errorf("subcommand %q: duplicate, no run, no description or a synopsis not starting with its name", sc.name)
		}
		seen[sc.name] = true
		if got, ok := findSubcommand(sc.name); !ok || got.name != sc.name {
			t.Errorf("findSubcommand(%q) = %q, %v", sc.name, got.name, ok)
		}
		if !strings.Contains(usage.String(), "mpiprobe "+sc.synopsis+" ") || !strings.Contains(usage.String(), "("+sc.about+")") {
			t.Errorf("help text lacks %q:\n%s", sc.synopsis, usage.String())
		}
		// Each subcommand parses its own flags: -h is its usage, exit 0.
		var out, errb bytes.Buffer
		if code := sc.run(context.Background(), []string{"-h"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "usage: mpiprobe "+sc.name) {
			t.Errorf("%s -h: exit %d, stderr %q", sc.name, code, errb.String())
		}
	}
	if _, ok := findSubcommand("-p"); ok {
		t.Error("findSubcommand(\"-p\") found a subcommand")
	}
}
