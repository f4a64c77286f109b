package discover

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/probes"
)

// Root is the root directory of a process (chroot, a container's or
// unshare --root's), as /proc/PID/root shows it.
type Root struct {
	// Link is where /proc/PID/root points, as mpiprobe sees it: "/" for a
	// process of mpiprobe's own root, the chroot directory for one in a
	// chroot, and for one of another mount namespace whatever path the
	// kernel gives.
	Link string
	// Dev and Inode identify the root directory: two processes with the
	// same are in the same root, whatever Link says.
	Dev, Inode uint64
}

// RootOf returns the root directory of process pid.
func RootOf(pfs procfs.FS, pid int) (Root, error) {
	dir := pfs.RootPath(pid, "/")
	link, err := os.Readlink(strings.TrimSuffix(dir, "/"))
	if err != nil {
		return Root{}, err
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return Root{}, err
	}
	return Root{Link: link, Dev: st.Dev, Inode: st.Ino}, nil
}

// Hold stops process pid (SIGSTOP, sent with signal) while the libraries
// it is about to map are attached: attaching takes tens of milliseconds,
// in which a launcher's ranks could start and call MPI unseen. A process
// stopped already (by a debugger, by job control) or gone is left alone.
// It reports whether it stopped the process: then the caller sends
// SIGCONT once it has attached.
func Hold(pfs procfs.FS, pid int, signal func(pid int, sig unix.Signal) error) bool {
	st, err := pfs.Stat(pid)
	if err != nil || st.Ended() || st.State == 'T' || st.State == 't' {
		return false
	}
	return signal(pid, unix.SIGSTOP) == nil
}

// InRoot returns the path p, as mpiprobe's /proc shows it for a process
// whose root is root (the path of a mapped file in /proc/PID/maps, of
// /proc/PID/exe), as that process sees it: the kernel shows a file of a
// chrooted process from mpiprobe's own root, /srv/root/usr/lib/libmpi.so.40
// for the rank's /usr/lib/libmpi.so.40. A path outside root is kept as it
// is. It is a pure function.
func InRoot(root, p string) string {
	if root == "" || root == "/" || !strings.HasPrefix(root, "/") {
		return p
	}
	root = path.Clean(root)
	if rest, ok := strings.CutPrefix(p, root); ok && strings.HasPrefix(rest, "/") {
		return rest
	}
	return p
}

// maxLinks bounds the symbolic links ResolveIn follows, as the kernel's
// 40 does.
const maxLinks = 40

// ResolveIn resolves the symbolic links of p, a path as a process whose
// root directory mpiprobe reaches at hostRoot sees it, the way that
// process's own lookups would: an absolute link target starts again at
// hostRoot, ".." stops there. It returns the resolved path as the process
// sees it; hostRoot+result opens it from mpiprobe.
func ResolveIn(hostRoot, p string) (string, error) {
	done := "/"
	rest := strings.Split(strings.TrimPrefix(path.Clean("/"+p), "/"), "/")
	links := 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			done = path.Dir(done)
			continue
		}
		next := path.Join(done, name)
		fi, err := os.Lstat(filepath.Join(hostRoot, next))
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		target, err := os.Readlink(filepath.Join(hostRoot, next))
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(target, "/") {
			done = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return done, nil
}

// RootTargets is SystemTargets for the root directory of process pid: the
// MPI libraries its dynamic linker's cache lists (the root's
// /etc/ld.so.cache, read with the host's ldconfig -p -C), each resolved
// and opened inside that root through /proc/PID/root, with their Display
// the path as the process sees it, and for Open MPI the components of want
// next to libmpi. It is the ahead-of-time look at a root: a job started in
// a chroot or a container finds its MPI there, not in mpiprobe's root, and
// its ranks map those files once they start. A root without a cache, or
// without MPI in it, gives none and no error.
func RootTargets(pfs procfs.FS, pid int, want []probes.Library) ([]probes.Target, error) {
	cache := pfs.RootPath(pid, "/etc/ld.so.cache")
	if _, err := os.Stat(cache); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	out, err := runLdconfig("-p", "-C", cache)
	if err != nil {
		return nil, fmt.Errorf("read the dynamic linker's cache of pid %d's root: %w", pid, err)
	}
	return inRootTargets(pfs, pid, ParseLdconfig(out), want), nil
}

// inRootTargets returns the targets of the MPI library files at paths as
// process pid sees them, each resolved inside its root and opened through
// /proc/PID/root, one per file, and for Open MPI the components of want
// next to libmpi. A path that does not lead to a file is left out.
func inRootTargets(pfs procfs.FS, pid int, paths []string, want []probes.Library) []probes.Target {
	hostRoot := strings.TrimSuffix(pfs.RootPath(pid, "/"), "/")
	var targets []probes.Target
	seen := map[[2]uint64]bool{}
	for _, p := range paths {
		lib, ok := Classify(p)
		if !ok {
			continue
		}
		real, err := ResolveIn(hostRoot, p)
		if err != nil {
			continue // a dangling link: not what the ranks load
		}
		t, err := probes.FileTarget(lib, hostRoot+real, real)
		if err != nil || seen[[2]uint64{t.Dev, t.Inode}] {
			continue
		}
		seen[[2]uint64{t.Dev, t.Inode}] = true
		t.Root = pfs.RootPath(pid, "/")
		targets = append(targets, t)
		if lib == probes.OMPILibMPI {
			targets = append(targets, componentTargets(want, real, map[probes.Library]bool{}, func(p string) string { return hostRoot + p })...)
		}
	}
	return targets
}

// ExecTargets returns the MPI libraries a process that has just run a new
// program will find outside its root's linker cache, as the command
// mpiprobe starts is looked at ahead of time (CommandLibraryDirs): in the
// directories of its $LD_LIBRARY_PATH and beside its program's prefix,
// inside its root. Read at exec, before its dynamic linker maps them, this
// lets the probes be in place when the process first calls MPI. dirs are
// the directories it looked in, as the process sees them.
func ExecTargets(pfs procfs.FS, pid int, want []probes.Library) (targets []probes.Target, dirs []string) {
	env, _ := pfs.Environ(pid)
	exe := ""
	if p, err := pfs.Exe(pid); err == nil {
		if r, err := RootOf(pfs, pid); err == nil {
			exe = InRoot(r.Link, p)
		}
	}
	dirs = CommandLibraryDirs(env["LD_LIBRARY_PATH"], exe)
	var paths []string
	for _, d := range dirs {
		entries, err := os.ReadDir(pfs.RootPath(pid, d))
		if err != nil {
			continue
		}
		for _, e := range entries {
			if lib, ok := Classify(e.Name()); ok && !strings.HasPrefix(string(lib), "mca_") {
				paths = append(paths, path.Join(d, e.Name()))
			}
		}
	}
	return inRootTargets(pfs, pid, paths, want), dirs
}

// SeenMaps returns maps, the memory map of process pid as mpiprobe's
// /proc shows it, with each file's path as the process sees it (InRoot):
// what to show, and what to open under /proc/PID/root.
func SeenMaps(pfs procfs.FS, pid int, maps []procfs.Mapping) []procfs.Mapping {
	r, err := RootOf(pfs, pid)
	if err != nil || r.Link == "/" {
		return maps
	}
	out := make([]procfs.Mapping, len(maps))
	for k, m := range maps {
		m.Path = InRoot(r.Link, m.Path)
		out[k] = m
	}
	return out
}
