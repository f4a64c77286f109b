package procfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// NS names a namespace by the device and inode of its file under
// /proc/PID/ns: two processes share a namespace when both are equal.
type NS struct {
	Dev, Ino uint64
}

// Namespace returns the namespace of kind ("net", "uts"...) that process
// pid is in. A gone process gives an error matching fs.ErrNotExist.
func (f FS) Namespace(pid int, kind string) (NS, error) {
	if pid <= 0 {
		return NS{}, fmt.Errorf("read %s namespace of %d: invalid pid: %w", kind, pid, fs.ErrNotExist)
	}
	return f.namespaceAt(f.pidPath(pid, filepath.Join("ns", kind)))
}

// ownNamespace returns the namespace of kind that the reader is in,
// through Root/self.
func (f FS) ownNamespace(kind string) (NS, error) {
	return f.namespaceAt(filepath.Join(f.root(), "self", "ns", kind))
}

func (f FS) namespaceAt(p string) (NS, error) {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		if errors.Is(err, syscall.ESRCH) || errors.Is(err, syscall.ENOENT) {
			return NS{}, fmt.Errorf("stat %s: %w (%w)", p, fs.ErrNotExist, err)
		}
		return NS{}, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	return NS{Dev: st.Dev, Ino: st.Ino}, nil
}

// Values of --scope (MPIPROBE_SCOPE, the configuration's scope key).
const (
	// ScopeHost watches every process of the host.
	ScopeHost = "host"
	// ScopeNetns watches the processes of mpiprobe's own network
	// namespace only, as a pod's sidecar, or a node of a simulated
	// cluster, must.
	ScopeNetns = "netns"
)

// CheckScope checks a scope's name; from says where it was given
// ("--scope", "MPIPROBE_SCOPE", the configuration file's key).
func CheckScope(scope, from string) error {
	if scope != ScopeHost && scope != ScopeNetns {
		return fmt.Errorf("%s %q: give host (every process of this host) or netns (only those of mpiprobe's network namespace)", from, scope)
	}
	return nil
}

// Scoped returns f limited to scope (CheckScope's names): every process
// for host, else those of mpiprobe's own network namespace (OwnNet).
func (f FS) Scoped(scope string) (FS, error) {
	if err := CheckScope(scope, "scope"); err != nil {
		return f, err
	}
	if scope == ScopeHost {
		f.Net = nil
		return f, nil
	}
	return f.OwnNet()
}

// OwnNet returns f scoped to the network namespace mpiprobe runs in
// (--scope netns): see FS.Net.
func (f FS) OwnNet() (FS, error) {
	ns, err := f.ownNamespace("net")
	if err != nil {
		return f, fmt.Errorf("read mpiprobe's own network namespace: %w", err)
	}
	f.Net = &ns
	return f, nil
}

// InScope reports whether process pid is one f watches: every process
// when f.Net is nil, else those of network namespace *f.Net. A process
// whose namespace cannot be read (gone, or not allowed) is not.
func (f FS) InScope(pid int) bool {
	if f.Net == nil {
		return true
	}
	ns, err := f.Namespace(pid, "net")
	return err == nil && ns == *f.Net
}

// Hostname returns the host name of process pid's UTS namespace: the name
// of the node (or container) it runs on, which /proc/sys/kernel/hostname
// shows only for the reader's own namespace. A process of the reader's
// namespace gets os.Hostname; another one's is read in its namespace
// (InNamespace, which needs CAP_SYS_ADMIN).
func (f FS) Hostname(pid int) (string, error) {
	target, err := f.Namespace(pid, "uts")
	if err != nil {
		return "", err
	}
	if own, err := f.ownNamespace("uts"); err == nil && own == target {
		return os.Hostname()
	}
	var name string
	err = f.InNamespace(f.pidPath(pid, filepath.Join("ns", "uts")), unix.CLONE_NEWUTS, func() error {
		var u unix.Utsname
		if err := unix.Uname(&u); err != nil {
			return fmt.Errorf("uname in uts namespace of %d: %w", pid, err)
		}
		name = unix.ByteSliceToString(u.Nodename[:])
		return nil
	})
	return name, err
}

// InNamespace runs fn in the namespace the file ns names (a
// /proc/PID/ns/KIND link, or a file bind-mounted from one) of kind nstype
// (unix.CLONE_NEWUTS, unix.CLONE_NEWNET): on an OS thread locked to its
// goroutine, which joins the namespace (setns, which needs
// CAP_SYS_ADMIN) and goes back to its own before it is unlocked. A
// thread that cannot go back stays locked: the runtime ends it with the
// goroutine (or, the main thread, parks it forever), so that no other Go
// code runs in the foreign namespace. What fn makes there stays there: a
// socket opened in a network namespace is that namespace's.
func (f FS) InNamespace(ns string, nstype int, fn func() error) error {
	kinds := map[int]string{unix.CLONE_NEWUTS: "uts", unix.CLONE_NEWNET: "net", unix.CLONE_NEWIPC: "ipc"}
	kind, ok := kinds[nstype]
	if !ok {
		return fmt.Errorf("namespace %s: kind %#x is not one InNamespace enters", ns, nstype)
	}
	file, err := os.Open(ns)
	if err != nil {
		return fmt.Errorf("open namespace %s: %w", ns, err)
	}
	defer file.Close()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open(filepath.Join(f.root(), "thread-self", "ns", kind))
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("open own %s namespace: %w", kind, err)
			return
		}
		defer home.Close()
		if err := unix.Setns(int(file.Fd()), nstype); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("enter namespace %s: %w", ns, err)
			return
		}
		err = fn()
		if unix.Setns(int(home.Fd()), nstype) == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

// Cmdline reads /proc/PID/cmdline: the process's arguments. A kernel
// thread or a zombie has none.
func (f FS) Cmdline(pid int) ([]string, error) {
	data, err := f.read(pid, "cmdline")
	if err != nil {
		return nil, err
	}
	s := strings.TrimSuffix(string(data), "\x00")
	if s == "" {
		return nil, nil
	}
	return strings.Split(s, "\x00"), nil
}
