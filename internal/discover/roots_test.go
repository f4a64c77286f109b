package discover

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/probes"
)

func TestInRoot(t *testing.T) {
	for _, tc := range []struct{ root, p, want string }{
		{"/", "/usr/lib/libmpi.so.40", "/usr/lib/libmpi.so.40"},
		{"", "/usr/lib/libmpi.so.40", "/usr/lib/libmpi.so.40"},
		{"/srv/r", "/srv/r/usr/lib/libmpi.so.40", "/usr/lib/libmpi.so.40"},
		{"/srv/r/", "/srv/r/usr/lib/libmpi.so.40", "/usr/lib/libmpi.so.40"},
		{"/srv/r", "/srv/rx/usr/lib/libmpi.so.40", "/srv/rx/usr/lib/libmpi.so.40"}, // a sibling, not inside
		{"/srv/r", "/usr/lib/libmpi.so.40", "/usr/lib/libmpi.so.40"},               // outside the root: as shown
		{"mnt:[4026531841]", "/usr/lib/libmpi.so.40", "/usr/lib/libmpi.so.40"},
	} {
		if got := InRoot(tc.root, tc.p); got != tc.want {
			t.Errorf("InRoot(%q, %q) = %q, want %q", tc.root, tc.p, got, tc.want)
		}
	}
}

// TestResolveIn: links inside a root resolve inside it, also absolute ones
// and ".." above its top, as the chrooted process's own lookups would.
func TestResolveIn(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "usr/lib/x86_64-linux-gnu/openmpi/lib"), 0o755))
	must(os.WriteFile(filepath.Join(root, "usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi.so.40.30.4"), nil, 0o644))
	must(os.Symlink("usr/lib", filepath.Join(root, "lib")))
	must(os.Symlink("openmpi/lib/libmpi.so.40.30.4", filepath.Join(root, "usr/lib/x86_64-linux-gnu/libmpi.so.40")))
	must(os.MkdirAll(filepath.Join(root, "etc/alternatives"), 0o755))
	must(os.Symlink("/usr/lib/x86_64-linux-gnu/libmpi.so.40", filepath.Join(root, "etc/alternatives/libmpi.so")))
	must(os.Symlink("../../../../../../etc/alternatives/libmpi.so", filepath.Join(root, "usr/lib/x86_64-linux-gnu/libmpi.so")))
	want := "/usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi.so.40.30.4"
	for _, p := range []string{"/lib/x86_64-linux-gnu/libmpi.so.40", "/usr/lib/x86_64-linux-gnu/libmpi.so", "/etc/alternatives/libmpi.so", want} {
		got, err := ResolveIn(root, p)
		if err != nil || got != want {
			t.Errorf("ResolveIn(%s) = %q, %v; want %q", p, got, err, want)
		}
	}
	must(os.Symlink("loop", filepath.Join(root, "loop")))
	if _, err := ResolveIn(root, "/loop"); err == nil {
		t.Error("a link to itself resolved")
	}
	if _, err := ResolveIn(root, "/usr/lib/missing.so"); err == nil {
		t.Error("a missing file resolved")
	}
}

// fakeRootProc builds a root directory holding an Open MPI as Debian lays
// it out (a real shared object with the soname libmpi.so.40, its ob1
// component, /lib an absolute link to /usr/lib as in a merged-/usr root)
// with its linker cache made by ldconfig -r, and a /proc whose process 42
// runs chrooted in it and maps its libmpi. It skips without gcc or ldconfig.
func fakeRootProc(t *testing.T) (procfs.FS, string) {
	t.Helper()
	for _, tool := range []string{"gcc", "ldconfig"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip(tool + " not installed")
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("ldconfig -r chroots: needs root")
	}
	root := t.TempDir()
	lib := filepath.Join(root, libmpi)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, libDir, "openmpi/lib/openmpi3"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	src := filepath.Join(t.TempDir(), "mpi.c")
	must(os.WriteFile(src, []byte("int MPI_Init(void) { return 0; }\n"), 0o644))
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-Wl,-soname,libmpi.so.40", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	must(os.WriteFile(filepath.Join(root, ob1File), nil, 0o644))
	must(os.Symlink("/usr/lib", filepath.Join(root, "lib")))
	must(os.WriteFile(filepath.Join(root, "etc/ld.so.conf"), []byte("/lib/x86_64-linux-gnu\n"), 0o644))
	if out, err := exec.Command("ldconfig", "-r", root).CombinedOutput(); err != nil {
		t.Fatalf("ldconfig -r: %v\n%s", err, out)
	}
	proc := t.TempDir()
	must(os.MkdirAll(filepath.Join(proc, "42"), 0o755))
	must(os.Symlink(root, filepath.Join(proc, "42/root")))
	// The kernel shows a chrooted process's files from mpiprobe's root.
	maps := "7fab7c000000-7fab7c100000 r-xp 00000000 fe:00 12 " + root + libmpi + "\n"
	must(os.WriteFile(filepath.Join(proc, "42/maps"), []byte(maps), 0o644))
	return procfs.FS{Root: proc}, root
}

// TestRootTargets: the libraries of a process's root are those of the
// root's own linker cache, resolved inside the root (the absolute /lib
// link must not lead to mpiprobe's /usr/lib), shown by the paths the
// process sees, opened through /proc/PID/root; with the components next to
// libmpi inside the root.
func TestRootTargets(t *testing.T) {
	pfs, root := fakeRootProc(t)
	ts, err := RootTargets(pfs, 42, []probes.Library{probes.OMPIPmlOb1})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{string(probes.OMPILibMPI) + "=" + libmpi, string(probes.OMPIPmlOb1) + "=" + ob1File}
	if got := displays(ts); !slices.Equal(got, want) {
		t.Fatalf("RootTargets = %q, want %q", got, want)
	}
	for _, tg := range ts {
		if tg.Path != pfs.RootPath(42, tg.Display) {
			t.Errorf("%s opens as %s, want %s", tg.Display, tg.Path, pfs.RootPath(42, tg.Display))
		}
	}
	r, err := RootOf(pfs, 42)
	if err != nil || r.Link != root {
		t.Errorf("RootOf = %+v, %v; want the link %s", r, err, root)
	}
	// The process maps the library: the same file, shown the same way.
	libs := Discover(mustMaps(t, pfs, 42))
	pt, errs := ProcessTargets(pfs, 42, libs, []probes.Library{probes.OMPIPmlOb1})
	if got := displays(pt); len(errs) != 0 || !slices.Equal(got, want) {
		t.Errorf("ProcessTargets = %q, %v; want %q", got, errs, want)
	}
	if len(pt) > 0 && (pt[0].Dev != ts[0].Dev || pt[0].Inode != ts[0].Inode) {
		t.Errorf("mapped and cached libmpi are different files: %+v, %+v", pt[0], ts[0])
	}
	if m := SeenMaps(pfs, 42, mustMaps(t, pfs, 42)); m[0].Path != libmpi {
		t.Errorf("SeenMaps path %q, want %q", m[0].Path, libmpi)
	}
}

func mustMaps(t *testing.T, pfs procfs.FS, pid int) []procfs.Mapping {
	t.Helper()
	m, err := pfs.Maps(pid)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestExecTargets: at exec, the libraries a process will find on its
// $LD_LIBRARY_PATH and beside its program's prefix, inside its root.
func TestExecTargets(t *testing.T) {
	pfs, root := fakeRootProc(t)
	for _, f := range []string{"opt/priv/libmpich.so.12", "opt/mpi/lib/libmpi.so.40", "opt/mpi/lib/libc.so.6"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	proc := pfs.Root
	if err := os.WriteFile(filepath.Join(proc, "42/environ"), []byte("PATH=/usr/bin\x00LD_LIBRARY_PATH=/opt/priv:/nonexistent\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The kernel shows the program from mpiprobe's root too.
	if err := os.Symlink(root+"/opt/mpi/bin/mpiexec", filepath.Join(proc, "42/exe")); err != nil {
		t.Fatal(err)
	}
	ts, dirs := ExecTargets(pfs, 42, nil)
	want := []string{string(probes.MPICHLib) + "=/opt/priv/libmpich.so.12", string(probes.OMPILibMPI) + "=/opt/mpi/lib/libmpi.so.40"}
	if got := displays(ts); !slices.Equal(got, want) {
		t.Errorf("ExecTargets = %q (looked in %q), want %q", got, dirs, want)
	}
}
