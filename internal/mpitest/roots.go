package mpitest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// RootsDir is where .ci/roots makes the roots of other Debian releases:
// $MPIPROBE_ROOTS, by default /var/tmp/mpiprobe-roots.
func RootsDir() string {
	if d := os.Getenv("MPIPROBE_ROOTS"); d != "" {
		return d
	}
	return "/var/tmp/mpiprobe-roots"
}

// rootStamp is the file .ci/roots writes in a root once it is complete.
const rootStamp = ".mpiprobe-root.done"

// RootOpenMPI is the Open MPI of the root of Debian release suite
// ("trixie", "bullseye") that .ci/roots makes: its jobs are started with
// chroot ROOT mpirun, their programs built inside the root with its
// mpicc. It Requires the root and its tools (a failure under
// MPIPROBE_E2E=require names .ci/roots), and mounts /proc, /sys, /dev and
// /dev/shm in the root until the test ends.
func RootOpenMPI(t testing.TB, suite string) Impl {
	t.Helper()
	i := OpenMPI()
	i.CC, i.FC, i.Launcher, i.Lib = "mpicc.openmpi", "mpifort.openmpi", "mpirun.openmpi", "libmpi.so.40"
	return i.inRoot(t, suite)
}

// RootMPICH is RootOpenMPI for the root's MPICH (chroot ROOT mpiexec).
func RootMPICH(t testing.TB, suite string) Impl {
	t.Helper()
	i := MPICH()
	i.CC, i.FC, i.Launcher, i.Lib = "mpicc.mpich", "mpifort.mpich", "mpiexec.mpich", "libmpich"
	return i.inRoot(t, suite)
}

// Unshared returns the implementation of a root with its jobs started
// through unshare --mount --root ROOT instead of chroot: a mount
// namespace of their own whose root is ROOT, as a container's.
func (i Impl) Unshared() Impl {
	i.Via = "unshare"
	return i
}

func (i Impl) inRoot(t testing.TB, suite string) Impl {
	t.Helper()
	root := filepath.Join(RootsDir(), suite)
	i.Name += "-" + suite
	i.Root, i.Via = root, "chroot"
	if _, err := os.Stat(filepath.Join(root, rootStamp)); err != nil {
		Require(t, fmt.Sprintf("the Debian %s root at %s (make it with .ci/roots; MPIPROBE_ROOTS moves it)", suite, root))
	}
	RequireE2E(t, i)
	mountRoot(t, root)
	return i
}

// prefix returns the command line that runs a program in the root.
func (i Impl) prefix() []string {
	switch {
	case i.Root == "":
		return nil
	case i.Via == "unshare":
		return []string{"unshare", "--mount", "--root", i.Root, "--wd", "/"}
	}
	return []string{"chroot", i.Root}
}

// inRootCommand returns the command running name with args where the
// implementation runs its programs.
func (i Impl) inRootCommand(name string, args ...string) *exec.Cmd {
	argv := append(i.prefix(), name)
	argv = append(argv, args...)
	return exec.Command(argv[0], argv[1:]...)
}

// CompilesFortran says whether the implementation's Fortran wrapper
// works where its programs are built: a root may lack gfortran, or have
// it without the wrapper's data (Debian 11's Open MPI without
// libopenmpi-dev's Fortran part).
func (i Impl) CompilesFortran() bool {
	return i.inRootCommand(i.FC, "--version").Run() == nil
}

// HostPath returns the path by which the test opens a file that the
// implementation's processes see at p.
func (i Impl) HostPath(p string) string {
	if i.Root == "" {
		return p
	}
	return filepath.Join(i.Root, p)
}

// buildInRoot compiles src inside the root into a directory made in the
// root's /tmp, removed when the test ends, and returns the program's path
// as the ranks see it. The headers beside src (testdata/deadlock's
// corpus.h) are copied with it.
func (i Impl) buildInRoot(t testing.TB, compiler, src, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp(filepath.Join(i.Root, "tmp"), "mpiprobe-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	headers, err := filepath.Glob(filepath.Join(filepath.Dir(src), "*.h"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(headers, src) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in := "/tmp/" + filepath.Base(dir)
	out := in + "/" + name + "." + i.Name
	// -pthread: Debian 11's glibc keeps the threads in libpthread, which
	// its MPICH's wrapper does not link (hang.c, the corpus's threads).
	cmd := exec.Command("chroot", i.Root, compiler, "-O2", "-g", "-pthread", "-o", out, in+"/"+filepath.Base(src))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chroot %s %s: %v\n%s", i.Root, strings.Join(cmd.Args[2:], " "), err, b)
	}
	return out
}

// The mounts a job needs in a root: what mpirun, the ranks' shared memory
// and hwloc read, and the host's /etc/hosts (MPICH 3.4's ch3 resolves the
// host name; a container runtime provides the file too). Each is made
// private at once, so that nothing mounted under it propagates to the
// host's own (/dev/shm).
var rootMounts = []struct {
	dir, fstype, source string
	bind, file          bool
}{
	{"proc", "proc", "proc", false, false},
	{"sys", "sysfs", "sysfs", false, false},
	{"dev", "", "/dev", true, false},
	{"dev/shm", "tmpfs", "tmpfs", false, false},
	{"etc/hosts", "", "/etc/hosts", true, true},
}

var (
	rootMu    sync.Mutex
	rootUsers = map[string]int{}
)

// mountRoot mounts rootMounts in root for the test, unmounting them when
// the last test of this process that uses root ends. A mount found in
// place (a test killed before its cleanup, or another process using the
// root) is used as it is and left.
func mountRoot(t testing.TB, root string) {
	t.Helper()
	rootMu.Lock()
	defer rootMu.Unlock()
	if rootUsers[root] == 0 {
		mounted := mountPoints()
		var made []string
		for _, m := range rootMounts {
			dir := filepath.Join(root, m.dir)
			if mounted[dir] {
				continue
			}
			flags := uintptr(0)
			if m.bind {
				flags = unix.MS_BIND
			}
			if m.file {
				// debootstrap makes no /etc/hosts: an empty one to mount on.
				if f, err := os.OpenFile(dir, os.O_CREATE|os.O_RDONLY, 0o644); err == nil {
					_ = f.Close()
				}
			} else if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			err := unix.Mount(m.source, dir, m.fstype, flags, "")
			if err == nil {
				err = unix.Mount("", dir, "", unix.MS_PRIVATE, "")
				made = append(made, dir)
			}
			if err != nil {
				unmount(made)
				t.Fatalf("mount %s on %s: %v", m.source, dir, err)
			}
		}
		rootMade[root] = made
	}
	rootUsers[root]++
	t.Cleanup(func() {
		rootMu.Lock()
		defer rootMu.Unlock()
		if rootUsers[root]--; rootUsers[root] == 0 {
			unmount(rootMade[root])
			delete(rootMade, root)
		}
	})
}

// rootMade are the mounts mountRoot made in each root, in order.
var rootMade = map[string][]string{}

// unmount unmounts dirs, last first; one still busy (a rank that
// outlived its test) is detached, to go once it is free.
func unmount(dirs []string) {
	for k := len(dirs) - 1; k >= 0; k-- {
		if err := unix.Unmount(dirs[k], 0); err != nil {
			_ = unix.Unmount(dirs[k], unix.MNT_DETACH)
		}
	}
}

// mountPoints returns the mount points of this process's namespace.
func mountPoints() map[string]bool {
	out := map[string]bool{}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) > 4 {
			out[unescapeMount(fs[4])] = true
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for k := 0; k < len(s); k++ {
		if s[k] == '\\' && k+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[k+1:k+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				k += 3
				continue
			}
		}
		b.WriteByte(s[k])
	}
	return b.String()
}
