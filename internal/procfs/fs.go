package procfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// DefaultRoot is the mount point of procfs used when FS.Root is empty.
const DefaultRoot = "/proc"

// FS reads process information from a procfs tree. The zero value reads
// the host's /proc, every process of it. FS holds no state besides Root
// and Net and is safe for concurrent use.
type FS struct {
	// Root is the procfs mount point; "" means DefaultRoot ("/proc").
	// Tests point it at a temporary directory with the same layout.
	Root string
	// Net, when set, scopes f to the processes of that network namespace
	// (mpiprobe --scope netns, as a pod's sidecar or a node of the test
	// cluster watches its own): PIDs lists only those, and InScope tells
	// them from the others. nil: every process (--scope host).
	Net *NS
}

// root returns Root or its default.
func (f FS) root() string {
	if f.Root == "" {
		return DefaultRoot
	}
	return f.Root
}

// pidPath returns Root/PID/name.
func (f FS) pidPath(pid int, name string) string {
	return filepath.Join(f.root(), strconv.Itoa(pid), name)
}

// read reads Root/PID/name. A process that is gone gives an error that
// matches fs.ErrNotExist, whether the kernel said ENOENT (no such
// directory) or ESRCH (the process exited while the file was open).
func (f FS) read(pid int, name string) ([]byte, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("read %s of %d: invalid pid: %w", name, pid, fs.ErrNotExist)
	}
	data, err := os.ReadFile(f.pidPath(pid, name))
	if err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil, fmt.Errorf("read %s of %d: %w (%w)", name, pid, fs.ErrNotExist, err)
		}
		return nil, fmt.Errorf("read %s of %d: %w", name, pid, err)
	}
	return data, nil
}

// Maps reads and parses /proc/PID/maps. Kernel threads and zombies have
// no mappings and give an empty result.
func (f FS) Maps(pid int) ([]Mapping, error) {
	data, err := f.read(pid, "maps")
	if err != nil {
		return nil, err
	}
	m, err := ParseMaps(data)
	if err != nil {
		return nil, fmt.Errorf("parse maps of %d: %w", pid, err)
	}
	return m, nil
}

// Environ reads and parses /proc/PID/environ, the environment the process
// was started with. Reading another user's environment needs
// CAP_SYS_PTRACE (or ptrace access), else the error matches
// fs.ErrPermission.
func (f FS) Environ(pid int) (map[string]string, error) {
	data, err := f.read(pid, "environ")
	if err != nil {
		return nil, err
	}
	return ParseEnviron(data), nil
}

// Stat reads and parses /proc/PID/stat.
func (f FS) Stat(pid int) (Stat, error) {
	data, err := f.read(pid, "stat")
	if err != nil {
		return Stat{}, err
	}
	s, err := ParseStat(data)
	if err != nil {
		return Stat{}, fmt.Errorf("parse stat of %d: %w", pid, err)
	}
	return s, nil
}

// Comm reads /proc/PID/comm, the command name (at most 15 bytes), without
// its trailing newline.
func (f FS) Comm(pid int) (string, error) {
	data, err := f.read(pid, "comm")
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(data), "\n"), nil
}

// PIDs lists the numeric entries of Root (the processes visible in this
// pid namespace, not their threads) in ascending order; with Net set,
// only those InScope.
func (f FS) PIDs() ([]int, error) {
	entries, err := os.ReadDir(f.root())
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	pids := make([]int, 0, len(entries))
	for _, e := range entries {
		v, err := parseDecimal(e.Name())
		if err != nil || v == 0 || v > 1<<31-1 || !f.InScope(int(v)) {
			continue
		}
		pids = append(pids, int(v))
	}
	slices.Sort(pids)
	return pids, nil
}

// PidMax reads Root/sys/kernel/pid_max: process and thread ids stay below
// it.
func (f FS) PidMax() (int, error) {
	data, err := os.ReadFile(filepath.Join(f.root(), "sys", "kernel", "pid_max"))
	if err != nil {
		return 0, fmt.Errorf("read pid_max: %w", err)
	}
	v, err := parseDecimal(strings.TrimSuffix(string(data), "\n"))
	if err != nil || v == 0 || v > 1<<31-1 {
		return 0, fmt.Errorf("read pid_max: %q is not a pid limit", strings.TrimSpace(string(data)))
	}
	return int(v), nil
}

// MapFile returns the path Root/PID/map_files/<start>-<end> (lowercase hex,
// no 0x) through which the file behind m can be opened from the host even
// when the process lives in another mount namespace, or the file was
// deleted. Opening it needs CAP_SYS_ADMIN.
func (f FS) MapFile(pid int, m Mapping) string {
	return filepath.Join(f.root(), strconv.Itoa(pid), "map_files",
		strconv.FormatUint(m.Start, 16)+"-"+strconv.FormatUint(m.End, 16))
}

// RootPath returns Root/PID/root followed by p, i.e. p as seen from the
// process's root directory (its container's file system). p is cleaned as
// an absolute path first, so ".." cannot climb above Root/PID/root.
// Symbolic links inside the process's tree are still resolved by the
// kernel relative to the caller's root, so prefer MapFile for mapped files.
func (f FS) RootPath(pid int, p string) string {
	return filepath.Join(f.root(), strconv.Itoa(pid), "root") + path.Clean("/"+p)
}

// ExeFile returns a path to open the program a process runs by
// (/proc/PID/exe): the file itself, wherever its root is.
func (f FS) ExeFile(pid int) string { return f.pidPath(pid, "exe") }

// Exe returns the path of the program a process runs (/proc/PID/exe).
func (f FS) Exe(pid int) (string, error) {
	if pid <= 0 {
		return "", fmt.Errorf("pid %d: %w", pid, fs.ErrNotExist)
	}
	return os.Readlink(f.pidPath(pid, "exe"))
}
