package main

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/collstate"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/spf13/cobra"
)

func TestParseArgsErrors(t *testing.T) {
	dir := t.TempDir()
	badConfig := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(badConfig, []byte("C = 10\nthreshold.no.such_event = 5/1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const mem = 16 << 30 // 16 GiB
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-C", "many", "-p", "1"}, "-C"},
		{[]string{"-T", "soon", "-p", "1"}, "-T"},
		{[]string{"-T", "-1s", "-p", "1"}, "is negative"},
		{[]string{"--threshold", "no.such_event=5/1s", "-p", "1"}, `unknown event no.such_event`},
		{[]string{"--threshold", "ob1.send_pending.new=x/1s", "-p", "1"}, "--threshold"},
		{[]string{"--events", "everything", "-p", "1"}, `unknown level everything`},
		{[]string{"--config", filepath.Join(dir, "missing.conf"), "-p", "1"}, "missing.conf"},
		{[]string{"--config", badConfig, "-p", "1"}, `unknown event "no.such_event"`},
		{[]string{"-p", "abc"}, `"abc" is not a process id`},
		{[]string{"-p", "0"}, `"0" is not a process id (give a number above 0`},
		{[]string{"-p", "-5"}, `"-5" is not a process id`},
		{[]string{"-p", "1,,2"}, `"" is not a process id`},
		{[]string{"-p", "99999999999"}, "the largest is 4194304"},
		{[]string{"--interval", "0", "-p", "1"}, "--interval 0s: give a duration above 0"},
		{[]string{"--interval", "-1s", "-p", "1"}, "--interval -1s: give a duration above 0"},
		{[]string{"--collectives", "--comm-slots", "0", "-p", "1"}, "--comm-slots 0: give 1 to " + strconv.Itoa(int(collstate.MaxSlotsFor(mem)))},
		{[]string{"--collectives", "--comm-slots", "99999999999", "-p", "1"}, "--comm-slots 99999999999: give 1 to"},
		{[]string{"--collectives", "--comm-slots", "-3", "-p", "1"}, "--comm-slots -3: give 1 to"},
		{[]string{"-p", "1", "--job", "j"}, "-p and --job both given"},
		{[]string{"-p", "1", "--", "true"}, "-p/--job and a command both given"},
		{[]string{"--job", "j", "--", "true"}, "-p/--job and a command both given"},
		{[]string{"--"}, "no command after --"},
		{nil, "nothing to trace: give -p PID, --job JOBID or -- COMMAND (mpiprobe ps lists MPI processes)"},
		{[]string{"--lib", "/x/libmpi.so.40", "-p", "1"}, "--lib goes with -- COMMAND"},
		{[]string{"--comm-slots", "64", "-p", "1"}, "--comm-slots goes with --collectives"},
		{[]string{"--comm-slots=0", "--", "true"}, "--comm-slots goes with --collectives"},
		{[]string{"--bogus", "-p", "1"}, "unknown flag: --bogus"},
	}
	for _, tc := range tests {
		_, err := parseRootArgs(tc.args, mem)
		var ue usageError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ue) {
			t.Errorf("parseRootArgs(%q) = %v, want a usage error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestParseArgsGood(t *testing.T) {
	tests := []struct {
		args    []string
		pids    []int
		command []string
		slots   int
	}{
		{[]string{"-p123"}, []int{123}, nil, 4096},
		{[]string{"--pid=1,2", "-p", "3", "--pid", "4"}, []int{1, 2, 3, 4}, nil, 4096},
		{[]string{"--json", "-o", "x.json", "--", "mpirun", "-np", "2", "./a", "--json"}, nil, []string{"mpirun", "-np", "2", "./a", "--json"}, 4096},
		{[]string{"--collectives", "--comm-slots", "1", "-p", "7"}, []int{7}, nil, 1},
		// C 0 and T 0 mean what they mean in the configuration file and in
		// --threshold: every new count is reportable, no time limit.
		{[]string{"-C", "0", "-T", "0", "-p", "7"}, []int{7}, nil, 4096},
	}
	for _, tc := range tests {
		cfg, err := parseRootArgs(tc.args, 16<<30)
		if err != nil {
			t.Errorf("parseRootArgs(%q): %v", tc.args, err)
			continue
		}
		if !slices.Equal(cfg.monitor.PIDs, tc.pids) || !slices.Equal(cfg.monitor.Command, tc.command) || cfg.monitor.CommSlots != tc.slots {
			t.Errorf("parseRootArgs(%q): pids %v, command %q, slots %d", tc.args, cfg.monitor.PIDs, cfg.monitor.Command, cfg.monitor.CommSlots)
		}
	}
}

func TestParseArgsOverrides(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "mpiprobe.conf")
	if err := os.WriteFile(conf, []byte("C = 10\nT = 5s\nthreshold.ob1.send_pending.drain = 7/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseRootArgs([]string{"--config", conf, "-T", "2s", "--threshold", "ob1.send_pending.new=3/", "-p", "1,2", "-p", "3"}, 0)
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

func TestCheckCommSlots(t *testing.T) {
	tests := []struct {
		n    int
		mem  uint64
		want string // "" for no error
	}{
		{1, 0, ""},
		{4096, 0, ""},
		{collstate.MaxSlots, 0, ""},
		{collstate.MaxSlots + 1, 0, "give 1 to 67108863 (the most a BPF map's 32-bit size allows"},
		{0, 0, "give 1 to 67108863"},
		{-1, 1 << 30, "--comm-slots -1: give 1 to"},
		{int(1<<30/collstate.SlotBytes()) + 1, 1 << 30, "this node has 1024 MiB"},
		{int(1 << 30 / collstate.SlotBytes()), 1 << 30, ""},
		{99999999999, 1 << 40, "--comm-slots 99999999999: give 1 to"},
	}
	for _, tc := range tests {
		err := checkCommSlots(tc.n, tc.mem)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("checkCommSlots(%d, %d) = %v, want %q", tc.n, tc.mem, err, tc.want)
		}
	}
}

func TestCommandStatus(t *testing.T) {
	tests := []struct {
		end  *agg.End
		sig  int
		want int // -1 for nil
	}{
		{nil, 0, -1},
		{nil, int(syscall.SIGINT), -1}, // -p: a signal ends the session, exit 0
		{&agg.End{Kind: agg.Exited, Code: 0}, 0, -1},
		{&agg.End{Kind: agg.Exited, Code: 3}, 0, 3},
		{&agg.End{Kind: agg.Signaled, Signal: int(syscall.SIGKILL)}, 0, 137},
		{&agg.End{Kind: agg.Exited, Code: 1}, int(syscall.SIGINT), 130},  // Open MPI's mpirun after SIGINT
		{&agg.End{Kind: agg.Exited, Code: 0}, int(syscall.SIGTERM), 143}, // hydra after SIGTERM
		{&agg.End{Kind: agg.Signaled, Signal: 2}, int(syscall.SIGINT), 130},
	}
	for _, tc := range tests {
		err := commandStatus(tc.end, tc.sig)
		var code exitStatus
		switch {
		case tc.want < 0 && err != nil:
			t.Errorf("commandStatus(%+v, %d) = %v, want nil", tc.end, tc.sig, err)
		case tc.want >= 0 && (!errors.As(err, &code) || int(code) != tc.want):
			t.Errorf("commandStatus(%+v, %d) = %v, want exit %d", tc.end, tc.sig, err, tc.want)
		}
	}
	if err := commandStatus(&agg.End{Kind: agg.Vanished}, 0); err == nil {
		t.Error("an unknown end gave exit 0")
	}
}

// TestExecuteUsage: every mistake is one line naming the cause, then the
// hint to the help, and exit 2; nothing on stdout, and nothing attached
// (these run without root).
func TestExecuteUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
		help string
	}{
		{[]string{"stauts"}, `unknown subcommand "stauts": did you mean "status"?`, "mpiprobe"},
		{[]string{"verison"}, `did you mean "version"?`, "mpiprobe"},
		{[]string{"mpirun", "-np", "2", "./app"}, `unknown subcommand "mpirun" (a command to trace goes after --: mpiprobe [flags] -- mpirun ...)`, "mpiprobe"},
		{[]string{"-v", "jobs"}, "unknown shorthand flag: 'v' in -v", "mpiprobe jobs"},
		{[]string{"--bogus"}, "unknown flag: --bogus", "mpiprobe"},
		{[]string{"-p"}, "flag needs an argument", "mpiprobe"},
		{[]string{"-pabc"}, `"abc" is not a process id`, "mpiprobe"},
		{[]string{"--interval", "0", "-p", "1"}, "--interval 0s", "mpiprobe"},
		{[]string{"--events", "bogus", "-p", "1"}, "--events: unknown level bogus (known: default, retries, messages, all)", "mpiprobe"},
		{[]string{"-v", "-q", "-p", "1"}, "-v and -q both given: give one of them", "mpiprobe"},
		{[]string{"--duration", "-1s", "-p", "1"}, "--duration -1s: give a duration above 0", "mpiprobe"},
		{[]string{"--collectives", "--comm-slots", "99999999999", "-p", "1"}, "--comm-slots 99999999999: give 1 to", "mpiprobe"},
		{nil, "nothing to trace", "mpiprobe"},
		{[]string{"status"}, "no target: give -p PID or --job JOBID (mpiprobe ps lists them)", "mpiprobe status"},
		{[]string{"status", "-p", "1", "--job", "j"}, "-p and --job both given", "mpiprobe status"},
		{[]string{"status", "--window", "0", "-p", "1"}, "--window 0s", "mpiprobe status"},
		{[]string{"status", "4242"}, `unexpected argument "4242"`, "mpiprobe status"},
		{[]string{"probes"}, "no process: give -p PID", "mpiprobe probes"},
		{[]string{"ps", "x"}, `unexpected argument "x"`, "mpiprobe ps"},
		{[]string{"trace", "shwo"}, `did you mean "show"?`, "mpiprobe trace"},
		{[]string{"trace", "-p", "1"}, "give the output file with -o FILE", "mpiprobe trace"},
		{[]string{"trace", "-o", "x", "--ring", "3K", "-p", "1"}, "--ring 3K", "mpiprobe trace"},
		{[]string{"trace", "-o", "x", "--thread-slots", "3", "-p", "1"}, "--thread-slots 3: give a power of two up to 65536", "mpiprobe trace"},
		{[]string{"trace", "-o", "x", "--thread-slots", "131072", "-p", "1"}, "--thread-slots 131072: give a power of two up to 65536", "mpiprobe trace"},
		{[]string{"agent", "--interval", "10ms"}, "--interval 10ms: give 100ms to 1m0s", "mpiprobe agent"},
		{[]string{"agent", "--pin-dir", "/tmp/pins"}, "--pin-dir /tmp/pins is not below /sys/fs/bpf", "mpiprobe agent"},
		{[]string{"agent", "extra"}, `unexpected argument "extra"`, "mpiprobe agent"},
		{[]string{"agent", "--web.config.file", "/nonexistent/web.yml"}, "metrics: web configuration /nonexistent/web.yml: open /nonexistent/web.yml: no such file or directory: fix the file", "mpiprobe agent"},
		{[]string{"agent", "--metrics-addr", "off", "--web.config.file", "web.yml"}, "--web.config.file web.yml: the metrics page is off; set --metrics-addr", "mpiprobe agent"},
		{[]string{"version", "x"}, `unexpected argument "x"`, "mpiprobe version"},
		{[]string{"ps", "--scope", "pod"}, `--scope "pod": give host (every process of this host) or netns (only those of mpiprobe's network namespace)`, "mpiprobe ps"},
		{[]string{"--scope", "NETNS", "-p", "1"}, `--scope "NETNS": give host`, "mpiprobe"},
		{[]string{"status", "--scope", "", "-p", "1"}, `--scope "": give host`, "mpiprobe status"},
		{[]string{"trace", "-o", "x", "--scope", "pod", "-p", "1"}, `--scope "pod": give host`, "mpiprobe trace"},
		{[]string{"probes", "--scope", "pod", "-p", "1"}, `--scope "pod": give host`, "mpiprobe probes"},
		{[]string{"agent", "--config", "/dev/null", "--scope", "pod"}, `--scope "pod": give host`, "mpiprobe agent"},
	}
	for _, tc := range tests {
		var stdout, stderr bytes.Buffer
		code := execute(context.Background(), tc.args, &stdout, &stderr)
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if code != 2 || len(lines) != 2 || !strings.Contains(lines[0], tc.want) || !strings.HasPrefix(lines[0], tc.help+": ") ||
			lines[1] != "Run '"+tc.help+" --help' for usage." || stdout.Len() != 0 {
			t.Errorf("mpiprobe %q: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and one line with %q, then the hint", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
}

// TestHelp: help goes to stdout with exit 0, in GNU style with real
// placeholders, for the root command and every subcommand.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		var stdout, stderr bytes.Buffer
		code := execute(context.Background(), args, &stdout, &stderr)
		out := stdout.String()
		if code != 0 || stderr.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr.String())
		}
		for _, w := range []string{"-p, --pid PID", "-o, --output FILE", "--interval DURATION", "--comm-slots N", "-C, --count N", "-T, --delay DURATION",
			"--json", "--version", "-v, --verbose", "--collectives", "--events LEVELS", "--lib FILE", "--debug-dir DIR", "--config FILE", "--job JOBID",
			"the command's\nstandard output goes to mpiprobe's standard error", "ob1.send_pending.new", "  ps ", "  version "} {
			if !strings.Contains(out, w) {
				t.Errorf("%q: help lacks %q", args, w)
			}
		}
		for _, bad := range []string{" value ", " int ", " duration ", "\n  -collectives", "-collectives mpiprobe status"} {
			if strings.Contains(out, bad) {
				t.Errorf("%q: help holds %q", args, bad)
			}
		}
	}
	root := newRootCmd()
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			continue
		}
		var stdout, stderr bytes.Buffer
		code := execute(context.Background(), []string{c.Name(), "--help"}, &stdout, &stderr)
		if code != 0 || stderr.Len() != 0 || !strings.Contains(stdout.String(), "Usage:\n  mpiprobe "+c.Name()) || c.Short == "" {
			t.Errorf("%s --help: exit %d, stdout %q, stderr %q", c.Name(), code, stdout.String(), stderr.String())
		}
		if strings.Contains(stdout.String(), " value ") || strings.Contains(stdout.String(), " duration ") {
			t.Errorf("%s --help shows a type instead of a placeholder:\n%s", c.Name(), stdout.String())
		}
	}
}

// docReference is a file, or a README section, that a help text points to.
var docReference = regexp.MustCompile(`(?:docs|dist)/[\w.-]+|README\.md(?: \(([^)]+)\))?`)

// TestHelpReferences: every file and README section a help text points
// to exists, so that --help never sends a reader to nothing.
func TestHelpReferences(t *testing.T) {
	repo := mpitest.RepoRoot(t)
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var check func(c *cobra.Command)
	check = func(c *cobra.Command) {
		var b bytes.Buffer
		c.SetOut(&b)
		_ = c.Help()
		for _, m := range docReference.FindAllStringSubmatch(b.String(), -1) {
			switch {
			case m[1] != "":
				if !regexp.MustCompile(`(?m)^#+ ` + regexp.QuoteMeta(m[1]) + `$`).Match(readme) {
					t.Errorf("%s --help points to README.md section %q, which README.md lacks", c.CommandPath(), m[1])
				}
			case strings.HasPrefix(m[0], "README"):
			default:
				if _, err := os.Stat(filepath.Join(repo, strings.TrimRight(m[0], "."))); err != nil {
					t.Errorf("%s --help points to %s: %v", c.CommandPath(), m[0], err)
				}
			}
		}
		for _, sub := range c.Commands() {
			check(sub)
		}
	}
	check(newRootCmd())
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		var stdout, stderr bytes.Buffer
		code := execute(context.Background(), args, &stdout, &stderr)
		if code != 0 || stderr.Len() != 0 || stdout.String() != "mpiprobe "+version()+"\n" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout.String(), stderr.String())
		}
	}
}

// TestVersionOf: a release names its version (go build in a clone makes
// one of the commit, v0.0.0-DATE-COMMIT), a build with the commit only in
// its settings the commit (and -dirty), one that recorded none (a git
// worktree, -buildvcs=false) says so and why.
func TestVersionOf(t *testing.T) {
	vcs := func(kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}
		for i := 0; i < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	for _, tc := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}}, "v1.2.0"},
		{vcs("vcs.revision", "a30868b0123456789abcdef", "vcs.modified", "false"), "(devel) commit a30868b01234"},
		{vcs("vcs.revision", "a30868b0123456789abcdef", "vcs.modified", "true"), "(devel) commit a30868b01234-dirty"},
		{vcs(), "(devel), commit not recorded (built with -buildvcs=false, or in a git worktree"},
	} {
		if got := versionOf(tc.bi, true); !strings.HasPrefix(got, tc.want) {
			t.Errorf("versionOf(%v) = %q, want %q", tc.bi.Settings, got, tc.want)
		}
	}
}

// freePID returns a process id no process has, below the kernel's limit.
func freePID(t *testing.T) int {
	t.Helper()
	for pid := maxPID - 1; pid > maxPID-1000; pid-- {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return pid
		}
	}
	t.Fatal("no free pid near the kernel's limit")
	return 0
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
		{"no such pid", []string{"-p", strconv.Itoa(freePID(t))}, []string{"no process with pid ", "check the pid"}},
		{"not MPI", []string{"-p", strconv.Itoa(sleeper.Process.Pid)}, []string{"maps no MPI library", "MPI_Init"}},
		{"kernel thread", []string{"-p", "2"}, []string{"kernel thread"}},
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
	mpitest.OpenToAll(t, bin)
	code, stderr := runBinary(t, bin, nobody, "--", "true")
	if code == 0 || !strings.Contains(stderr, "run mpiprobe as root") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("exit %d, stderr %q: want one line saying to run as root", code, stderr)
	}
}

// nobody is the unprivileged user of the tests.
var nobody = mpitest.Nobody

// TestUnprivilegedJob: --job of root's running job, as another user, is
// not "no rank runs on this node" (the user cannot read root's processes,
// where the job id is): one line says so and to run as root, for the
// counting mode and for status.
func TestUnprivilegedJob(t *testing.T) {
	bin, job := pausedFlood(t)
	mpitest.OpenToAll(t, bin)
	id := jobOf(t, job.Ranks[0])
	// status asks no agent here (--query-socket off): it tries itself.
	for _, args := range [][]string{{"--job", id}, {"status", "--job", id, "--query-socket", "off"}} {
		code, stderr := runBinary(t, bin, nobody, args...)
		if code == 0 || !strings.Contains(stderr, "other users") || !strings.Contains(stderr, "run mpiprobe as root") ||
			strings.Contains(stderr, "runs on this node") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("mpiprobe %s as nobody: exit %d, stderr %q: want one line saying other users' processes need root", strings.Join(args, " "), code, stderr)
		}
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

// buildStaticFlood builds testdata/flood.c with MPICH's static library
// (libmpich.a, from libmpich-dev) linked in, and the libraries libmpich
// needs shared: a rank that maps no MPI library.
func buildStaticFlood(t *testing.T, impl mpitest.Impl) string {
	t.Helper()
	const archive, shared = "/usr/lib/x86_64-linux-gnu/libmpich.a", "/usr/lib/x86_64-linux-gnu/libmpich.so.12"
	if _, err := os.Stat(archive); err != nil {
		mpitest.Require(t, "MPICH's static library (libmpich-dev): "+err.Error())
	}
	f, err := elf.Open(shared)
	if err != nil {
		mpitest.Require(t, "Debian's libmpich.so.12: "+err.Error())
	}
	needed, err := f.ImportedLibraries()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	show, err := exec.Command(impl.CC, "-show").Output()
	if err != nil {
		t.Fatalf("%s -show: %v", impl.CC, err)
	}
	// The wrapper's command line, its -lmpich replaced by the archive.
	args := []string{"-O2", "-g", "-o", filepath.Join(t.TempDir(), "flood-static"), filepath.Join(mpitest.RepoRoot(t), "testdata", "flood.c")}
	words := strings.Fields(string(show))
	for _, w := range words[1:] {
		if w != "-lmpich" {
			args = append(args, w)
		}
	}
	args = append(args, archive, "-lm", "-lpthread")
	for _, lib := range needed {
		if !strings.HasPrefix(lib, "libc.") && !strings.HasPrefix(lib, "ld-linux") {
			args = append(args, "-l:"+lib)
		}
	}
	if b, err := exec.Command(words[0], args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", words[0], strings.Join(args, " "), err, b)
	}
	return args[3]
}

// TestStaticMPIExecutable: a rank whose program has MPICH linked in
// statically maps no MPI library; mpiprobe, status and probes say so in
// one line, naming the program and the fix, instead of asking for the pid
// of a rank that called MPI_Init (it did).
func TestStaticMPIExecutable(t *testing.T) {
	impl := mpitest.MPICH()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	prog := buildStaticFlood(t, impl)
	job := mpitest.StartJob(t, impl.Command(2, nil, prog, "-n", "10", "-p", "60000"), prog, 2, "libucp") // mapped at start: its DT_NEEDED
	pid := strconv.Itoa(job.Ranks[0])
	for _, args := range [][]string{{"-p", pid}, {"status", "-p", pid}, {"probes", "-p", pid}} {
		code, stderr := runBinary(t, bin, nil, args...)
		if code != 1 || !strings.Contains(stderr, "has MPI linked into its program "+prog) || !strings.Contains(stderr, "link the program with the shared MPI library") ||
			strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("mpiprobe %s on a static MPI rank: exit %d, stderr %q: want one line saying MPI is linked in statically", strings.Join(args, " "), code, stderr)
		}
	}
}
