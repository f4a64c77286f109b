package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// journaldConf keeps the test's journald to itself: its journal in memory
// (in the test's directory), no kernel log read, nothing forwarded, no
// rate limit.
const journaldConf = `[Journal]
Storage=volatile
ReadKMsg=no
ForwardToSyslog=no
ForwardToKMsg=no
ForwardToConsole=no
ForwardToWall=no
RateLimitBurst=0
`

// journaldScript runs in a private mount namespace (Go unshares it and makes
// / private). $1, the test's directory, becomes /run, where journald makes
// its sockets and volatile journal and reads journald.conf.d; $2 hides
// /var/log/journal. Dropping the audit capabilities keeps journald from
// joining the audit multicast group and from enabling kernel auditing,
// which is machine-wide.
const journaldScript = `set -e
mount --bind "$1" /run
if [ -d /var/log/journal ]; then mount --bind "$2" /var/log/journal; fi
exec setpriv --bounding-set -audit_control,-audit_read "$3"
`

type journald struct {
	socket, journalDir string
	log                *mpitest.Buffer
	exited             chan struct{}
}

// startJournald runs the system's real systemd-journald in a private mount
// namespace whose /run is a directory of the test, and returns once its
// native socket answers.
func startJournald(t *testing.T) *journald {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (mount namespace, journald)")
	}
	bin := ""
	for _, p := range []string{"/lib/systemd/systemd-journald", "/usr/lib/systemd/systemd-journald"} {
		if _, err := os.Stat(p); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		missing = append(missing, "systemd-journald (package systemd)")
	}
	for _, cmd := range []string{"journalctl", "setpriv", "mount", "sh"} {
		if _, err := exec.LookPath(cmd); err != nil {
			missing = append(missing, cmd)
		}
	}
	mpitest.Require(t, missing...)

	dir := t.TempDir()
	run, varlog := filepath.Join(dir, "run"), filepath.Join(dir, "varlog")
	confDir := filepath.Join(run, "systemd", "journald.conf.d")
	for _, d := range []string{varlog, confDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(confDir, "mpiprobe-test.conf"), []byte(journaldConf), 0o644); err != nil {
		t.Fatal(err)
	}
	j := &journald{
		socket:     filepath.Join(run, "systemd", "journal", "socket"),
		journalDir: filepath.Join(run, "log", "journal"),
		log:        &mpitest.Buffer{},
		exited:     make(chan struct{}),
	}
	if len(j.socket) >= len(unix.RawSockaddrUnix{}.Path) {
		t.Fatalf("socket path %s too long for AF_UNIX; set a shorter TMPDIR", j.socket)
	}

	cmd := exec.Command("sh", "-c", journaldScript, "sh", run, varlog, bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	// No NOTIFY_SOCKET, LISTEN_FDS or JOURNAL_STREAM of ours; journald's
	// own log goes to the test, not to the kernel's ring buffer.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "SYSTEMD_LOG_TARGET=console", "SYSTEMD_LOG_LEVEL=info"}
	cmd.Stdout, cmd.Stderr = j.log, j.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(j.exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-j.exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-j.exited
		}
	})

	deadline := time.Now().Add(15 * time.Second)
	for {
		s, err := NewNative(j.socket, "probe")
		if err == nil {
			s.Close()
			return j
		}
		select {
		case <-j.exited:
			t.Fatalf("systemd-journald exited: %v\n%s", cmd.ProcessState, j.log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("systemd-journald's socket never answered: %v\n%s", err, j.log)
		}
	}
}

// read returns the entries with SYSLOG_IDENTIFIER=ident once there are n,
// each field with its values as bytes.
func (j *journald) read(t *testing.T, ident string, n int) []map[string][]string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		cmd := exec.Command("journalctl", "--directory", j.journalDir, "--output", "json", "--all", "--no-pager",
			"SYSLOG_IDENTIFIER="+ident)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("journalctl: %v\n%s\njournald:\n%s", err, stderr.String(), j.log)
		}
		var entries []map[string][]string
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			e, err := parseJSONEntry(sc.Bytes())
			if err != nil {
				t.Fatalf("journalctl output %.200q: %v", sc.Bytes(), err)
			}
			entries = append(entries, e)
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		if len(entries) >= n || time.Now().After(deadline) {
			if len(entries) != n {
				t.Fatalf("journal has %d entries of %s, want %d\njournald:\n%s", len(entries), ident, n, j.log)
			}
			return entries
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// parseJSONEntry decodes journalctl's JSON form: a value is a string, or
// an array of byte values when it is not printable UTF-8, or an array of
// such values when the field repeats.
func parseJSONEntry(line []byte) (map[string][]string, error) {
	var raw map[string]any
	if err := json.Unmarshal(line, &raw); err != nil {
		return nil, err
	}
	e := map[string][]string{}
	for k, v := range raw {
		vals, err := jsonValues(v, true)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", k, err)
		}
		e[k] = vals
	}
	return e, nil
}

func jsonValues(v any, top bool) ([]string, error) {
	switch v := v.(type) {
	case string:
		return []string{v}, nil
	case []any:
		if len(v) > 0 {
			if _, ok := v[0].(float64); !ok && top {
				var out []string
				for _, x := range v {
					s, err := jsonValues(x, false)
					if err != nil {
						return nil, err
					}
					out = append(out, s...)
				}
				return out, nil
			}
		}
		b := make([]byte, len(v))
		for i, x := range v {
			f, ok := x.(float64)
			if !ok || f < 0 || f > 255 {
				return nil, fmt.Errorf("not a byte: %v", x)
			}
			b[i] = byte(f)
		}
		return []string{string(b)}, nil
	}
	return nil, fmt.Errorf("unexpected %T (null: value left out)", v)
}

func TestRealJournald(t *testing.T) {
	j := startJournald(t)
	const ident = "mpiprobe-journald-test"
	s, err := NewNative(j.socket, ident)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	big := strings.Repeat("0123456789abcdef", 300<<10/16) + "\nend"
	sent := []Entry{
		{Priority: Warning, Message: "rank 3 (pid 1234) on n1: MPI_Wait spinning for 12 s", Fields: []Field{
			{"HOST", "n1"}, {"JOB", "slurm-42\nsecond line"}, {"RANK", "3"}, {"PID", "1234"},
			{"EVENT", "wait-spin"}, {"COUNT", "17"}, {"COMM", "evil\x1b[2J\xff\x00"}, {"EMPTY", ""}, {"EXE", "/home/é/日本/a.out"}}},
		{Priority: Info, Message: "job slurm-42 summary\nRANK  EVENTS\n0     3\n1     0", Fields: []Field{{"JOB", "slurm-42"}}},
		{Priority: Err, Message: big, Fields: []Field{{"JOB", "memfd"}}},
		{Priority: Debug, Message: "repeated", Fields: []Field{{"RANK", "0"}, {"RANK", "1"}}},
	}
	for i, e := range sent {
		if i == 2 {
			// Force the memfd path for the 300 KiB entry.
			if err := unix.SetsockoptInt(s.(*native).fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 64<<10); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Send(e); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}

	got := j.read(t, ident, len(sent))
	for i, e := range sent {
		g := got[i]
		want := map[string][]string{
			"MESSAGE":           {e.Message},
			"PRIORITY":          {fmt.Sprint(int(e.Priority))},
			"SYSLOG_IDENTIFIER": {ident},
			"_TRANSPORT":        {"journal"},
		}
		for _, f := range e.Fields {
			want[f.Name] = append(want[f.Name], f.Value)
		}
		for name, w := range want {
			if !slices.Equal(g[name], w) {
				t.Errorf("entry %d: %s = %.200q, want %.200q", i, name, g[name], w)
			}
		}
		for name := range g {
			if _, ok := want[name]; !ok && !strings.HasPrefix(name, "_") {
				t.Errorf("entry %d: unexpected field %s = %.200q", i, name, g[name])
			}
		}
	}

	// Open picks the native sink when JOURNAL_STREAM matches stderr.
	o, err := Open(Options{
		Socket:     j.socket,
		Env:        func(k string) string { return map[string]string{"JOURNAL_STREAM": "8:9"}[k] },
		StderrStat: func() (uint64, uint64, error) { return 8, 9, nil },
		Identifier: ident + "-open",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.Send(Entry{Priority: Notice, Message: "via Open", Fields: []Field{{"HOST", "n2"}}}); err != nil {
		t.Fatal(err)
	}
	g := j.read(t, ident+"-open", 1)[0]
	if g["MESSAGE"][0] != "via Open" || g["HOST"][0] != "n2" || g["PRIORITY"][0] != "5" {
		t.Errorf("entry via Open = %q", g)
	}

	select {
	case <-j.exited:
		t.Fatalf("systemd-journald exited during the test\n%s", j.log)
	default:
	}
}
