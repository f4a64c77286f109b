package agent

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// lock is an exclusive lock on the state directory: one agent per node
// (per state directory). The kernel drops it when the process dies, so a
// crashed agent never blocks the next one.
type lock struct{ f *os.File }

// takeLock locks <dir>/agent.lock or says which agent holds it.
func takeLock(dir string) (*lock, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create state directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, "agent.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			who := "another process"
			if pid, perr := strconv.Atoi(string(bytes.TrimSpace(holder))); perr == nil {
				who = "pid " + strconv.Itoa(pid)
			}
			return nil, fmt.Errorf("another mpiprobe agent (%s) already runs with state directory %s: stop it first (systemctl stop mpiprobe), or give this one its own state_dir and pin_dir", who, dir)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &lock{f: f}, nil
}

func (l *lock) release() {
	_ = l.f.Truncate(0)
	_ = l.f.Close()
}
