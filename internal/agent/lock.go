package agent

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mpiprobe/mpiprobe/internal/kernel"
)

// lock is an exclusive lock on the state directory: one agent per node
// (per state directory). The kernel drops it when the process dies, so a
// crashed agent never blocks the next one.
type lock struct {
	f *os.File
	// dir is true for a directory's lock, which has no pid written in it.
	dir bool
}

// takeLock locks <dir>/agent.lock or says which agent holds it; where
// says where the state and pin directories are set (" in FILE or with
// --state-dir and --pin-dir"), for the message.
func takeLock(dir, where string) (*lock, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create state directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, "agent.lock")
	// A symbolic link planted at the lock is not followed: the pid written
	// into the lock would overwrite the file it points to.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o640)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("lock %s is a symbolic link, which the agent does not follow: remove it", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s is not a regular file: remove it", path)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			who := "another process"
			if pid, perr := strconv.Atoi(string(bytes.TrimSpace(holder))); perr == nil {
				who = "pid " + strconv.Itoa(pid)
			}
			return nil, fmt.Errorf("another mpiprobe agent (%s) already runs with state directory %s: stop it first (systemctl stop mpiprobe), or give this one its own state_dir and pin_dir%s", who, dir, where)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &lock{f: f}, nil
}

func (l *lock) release() {
	if !l.dir {
		_ = l.f.Truncate(0)
	}
	_ = l.f.Close()
}

// lockPinDir locks the pin directory itself (created if need be): two
// agents sharing one would detach each other's probes and read each
// other's exits, whatever their state directories. The BPF file system
// holds no regular files, so the lock is a flock on the directory and its
// holder is found in /proc/locks.
func lockPinDir(dir, where string) (*lock, error) {
	if strings.HasPrefix(dir, "/sys/fs/bpf/") {
		if err := kernel.MountBPFFS("/sys/fs/bpf"); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create pin directory %s: %w (is the BPF file system mounted at /sys/fs/bpf?)", dir, err)
	}
	l, who, err := flockDir(dir)
	if who != "" {
		return nil, fmt.Errorf("another mpiprobe agent (%s) already uses pin directory %s: stop it first (systemctl stop mpiprobe), or give this one its own pin_dir%s", who, dir, where)
	}
	return l, err
}

// flockDir locks the existing directory dir. When another process holds
// the lock, who names it ("pid N", or "another process") and the error is
// the kernel's.
func flockDir(dir string) (l *lock, who string, err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, "", fmt.Errorf("open pin directory %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		who = "another process"
		if pid := flockHolder(f, "/proc/locks"); pid > 0 {
			who = "pid " + strconv.Itoa(pid)
		}
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, who, err
		}
		return nil, "", fmt.Errorf("lock %s: %w", dir, err)
	}
	return &lock{f: f, dir: true}, "", nil
}

// flockHolder returns the pid holding a flock on f's file according to
// the lock list at path (/proc/locks), 0 when it cannot be told.
func flockHolder(f *os.File, path string) int {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return parseLocks(data, unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
}

// parseLocks finds, in the text of /proc/locks, the pid of the FLOCK on
// the file of that device and inode: lines such as
// "3: FLOCK  ADVISORY  WRITE 4242 00:1f:1093 0 EOF" (device numbers in
// hex, the inode in decimal); 0 when none.
func parseLocks(data []byte, major, minor uint32, ino uint64) int {
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, ino)
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		// "N:" FLOCK ADVISORY WRITE PID DEV:INODE START END; blocked
		// waiters have "->" after the number.
		if len(f) > 1 && f[1] == "->" {
			continue
		}
		if len(f) < 6 || f[1] != "FLOCK" || f[5] != want {
			continue
		}
		if pid, err := strconv.Atoi(f[4]); err == nil && pid > 0 {
			return pid
		}
	}
	return 0
}
