package journal

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// sendBuffer is the SO_SNDBUF the native sink asks for, as the protocol
// recommends, so that most entries fit a datagram; the kernel caps it at
// net.core.wmem_max. Larger entries go through a memfd.
const sendBuffer = 8 << 20

// sendTimeout bounds how long a Send waits for a journald whose queue is
// full (SO_SNDTIMEO), so that a stuck journald cannot stall the caller.
const sendTimeout = 5 * time.Second

// native is the native protocol sink. Its socket is blocking, as libsystemd's
// is: the kernel then wakes a sender when journald drains its queue, which
// for an unconnected datagram socket it would not signal to Go's poller.
type native struct {
	mu    sync.RWMutex // held shared while sending, exclusively by Close
	fd    int          // -1 once closed
	path  string       // of journald's socket
	ident string
}

// NewNative returns a sink speaking the journal's native protocol to the
// datagram socket at socket (DefaultSocket when empty), with identifier
// (DefaultIdentifier when empty) as every entry's SYSLOG_IDENTIFIER. It
// sends one empty datagram, which journald ignores, so that a missing or
// dead journal is an error here rather than at the first Send. The socket
// is not connected, so entries reach a journald restarted meanwhile. A Send
// waits at most 5 s for room in journald's queue, then fails.
func NewNative(socket, identifier string) (Sink, error) {
	if socket == "" {
		socket = DefaultSocket
	}
	if identifier == "" {
		identifier = DefaultIdentifier
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("journal: open: socket: %w", err)
	}
	// Best effort: a smaller buffer only means more memfds.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, sendBuffer)
	tv := unix.NsecToTimeval(sendTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("journal: open: SO_SNDTIMEO: %w", err)
	}
	s := &native{fd: fd, path: socket, ident: identifier}
	if err := s.sendmsg(nil, nil); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("journal: open: %s: %w", socket, err)
	}
	return s, nil
}

// sendmsg sends one datagram; the caller holds s.mu shared. The address is
// built anew each time: unix.SockaddrUnix is not safe for concurrent use.
func (s *native) sendmsg(p, oob []byte) error {
	for {
		err := unix.Sendmsg(s.fd, p, oob, &unix.SockaddrUnix{Name: s.path}, 0)
		if err != unix.EINTR {
			return err
		}
	}
}

func (s *native) Send(e Entry) error {
	b, err := encode(e, s.ident)
	if err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.fd < 0 {
		return fmt.Errorf("journal: send: %w", ErrClosed)
	}
	err = s.sendmsg(b, nil)
	if err == unix.EMSGSIZE || err == unix.ENOBUFS {
		err = s.sendMemfd(b)
	}
	if err != nil {
		return fmt.Errorf("journal: send: %w", err)
	}
	return nil
}

// sendMemfd sends b the protocol's second way: in a fully sealed memfd
// passed with SCM_RIGHTS in an otherwise empty datagram.
func (s *native) sendMemfd(b []byte) error {
	fd, err := unix.MemfdCreate("mpiprobe-journal", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return fmt.Errorf("memfd_create: %w", err)
	}
	defer unix.Close(fd)
	for p := b; len(p) > 0; {
		n, err := unix.Write(fd, p)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("write memfd: %w", err)
		}
		p = p[n:]
	}
	seals := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		return fmt.Errorf("seal memfd: %w", err)
	}
	if err := s.sendmsg(nil, unix.UnixRights(fd)); err != nil {
		return fmt.Errorf("memfd: %w", err)
	}
	return nil
}

func (s *native) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd < 0 {
		return nil
	}
	err := unix.Close(s.fd)
	s.fd = -1
	if err != nil {
		return fmt.Errorf("journal: close: %w", err)
	}
	return nil
}

// encode returns the native protocol's serialization of e: MESSAGE,
// PRIORITY, SYSLOG_IDENTIFIER=identifier, then e.Fields in order. A value
// containing a newline is written in the binary form, every other one as
// NAME=value.
func encode(e Entry, identifier string) ([]byte, error) {
	if err := validate(e); err != nil {
		return nil, err
	}
	prio := strconv.Itoa(int(e.Priority))
	n := fieldSize("MESSAGE", e.Message) + fieldSize("PRIORITY", prio) + fieldSize("SYSLOG_IDENTIFIER", identifier)
	for _, f := range e.Fields {
		n += fieldSize(f.Name, f.Value)
	}
	b := make([]byte, 0, n)
	b = appendField(b, "MESSAGE", e.Message)
	b = appendField(b, "PRIORITY", prio)
	b = appendField(b, "SYSLOG_IDENTIFIER", identifier)
	for _, f := range e.Fields {
		b = appendField(b, f.Name, f.Value)
	}
	return b, nil
}

func fieldSize(name, value string) int {
	if strings.IndexByte(value, '\n') >= 0 {
		return len(name) + 1 + 8 + len(value) + 1
	}
	return len(name) + 1 + len(value) + 1
}

func appendField(b []byte, name, value string) []byte {
	b = append(b, name...)
	if strings.IndexByte(value, '\n') >= 0 {
		b = append(b, '\n')
		b = binary.LittleEndian.AppendUint64(b, uint64(len(value)))
	} else {
		b = append(b, '=')
	}
	b = append(b, value...)
	return append(b, '\n')
}
