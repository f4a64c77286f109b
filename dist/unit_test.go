package dist_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/config"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// capabilities is the agent's documented capability set (see the comments
// in mpiprobe.service): changing it must be deliberate.
var capabilities = []string{
	"CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
	"CAP_DAC_READ_SEARCH",
	"CAP_PERFMON",
	"CAP_SYS_ADMIN",
	"CAP_SYS_PTRACE",
}

// maxExposure is the overall exposure that `systemd-analyze security
// --offline=yes` gave the unit with systemd 252 (Debian 12), 0 being the
// best and 10 the worst; a unit that scores worse has lost some hardening.
// (Without CAP_SYS_ADMIN it was 2.7.)
const maxExposure = 3.0

// requireTools skips the test (fails it under MPIPROBE_E2E=require) when
// make or systemd-analyze is missing.
func requireTools(t *testing.T, analyze bool) {
	t.Helper()
	var missing []string
	if _, err := exec.LookPath("make"); err != nil {
		missing = append(missing, "make (Debian package make)")
	}
	if _, err := exec.LookPath("sed"); err != nil {
		missing = append(missing, "sed (Debian package sed)")
	}
	if _, err := exec.LookPath("install"); err != nil {
		missing = append(missing, "install (Debian package coreutils)")
	}
	if _, err := exec.LookPath("systemd-analyze"); analyze && err != nil {
		missing = append(missing, "systemd-analyze (Debian package systemd)")
	}
	mpitest.Require(t, missing...)
}

// makeTarget runs `make target VAR=value...` in the repository root and
// returns its output. The make variables of an enclosing make (when the
// tests run under `make test`) are dropped so that this make is on its own.
func makeTarget(t *testing.T, target string, vars ...string) string {
	t.Helper()
	cmd := exec.Command("make", append([]string{"--no-print-directory", target}, vars...)...)
	cmd.Dir = mpitest.RepoRoot(t)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name != "MAKEFLAGS" && name != "MFLAGS" && name != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make %s %s: %v\n%s", target, strings.Join(vars, " "), err, out)
	}
	return string(out)
}

// checkMode fails the test unless path is a regular file with mode perm.
func checkMode(t *testing.T, path string, perm os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Error(err)
		return
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != perm {
		t.Errorf("%s: mode %v, want a regular file with mode %v", path, fi.Mode(), perm)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sampleConfig returns the path of the configuration `make install`
// installs, and whether it exists.
func sampleConfig(t *testing.T) (string, bool) {
	path := filepath.Join(mpitest.RepoRoot(t), "internal", "config", "testdata", "config.conf")
	_, err := os.Stat(path)
	return path, err == nil
}

// TestUnitVerifies installs into a temporary root as a package build would
// (DESTDIR, PREFIX=/usr), checks what was installed, and has systemd check
// the unit.
func TestUnitVerifies(t *testing.T) {
	requireTools(t, true)
	dest := t.TempDir()
	out := makeTarget(t, "install", "DESTDIR="+dest, "PREFIX=/usr")
	t.Logf("make install:\n%s", out)

	bin := filepath.Join(dest, "usr", "bin", "mpiprobe")
	unitPath := filepath.Join(dest, "etc", "systemd", "system", "mpiprobe.service")
	checkMode(t, bin, 0o755)
	checkMode(t, unitPath, 0o644)
	checkMode(t, filepath.Join(dest, "usr", "share", "doc", "mpiprobe", "README.md"), 0o644)
	conf := filepath.Join(dest, "etc", "mpiprobe", "config.conf")
	if src, ok := sampleConfig(t); ok {
		checkMode(t, conf, 0o640)
		if readFile(t, conf) != readFile(t, src) {
			t.Errorf("%s differs from %s", conf, src)
		}
	} else if _, err := os.Stat(conf); err == nil {
		t.Errorf("%s installed although internal/config/testdata/config.conf does not exist", conf)
	}

	// The installed unit is the template with the two paths filled in.
	unit := readFile(t, unitPath)
	tmpl := readFile(t, filepath.Join(mpitest.RepoRoot(t), "dist", "mpiprobe.service"))
	want := strings.NewReplacer("@BINDIR@", "/usr/bin", "@DOCDIR@", "/usr/share/doc/mpiprobe").Replace(tmpl)
	if unit != want {
		t.Errorf("installed unit is not the template with @BINDIR@ and @DOCDIR@ replaced:\n%s", unit)
	}
	if m := regexp.MustCompile(`@[A-Z_]+@`).FindString(unit); m != "" {
		t.Errorf("installed unit still holds %s", m)
	}
	const execStart = "\nExecStart=/usr/bin/mpiprobe agent\n"
	if !strings.Contains(unit, execStart) {
		t.Fatalf("installed unit lacks %q", strings.TrimSpace(execStart))
	}

	// systemd-analyze checks that ExecStart= names an executable file of
	// this machine, and /usr/bin/mpiprobe is not installed here: verify a
	// copy whose ExecStart= names the staged binary instead, a change of
	// this one path only.
	vdir := filepath.Join(dest, "verify")
	if err := os.Mkdir(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	vunit := filepath.Join(vdir, "mpiprobe.service")
	staged := strings.Replace(unit, execStart, "\nExecStart="+bin+" agent\n", 1)
	if err := os.WriteFile(vunit, []byte(staged), 0o644); err != nil {
		t.Fatal(err)
	}

	stdout, stderr, err := analyze(t, "verify", vunit)
	t.Logf("systemd-analyze verify:\n%s%s", stdout, stderr)
	if err != nil {
		t.Errorf("systemd-analyze verify %s: %v", vunit, err)
	}
	// verify exits 0 on many warnings (unknown keys, bad values): any line
	// about the unit fails the test.
	for _, line := range strings.Split(stdout+stderr, "\n") {
		if strings.Contains(line, "mpiprobe.service") {
			t.Errorf("systemd-analyze verify: %s", line)
		}
	}

	stdout, stderr, err = analyze(t, "security", "--offline=yes", "--no-pager", vunit)
	if err != nil {
		t.Fatalf("systemd-analyze security --offline=yes %s: %v\n%s%s", vunit, err, stdout, stderr)
	}
	m := regexp.MustCompile(`Overall exposure level for mpiprobe\.service: ([0-9]+(?:\.[0-9]+)?)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no overall exposure level in systemd-analyze security's output:\n%s%s", stdout, stderr)
	}
	score, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("systemd-analyze security: overall exposure %.1f (at most %.1f allowed)", score, maxExposure)
	if score > maxExposure {
		t.Errorf("exposure %.1f is above %.1f: the unit lost some hardening\n%s", score, maxExposure, stdout)
	}
}

// analyze runs systemd-analyze without colors and returns its output.
func analyze(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command("systemd-analyze", args...)
	cmd.Env = append(os.Environ(), "SYSTEMD_COLORS=0", "SYSTEMD_PAGER=")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// TestUninstall installs twice and uninstalls in the same DESTDIR: the
// second install keeps an admin's configuration, and uninstall removes the
// binary, the unit and the documentation but keeps the configuration and
// the state, and never runs a staged binary (its --cleanup acts on the live
// system's pins).
func TestUninstall(t *testing.T) {
	requireTools(t, false)
	dest := t.TempDir()
	vars := []string{"DESTDIR=" + dest, "PREFIX=/usr"}
	makeTarget(t, "install", vars...)

	bin := filepath.Join(dest, "usr", "bin", "mpiprobe")
	unit := filepath.Join(dest, "etc", "systemd", "system", "mpiprobe.service")
	docdir := filepath.Join(dest, "usr", "share", "doc", "mpiprobe")
	conf := filepath.Join(dest, "etc", "mpiprobe", "config.conf")
	for _, p := range []string{bin, unit, filepath.Join(docdir, "README.md")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatal(err)
		}
	}

	// An admin's configuration: a second install must leave it alone.
	const admin = "# edited by the admin\ninterval = 5s\n"
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte(admin), 0o600); err != nil {
		t.Fatal(err)
	}
	out := makeTarget(t, "install", vars...)
	if got := readFile(t, conf); got != admin {
		t.Errorf("a second make install replaced the admin's config.conf:\n%s\nmake said:\n%s", got, out)
	}

	// State the agent wrote, and a staged binary that records being run.
	state := filepath.Join(dest, "var", "lib", "mpiprobe", "jobs", "1.json")
	if err := os.MkdirAll(filepath.Dir(state), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state, []byte("{}\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(dest, "ran")
	script := fmt.Sprintf("#!/bin/sh\necho \"$@\" > '%s'\n", ran)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}

	out = makeTarget(t, "uninstall", vars...)
	t.Logf("make uninstall:\n%s", out)
	for _, p := range []string{bin, unit, docdir} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there after make uninstall (%v)", p, err)
		}
	}
	if b, err := os.ReadFile(ran); err == nil {
		t.Errorf("make uninstall DESTDIR=... ran the staged binary: mpiprobe %s", b)
	}
	if got := readFile(t, conf); got != admin {
		t.Errorf("make uninstall changed config.conf:\n%s", got)
	}
	if _, err := os.Stat(state); err != nil {
		t.Errorf("make uninstall removed the state: %v", err)
	}
	if !strings.Contains(out, "kept") {
		t.Errorf("make uninstall does not say what it kept:\n%s", out)
	}
}

// unitFile is a parsed unit: section -> key -> the values of its
// assignments in order.
type unitFile map[string]map[string][]string

func parseUnit(t *testing.T, text string) unitFile {
	t.Helper()
	u := unitFile{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
			continue
		case strings.HasSuffix(line, `\`):
			t.Fatalf("line %d: continuation lines are not supported here: %s", n, line)
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			t.Fatalf("line %d: not KEY=VALUE in a section: %s", n, line)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		u[section][key] = append(u[section][key], value)
	}
	return u
}

// TestUnitHardening reads the template and checks each setting the agent
// depends on or the hardening relies on, so that changing one is
// deliberate.
func TestUnitHardening(t *testing.T) {
	u := parseUnit(t, readFile(t, filepath.Join(mpitest.RepoRoot(t), "dist", "mpiprobe.service")))
	svc := u["Service"]
	if svc == nil {
		t.Fatal("no [Service] section")
	}
	single := map[string]string{
		"Type":                    "simple",
		"ExecStart":               "@BINDIR@/mpiprobe agent",
		"Restart":                 "on-failure",
		"RestartSec":              "2",
		"KillSignal":              "SIGTERM",
		"TimeoutStopSec":          "30",
		"StateDirectory":          "mpiprobe",
		"StateDirectoryMode":      "0750",
		"RuntimeDirectory":        "mpiprobe",
		"RuntimeDirectoryMode":    "0755",
		"ConfigurationDirectory":  "mpiprobe",
		"UMask":                   "0027",
		"NoNewPrivileges":         "yes",
		"ProtectSystem":           "strict",
		"ProtectHome":             "read-only",
		"PrivateTmp":              "yes",
		"PrivateDevices":          "yes",
		"ProtectKernelTunables":   "yes",
		"ProtectKernelModules":    "yes",
		"ProtectKernelLogs":       "yes",
		"ProtectControlGroups":    "yes",
		"ProtectClock":            "yes",
		"ProtectHostname":         "yes",
		"RestrictNamespaces":      "yes",
		"RestrictRealtime":        "yes",
		"RestrictSUIDSGID":        "yes",
		"LockPersonality":         "yes",
		"MemoryDenyWriteExecute":  "yes",
		"RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
		"SystemCallArchitectures": "native",
		"SystemCallErrorNumber":   "EPERM",
		"ReadWritePaths":          "-" + config.Default().PinDir,
	}
	for key, want := range single {
		if got := svc[key]; len(got) != 1 || got[0] != want {
			t.Errorf("%s=%q, want exactly one %s=%s", key, got, key, want)
		}
	}
	// In order: the allow list, the groups taken out of it, the two calls
	// of a BPF tracer put back (bpf is in @privileged).
	filter := []string{"@system-service", "~@privileged @resources", "bpf perf_event_open"}
	if got := svc["SystemCallFilter"]; !slices.Equal(got, filter) {
		t.Errorf("SystemCallFilter= lines %q, want %q", got, filter)
	}
	for _, key := range []string{"CapabilityBoundingSet", "AmbientCapabilities"} {
		got := svc[key]
		if len(got) != 1 {
			t.Errorf("%s= set %d times, want once", key, len(got))
			continue
		}
		caps := strings.Fields(got[0])
		slices.Sort(caps)
		if !slices.Equal(caps, capabilities) {
			t.Errorf("%s=%s, want exactly %s", key, got[0], strings.Join(capabilities, " "))
		}
	}
	// Settings that would break the agent: it must see every process and
	// every non-process /proc file, serve metrics, keep its capabilities
	// in the host's user namespace, and not be killed or starved.
	for _, key := range []string{"ProtectProc", "ProcSubset", "PrivateNetwork", "PrivateUsers",
		"User", "DynamicUser", "MemoryMax", "CPUQuota", "IPAddressDeny"} {
		if v, ok := svc[key]; ok {
			t.Errorf("%s=%q is set", key, v)
		}
	}

	// The pin directory exists before the sandbox opens it read-write: made
	// by a privileged ("+") ExecStartPre=, with the agent's default pin_dir.
	pre := svc["ExecStartPre"]
	wantPre := "+/bin/mkdir -p -m 0700 " + config.Default().PinDir
	if !slices.Contains(pre, wantPre) {
		t.Errorf("ExecStartPre=%q, want %s", pre, wantPre)
	}
	// StateDirectory= and ConfigurationDirectory= are the agent's defaults.
	if sd := config.Default().StateDir; sd != "/var/lib/mpiprobe" {
		t.Errorf("the agent's default state_dir is %s, StateDirectory=mpiprobe makes /var/lib/mpiprobe", sd)
	}
	if config.DefaultPath != "/etc/mpiprobe/config.conf" {
		t.Errorf("the agent reads %s, ConfigurationDirectory=mpiprobe makes /etc/mpiprobe", config.DefaultPath)
	}

	unit := u["Unit"]
	for _, p := range []string{"/sys/kernel/btf/vmlinux", "/sys/bus/event_source/devices/uprobe/type"} {
		if !slices.Contains(unit["AssertPathExists"], p) {
			t.Errorf("[Unit] AssertPathExists=%q lacks %s", unit["AssertPathExists"], p)
		}
	}
	if got := u["Install"]["WantedBy"]; !slices.Equal(got, []string{"multi-user.target"}) {
		t.Errorf("WantedBy=%q, want multi-user.target", got)
	}
}
