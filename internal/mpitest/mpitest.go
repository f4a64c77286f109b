// Package mpitest is what mpiprobe's end-to-end tests and benchmarks share:
// deciding whether a real MPI job can be traced here (and failing instead of
// skipping when MPIPROBE_E2E=require), building the MPI programs of
// testdata/ with the real mpicc, building the mpiprobe binary, and finding
// the ranks of a running job.
package mpitest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// Impl is one MPI implementation as Debian installs it, or as built
// elsewhere (MPIPROBE_OPENMPI_PREFIX, MPIPROBE_MPICH_PREFIX).
type Impl struct {
	// Name is "openmpi" or "mpich".
	Name string
	// CC compiles an MPI program in C, FC one in Fortran.
	CC, FC string
	// Launcher starts a job, with LauncherArgs first.
	Launcher     string
	LauncherArgs []string
	// Lib is in the path of the MPI library its ranks map: libmpi.so.40
	// (Open MPI), libmpich (Debian's MPICH), libmpi.so (an MPICH built
	// from source: libmpi.so.12, or libmpi.so.0 from git).
	Lib string
	// Root, when set, is the directory of another system's root (.ci/roots)
	// whose MPI this is: its programs are built and its jobs run inside
	// that root, through Via ("chroot", or "unshare" for unshare --mount
	// --root). Paths of programs are then the ranks' own (HostPath opens them).
	Root, Via string
	// Unknown says Lib is a copy whose build id no table of mpiprobe's
	// holds (UnknownBuild): its layouts are inferred.
	Unknown bool
}

// OpenMPI is Debian's Open MPI (openmpi-bin, libopenmpi-dev), or the
// Open MPI installed under $MPIPROBE_OPENMPI_PREFIX (its bin/mpicc,
// bin/mpifort, bin/mpirun), to run the same tests on another build.
func OpenMPI() Impl {
	i := Impl{Name: "openmpi", CC: "mpicc.openmpi", FC: "mpifort.openmpi", Launcher: "mpirun.openmpi",
		LauncherArgs: []string{"--allow-run-as-root", "--oversubscribe"}, Lib: "libmpi.so.40"}
	return i.under(os.Getenv("MPIPROBE_OPENMPI_PREFIX"), "mpirun", "libmpi.so.40")
}

// MPICH is Debian's MPICH (mpich, libmpich-dev), or the MPICH installed
// under $MPIPROBE_MPICH_PREFIX (its bin/mpicc, bin/mpifort, bin/mpiexec).
func MPICH() Impl {
	i := Impl{Name: "mpich", CC: "mpicc.mpich", FC: "mpifort.mpich", Launcher: "mpiexec.mpich", Lib: "libmpich"}
	return i.under(os.Getenv("MPIPROBE_MPICH_PREFIX"), "mpiexec", "libmpi.so")
}

// under returns i with its compilers and launcher taken from prefix/bin
// and its library named lib, or i itself when prefix is "".
func (i Impl) under(prefix, launcher, lib string) Impl {
	if prefix == "" {
		return i
	}
	bin := filepath.Join(prefix, "bin")
	i.CC, i.FC, i.Launcher, i.Lib = filepath.Join(bin, "mpicc"), filepath.Join(bin, "mpifort"), filepath.Join(bin, launcher), lib
	return i
}

// Command returns the launcher command line for np ranks of prog with args,
// with extra launcher options (e.g. --mca settings) before the program.
func (i Impl) Command(np int, opts []string, prog string, args ...string) []string {
	cmd := append(i.prefix(), i.Launcher)
	cmd = append(cmd, i.LauncherArgs...)
	cmd = append(cmd, "-np", fmt.Sprint(np))
	cmd = append(cmd, opts...)
	cmd = append(cmd, prog)
	return append(cmd, args...)
}

// RequireE2E skips the test when real MPI jobs cannot be traced here, and
// fails it instead when MPIPROBE_E2E=require (as CI sets it): a skipped
// end-to-end test must never pass CI silently.
func RequireE2E(t testing.TB, impls ...Impl) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "not root (uprobes and BPF need root)")
	}
	for _, p := range []string{"/sys/kernel/btf/vmlinux", "/sys/bus/event_source/devices/uprobe/type"} {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, "kernel lacks "+p)
		}
	}
	for _, i := range impls {
		for _, bin := range []string{i.CC, i.Launcher} {
			if i.Root != "" {
				if _, err := os.Stat(filepath.Join(i.Root, "usr/bin", bin)); err != nil {
					missing = append(missing, bin+" not installed in "+i.Root+" (.ci/roots installs it)")
				}
				continue
			}
			if _, err := exec.LookPath(bin); err != nil {
				missing = append(missing, bin+" not installed")
			}
		}
	}
	Require(t, missing...)
}

// RequireFortran is RequireE2E for a test that also compiles Fortran with
// impl's compiler wrapper (impl.FC).
func RequireFortran(t testing.TB, impl Impl) {
	t.Helper()
	RequireE2E(t, impl)
	if _, err := exec.LookPath(impl.FC); err != nil {
		Require(t, impl.FC+" not installed")
	}
}

// Require skips the test when anything is missing, naming it, and fails it
// instead when MPIPROBE_E2E=require: what CI installs must never be
// silently absent.
func Require(t testing.TB, missing ...string) {
	t.Helper()
	if len(missing) == 0 {
		return
	}
	msg := "test needs: " + strings.Join(missing, "; ")
	if os.Getenv("MPIPROBE_E2E") == "require" {
		t.Fatal(msg + " (MPIPROBE_E2E=require)")
	}
	t.Skip(msg)
}

// RepoRoot returns the directory holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// Build compiles testdata/<name>.c with the implementation's mpicc, or
// testdata/<name>.f90 with its mpifort, into a temporary directory and
// returns the binary's path.
func Build(t testing.TB, impl Impl, name string) string {
	t.Helper()
	src := filepath.Join(RepoRoot(t), "testdata", name+".c")
	if _, err := os.Stat(src); err != nil {
		src = filepath.Join(RepoRoot(t), "testdata", name+".f90")
	}
	return BuildSource(t, impl, src)
}

// BuildSource compiles the program src (a .c file with the
// implementation's mpicc, else with its mpifort), which may include the
// headers beside it, into a temporary directory (inside the
// implementation's root, if it has one) and returns the binary's path as
// the ranks see it.
func BuildSource(t testing.TB, impl Impl, src string) string {
	t.Helper()
	compiler := impl.CC
	if filepath.Ext(src) != ".c" {
		compiler = impl.FC
	}
	name := strings.TrimSuffix(filepath.Base(src), filepath.Ext(src))
	if impl.Root != "" {
		return impl.buildInRoot(t, compiler, src, name)
	}
	out := filepath.Join(t.TempDir(), name+"."+impl.Name)
	run(t, compiler, "-O2", "-g", "-o", out, src)
	return out
}

// BuildMpiprobe builds the mpiprobe command into a temporary directory.
func BuildMpiprobe(t testing.TB) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "mpiprobe")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/mpiprobe")
	cmd.Dir = RepoRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/mpiprobe: %v\n%s", err, b)
	}
	return out
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	var buf bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, buf.String())
	}
}

// WaitRanks waits until n processes run the executable prog and map an MPI
// library whose path contains lib (e.g. "mca_pml_ob1"), and returns their
// pids. prog is the path as the processes see it: a rank in another root
// (Impl.Root) runs ROOT/prog as the test sees it.
func WaitRanks(ctx context.Context, prog string, n int, lib string) ([]int, error) {
	pfs := procfs.FS{}
	for {
		var found []int
		pids, err := pfs.PIDs()
		if err != nil {
			return nil, err
		}
		for _, pid := range pids {
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
			if err != nil {
				continue
			}
			if exe != prog {
				root, err := os.Readlink(fmt.Sprintf("/proc/%d/root", pid))
				if err != nil || root == "/" || exe != filepath.Join(root, prog) {
					continue
				}
			}
			maps, err := pfs.Maps(pid)
			if err != nil {
				continue
			}
			for _, m := range maps {
				if strings.Contains(m.Path, lib) {
					found = append(found, pid)
					break
				}
			}
		}
		if len(found) >= n {
			return found, nil
		}
		select {
		case <-ctx.Done():
			return found, fmt.Errorf("%d of %d ranks of %s mapping %s appeared: %w", len(found), n, prog, lib, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// WaitRanksFor is WaitRanks with a timeout instead of a context.
func WaitRanksFor(d time.Duration, prog string, n int, lib string) ([]int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return WaitRanks(ctx, prog, n, lib)
}

// Job is an MPI job a test started on its own, outside mpiprobe.
type Job struct {
	cmd  *exec.Cmd
	out  Buffer
	done chan error
	// Ranks are the pids of the ranks WaitRanks found.
	Ranks []int
}

// StartJob starts the job argv and waits until n processes of prog map an
// MPI library whose path contains lib. The job is killed when the test ends.
func StartJob(t testing.TB, argv []string, prog string, n int, lib string) *Job {
	t.Helper()
	j := &Job{cmd: exec.Command(argv[0], argv[1:]...), done: make(chan error, 1)}
	j.cmd.Stdout, j.cmd.Stderr = &j.out, &j.out
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { j.done <- j.cmd.Wait() }()
	t.Cleanup(func() {
		_ = j.cmd.Process.Kill()
		for _, pid := range j.Ranks { // ranks may outlive a killed launcher
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var err error
	if j.Ranks, err = WaitRanks(ctx, prog, n, lib); err != nil {
		t.Fatalf("%v\njob output:\n%s", err, j.out.String())
	}
	return j
}

// WaitPrinted waits until the job has printed s, and fails the test if it
// has not within d: a program that prints where it stands ("hung") tells a
// test when to look, where a fixed sleep is too short on a loaded machine.
func (j *Job) WaitPrinted(t testing.TB, s string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(j.out.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("the job did not print %q within %v:\n%s", s, d, j.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Buffer is a bytes.Buffer safe to read while a command writes it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// KillLauncher kills the job's launcher (mpirun, mpiexec) with SIGKILL,
// leaving its ranks to notice.
func (j *Job) KillLauncher() error { return j.cmd.Process.Kill() }

// Wait waits for the job to end and fails the test if it did not exit 0.
func (j *Job) Wait(t testing.TB) {
	t.Helper()
	if err := <-j.done; err != nil {
		t.Fatalf("job: %v\n%s", err, j.out.String())
	}
}

// SharedMemoryBTL returns the name this Open MPI gives its shared-memory
// BTL in file, symbol and class names: "sm" from Open MPI 5.0, whose
// libopen-pal is libopen-pal.so.80, "vader" before. Both accept "vader" in
// --mca btl and in btl_vader_* parameter names.
func (i Impl) SharedMemoryBTL(t testing.TB) string {
	t.Helper()
	out, err := i.inRootCommand(i.CC, "--showme:libdirs").Output()
	if err != nil {
		t.Fatalf("%s --showme:libdirs: %v", i.CC, err)
	}
	for _, dir := range strings.Fields(string(out)) {
		if _, err := os.Stat(i.HostPath(filepath.Join(dir, "libopen-pal.so.80"))); err == nil {
			return "sm"
		}
		// Debian 13 keeps only the development link in the wrapper's
		// directory: libopen-pal.so -> ../../libopen-pal.so.80.
		if real, err := filepath.EvalSymlinks(i.HostPath(filepath.Join(dir, "libopen-pal.so"))); err == nil && strings.HasPrefix(filepath.Base(real), "libopen-pal.so.80") {
			return "sm"
		}
	}
	return "vader"
}

// Tmpfs mounts a tmpfs of size bytes (e.g. "64k") on a new directory and
// unmounts it when the test ends: a real file system that fills up. It
// needs root, and fails rather than skips under MPIPROBE_E2E=require.
func Tmpfs(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		Require(t, "root (to mount a tmpfs)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		Require(t, fmt.Sprintf("mount a tmpfs: %v: %s", err, bytes.TrimSpace(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, bytes.TrimSpace(out))
		}
	})
	return dir
}
