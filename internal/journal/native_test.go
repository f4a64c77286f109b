package journal

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// datagram is what a fake journald received: the payload, or the contents
// of the memfd passed with it.
type datagram struct {
	payload []byte
	memfd   bool
	seals   int
}

// listen binds a unixgram socket in a temporary directory, standing in for
// journald's socket.
func listen(t *testing.T) (*net.UnixConn, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "socket")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, path
}

// receive reads one datagram as journald would: either a payload without
// descriptors, or an empty payload with exactly one memfd.
func receive(t *testing.T, c *net.UnixConn) datagram {
	t.Helper()
	d, err := receiveErr(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func receiveErr(c *net.UnixConn, timeout time.Duration) (datagram, error) {
	buf := make([]byte, 1<<20)
	oob := make([]byte, unix.CmsgSpace(4*4))
	c.SetReadDeadline(time.Now().Add(timeout))
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return datagram{}, err
	}
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		return datagram{}, fmt.Errorf("truncated datagram (flags %#x)", flags)
	}
	if oobn == 0 {
		return datagram{payload: buf[:n]}, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return datagram{}, err
	}
	var fds []int
	for _, m := range msgs {
		r, err := unix.ParseUnixRights(&m)
		if err != nil {
			return datagram{}, err
		}
		fds = append(fds, r...)
	}
	for _, fd := range fds {
		defer unix.Close(fd)
	}
	if n != 0 || len(fds) != 1 {
		return datagram{}, fmt.Errorf("datagram with %d payload bytes and %d descriptors", n, len(fds))
	}
	seals, err := unix.FcntlInt(uintptr(fds[0]), unix.F_GET_SEALS, 0)
	if err != nil {
		return datagram{}, fmt.Errorf("not a memfd: %v", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fds[0], &st); err != nil {
		return datagram{}, err
	}
	// The descriptor shares the sender's file offset, at the end: read
	// from 0 as journald does.
	payload := make([]byte, st.Size)
	if _, err := unix.Pread(fds[0], payload, 0); err != nil {
		return datagram{}, err
	}
	return datagram{payload: payload, memfd: true, seals: seals}, nil
}

// newTestNative opens a native sink on a fresh fake journald and consumes
// its probe datagram.
func newTestNative(t *testing.T) (*native, *net.UnixConn) {
	t.Helper()
	c, path := listen(t)
	s, err := NewNative(path, "mpiprobe-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if d := receive(t, c); len(d.payload) != 0 || d.memfd {
		t.Fatalf("probe datagram = %+v, want empty", d)
	}
	return s.(*native), c
}

func wantFields(t *testing.T, d datagram, want []kv) {
	t.Helper()
	got, err := decode(d.payload)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("fields:\n got %.300q\nwant %.300q", got, want)
	}
}

func TestNativeSend(t *testing.T) {
	s, c := newTestNative(t)
	for _, tc := range []struct {
		name  string
		entry Entry
		want  []kv
	}{
		{
			name: "warning",
			entry: Entry{Priority: Warning, Message: "rank 3 (pid 1234) on n1: MPI_Wait spinning", Fields: []Field{
				{"HOST", "n1"}, {"JOB", "slurm-42"}, {"RANK", "3"}, {"PID", "1234"}, {"EVENT", "wait-spin"}, {"COUNT", "17"}}},
			want: []kv{{"MESSAGE", "rank 3 (pid 1234) on n1: MPI_Wait spinning"}, {"PRIORITY", "4"}, {"SYSLOG_IDENTIFIER", "mpiprobe-test"},
				{"HOST", "n1"}, {"JOB", "slurm-42"}, {"RANK", "3"}, {"PID", "1234"}, {"EVENT", "wait-spin"}, {"COUNT", "17"}},
		},
		{
			name:  "summary table",
			entry: Entry{Priority: Info, Message: "job 42 summary\nRANK  EVENTS\n0     3\n1     0\n", Fields: []Field{{"JOB", "42"}}},
			want: []kv{{"MESSAGE", "job 42 summary\nRANK  EVENTS\n0     3\n1     0\n"}, {"PRIORITY", "6"}, {"SYSLOG_IDENTIFIER", "mpiprobe-test"},
				{"JOB", "42"}},
		},
		{
			name: "user-controlled values arrive intact",
			entry: Entry{Priority: Err, Message: "m", Fields: []Field{
				{"COMM", "evil\x1b[2J\r\nFAKE=1"}, {"JOB", "\xff\xfe\x00"}, {"PATH", "/home/é/日本/a b"}, {"EMPTY", ""}}},
			want: []kv{{"MESSAGE", "m"}, {"PRIORITY", "3"}, {"SYSLOG_IDENTIFIER", "mpiprobe-test"},
				{"COMM", "evil\x1b[2J\r\nFAKE=1"}, {"JOB", "\xff\xfe\x00"}, {"PATH", "/home/é/日本/a b"}, {"EMPTY", ""}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Send(tc.entry); err != nil {
				t.Fatal(err)
			}
			d := receive(t, c)
			if d.memfd {
				t.Error("small entry sent through a memfd")
			}
			wantFields(t, d, tc.want)
		})
	}
}

func TestNativeMemfd(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 300<<10/16) // 300 KiB
	for _, tc := range []struct {
		name    string
		sndbuf  int // 0: as NewNative leaves it
		message string
	}{
		// The kernel doubles SO_SNDBUF; a datagram must fit in it.
		{"300 KiB over a 64 KiB send buffer", 64 << 10, big + "\nlast line"},
		// NewNative asks for 8 MiB, capped by net.core.wmem_max; the
		// message is made 1 MiB larger than what the kernel granted.
		{"beyond the default send buffer", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := newTestNative(t)
			if tc.sndbuf > 0 {
				if err := unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, tc.sndbuf); err != nil {
					t.Fatal(err)
				}
			}
			if tc.message == "" {
				granted, err := unix.GetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
				if err != nil {
					t.Fatal(err)
				}
				tc.message = strings.Repeat("x", granted+1<<20)
			}
			e := Entry{Priority: Info, Message: tc.message, Fields: []Field{{"JOB", "a\nb"}, {"HOST", "n1"}}}
			if err := s.Send(e); err != nil {
				t.Fatal(err)
			}
			d := receive(t, c)
			if !d.memfd {
				t.Fatalf("%d-byte entry arrived as a plain datagram", len(d.payload))
			}
			all := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_SEAL
			if d.seals&all != all {
				t.Errorf("memfd seals = %#x, want %#x", d.seals, all)
			}
			wantFields(t, d, []kv{{"MESSAGE", tc.message}, {"PRIORITY", "6"}, {"SYSLOG_IDENTIFIER", "mpiprobe-test"},
				{"JOB", "a\nb"}, {"HOST", "n1"}})

			// A small entry after it still goes as a datagram.
			if err := s.Send(Entry{Priority: Debug, Message: "small"}); err != nil {
				t.Fatal(err)
			}
			if d := receive(t, c); d.memfd {
				t.Error("small entry after a large one sent through a memfd")
			}
		})
	}
}

func TestNativeErrors(t *testing.T) {
	t.Run("invalid field name sends nothing", func(t *testing.T) {
		s, c := newTestNative(t)
		err := s.Send(Entry{Priority: Warning, Message: "m", Fields: []Field{{"HOST", "n1"}, {"rank", "3"}}})
		if err == nil || !strings.Contains(err.Error(), `"rank"`) {
			t.Fatalf("Send = %v, want an error naming \"rank\"", err)
		}
		if d, err := receiveErr(c, 100*time.Millisecond); err == nil {
			t.Fatalf("received %q", d.payload)
		}
	})
	t.Run("no socket", func(t *testing.T) {
		_, err := NewNative(filepath.Join(t.TempDir(), "missing"), "")
		if !errors.Is(err, unix.ENOENT) || !strings.HasPrefix(err.Error(), "journal: open: ") {
			t.Fatalf("NewNative = %v, want journal: open: ... ENOENT", err)
		}
	})
	t.Run("nobody listening", func(t *testing.T) {
		c, path := listen(t)
		c.Close() // the socket file stays, unbound
		_, err := NewNative(path, "")
		if !errors.Is(err, unix.ECONNREFUSED) {
			t.Fatalf("NewNative = %v, want ECONNREFUSED", err)
		}
	})
	t.Run("journald gone after open", func(t *testing.T) {
		s, c := newTestNative(t)
		c.Close()
		err := s.Send(Entry{Priority: Info, Message: "m"})
		if !errors.Is(err, unix.ECONNREFUSED) || !strings.HasPrefix(err.Error(), "journal: send: ") {
			t.Fatalf("Send = %v, want journal: send: ... ECONNREFUSED", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		s, _ := newTestNative(t)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close = %v", err)
		}
		if err := s.Send(Entry{Priority: Info, Message: "m"}); !errors.Is(err, ErrClosed) {
			t.Fatalf("Send after Close = %v, want ErrClosed", err)
		}
	})
}

func TestNativeRestartedJournal(t *testing.T) {
	c, path := listen(t)
	s, err := NewNative(path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	receive(t, c)
	// journald restarts: a new socket at the same path.
	c.Close()
	os.Remove(path)
	c2, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := s.Send(Entry{Priority: Notice, Message: "after restart"}); err != nil {
		t.Fatal(err)
	}
	wantFields(t, receive(t, c2), []kv{{"MESSAGE", "after restart"}, {"PRIORITY", "5"}, {"SYSLOG_IDENTIFIER", "mpiprobe"}})
}

func TestNativeConcurrent(t *testing.T) {
	s, c := newTestNative(t)
	const senders, each = 8, 25
	got := make(chan error, 1)
	go func() {
		seen := map[string]bool{}
		for range senders * each {
			d, err := receiveErr(c, 10*time.Second)
			if err != nil {
				got <- err
				return
			}
			f, err := decode(d.payload)
			if err != nil || len(f) != 4 || f[3].name != "SEQ" || f[0].value != "m "+f[3].value {
				got <- fmt.Errorf("bad datagram %q: %v", d.payload, err)
				return
			}
			seen[f[3].value] = true
		}
		if len(seen) != senders*each {
			got <- fmt.Errorf("%d distinct entries, want %d", len(seen), senders*each)
			return
		}
		got <- nil
	}()
	var wg sync.WaitGroup
	for i := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				seq := fmt.Sprintf("%d.%d", i, j)
				if err := s.Send(Entry{Priority: Info, Message: "m " + seq, Fields: []Field{{"SEQ", seq}}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}
