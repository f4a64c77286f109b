package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestUnderJournal(t *testing.T) {
	const dev, ino = 25, 123456
	for _, tc := range []struct {
		name   string
		stream string // "-" for unset
		want   bool
	}{
		{"unset", "-", false},
		{"empty", "", false},
		{"match", "25:123456", true},
		{"other inode", "25:123457", false},
		{"other device", "26:123456", false},
		{"swapped", "123456:25", false},
		{"no colon", "25123456", false},
		{"only device", "25:", false},
		{"only inode", ":123456", false},
		{"three parts", "25:123456:7", false},
		{"leading space", " 25:123456", false},
		{"trailing newline", "25:123456\n", false},
		{"plus sign", "+25:123456", false},
		{"minus sign", "25:-123456", false},
		{"hex", "0x19:123456", false},
		{"underscore", "25:123_456", false},
		{"overflow", "18446744073709551641:123456", false},
		{"leading zeros", "025:0123456", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := func(k string) string {
				if k == "JOURNAL_STREAM" && tc.stream != "-" {
					return tc.stream
				}
				return ""
			}
			if got := UnderJournal(env, dev, ino); got != tc.want {
				t.Fatalf("UnderJournal(JOURNAL_STREAM=%q, %d, %d) = %v, want %v", tc.stream, dev, ino, got, tc.want)
			}
		})
	}
	t.Run("largest numbers", func(t *testing.T) {
		env := func(string) string { return "18446744073709551615:18446744073709551615" }
		if !UnderJournal(env, 1<<64-1, 1<<64-1) {
			t.Fatal("no match")
		}
	})
	t.Run("nil env", func(t *testing.T) {
		if UnderJournal(nil, 0, 0) {
			t.Fatal("nil env matched")
		}
	})
}

func TestOpen(t *testing.T) {
	c, path := listen(t)
	stat := func() (uint64, uint64, error) { return 7, 42, nil }
	for _, tc := range []struct {
		name   string
		stream string
		stat   func() (uint64, uint64, error)
		native bool
	}{
		{"under the journal", "7:42", stat, true},
		{"redirected stderr", "7:43", stat, false},
		{"not under systemd", "", stat, false},
		{"stderr closed", "7:42", func() (uint64, uint64, error) { return 0, 0, syscall.EBADF }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			s, err := Open(Options{
				Socket:     path,
				Stderr:     &stderr,
				Env:        func(k string) string { return map[string]string{"JOURNAL_STREAM": tc.stream}[k] },
				StderrStat: tc.stat,
				Identifier: "agent",
			})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Send(Entry{Priority: Warning, Message: "hello", Fields: []Field{{"HOST", "n1"}}}); err != nil {
				t.Fatal(err)
			}
			if !tc.native {
				if _, ok := s.(*textSink); !ok {
					t.Fatalf("Open returned %T, want the text sink", s)
				}
				if got := stderr.String(); got != "warning: hello\n" {
					t.Fatalf("stderr = %q", got)
				}
				return
			}
			if _, ok := s.(*native); !ok {
				t.Fatalf("Open returned %T, want the native sink", s)
			}
			if stderr.Len() != 0 {
				t.Fatalf("native sink wrote %q to stderr", stderr.String())
			}
			receive(t, c) // probe
			wantFields(t, receive(t, c), []kv{{"MESSAGE", "hello"}, {"PRIORITY", "4"}, {"SYSLOG_IDENTIFIER", "agent"}, {"HOST", "n1"}})
		})
	}
	t.Run("under the journal without its socket", func(t *testing.T) {
		_, err := Open(Options{
			Socket:     filepath.Join(t.TempDir(), "none"),
			Env:        func(string) string { return "7:42" },
			StderrStat: stat,
		})
		if err == nil || !strings.HasPrefix(err.Error(), "journal: open: ") {
			t.Fatalf("Open = %v, want journal: open: error", err)
		}
	})
}

// TestOpenHelper is the child process of TestOpenRealStderr: with the
// defaults of Open (os.Getenv and fstat of its real stderr) it sends one
// entry.
func TestOpenHelper(t *testing.T) {
	socket := os.Getenv("MPIPROBE_JOURNAL_HELPER_SOCKET")
	if socket == "" {
		return
	}
	s, err := Open(Options{Socket: socket, Identifier: "helper"})
	if err != nil {
		fmt.Println("helper:", err)
		os.Exit(3)
	}
	if err := s.Send(Entry{Priority: Notice, Message: "from helper"}); err != nil {
		fmt.Println("helper:", err)
		os.Exit(3)
	}
	s.Close()
}

// TestOpenRealStderr runs a child whose stderr is a file and whose
// JOURNAL_STREAM names that file or not, as systemd would, so that the
// default fstat of file descriptor 2 is what decides.
func TestOpenRealStderr(t *testing.T) {
	c, path := listen(t)
	for _, tc := range []struct {
		name   string
		stream func(dev, ino uint64) string
		native bool
	}{
		{"matching", func(d, i uint64) string { return fmt.Sprintf("%d:%d", d, i) }, true},
		{"other inode", func(d, i uint64) string { return fmt.Sprintf("%d:%d", d, i+1) }, false},
		{"unset", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fi, err := f.Stat()
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			cmd := exec.Command(os.Args[0], "-test.run=^TestOpenHelper$", "-test.count=1")
			cmd.Env = append(os.Environ(), "MPIPROBE_JOURNAL_HELPER_SOCKET="+path)
			cmd.Env = withoutEnv(cmd.Env, "JOURNAL_STREAM")
			if tc.stream != nil {
				cmd.Env = append(cmd.Env, "JOURNAL_STREAM="+tc.stream(uint64(st.Dev), st.Ino))
			}
			cmd.Stderr = f
			if out, err := cmd.Output(); err != nil {
				t.Fatalf("helper: %v\n%s", err, out)
			}
			b, err := os.ReadFile(f.Name())
			if err != nil {
				t.Fatal(err)
			}
			if tc.native {
				if len(b) != 0 {
					t.Errorf("native sink chosen, but stderr got %q", b)
				}
				receive(t, c) // probe
				wantFields(t, receive(t, c), []kv{{"MESSAGE", "from helper"}, {"PRIORITY", "5"}, {"SYSLOG_IDENTIFIER", "helper"}})
				return
			}
			if !bytes.Contains(b, []byte("notice: from helper\n")) {
				t.Errorf("stderr = %q, want the text entry", b)
			}
			if d, err := receiveErr(c, 100*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("text sink chosen, but the socket got %q (%v)", d.payload, err)
			}
		})
	}
}

func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func TestPriorityString(t *testing.T) {
	for p, want := range map[Priority]string{Err: "error", Warning: "warning", Notice: "notice", Info: "info", Debug: "debug", 0: "priority(0)", 9: "priority(9)"} {
		if got := p.String(); got != want {
			t.Errorf("Priority(%d).String() = %q, want %q", int(p), got, want)
		}
	}
}
