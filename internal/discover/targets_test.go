package discover

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/probes"
)

const (
	libDir  = "/usr/lib/x86_64-linux-gnu"
	libmpi  = libDir + "/libmpi.so.40.30.4"
	libpal  = libDir + "/libopen-pal.so.40.30.2"
	ob1File = libDir + "/openmpi/lib/openmpi3/mca_pml_ob1.so"
)

// fakeProc builds a /proc tree of four processes: 42, an Open MPI rank
// whose root file system holds libmpi and the ob1 component but not the
// libopen-pal it maps; 43, a process without MPI; 44, a kernel thread;
// and 45, an MPI rank of another job.
func fakeProc(t *testing.T) procfs.FS {
	t.Helper()
	root := t.TempDir()
	stat := func(pid, comm, flags string) string {
		return pid + " (" + comm + ") S 1 " + pid + " " + pid + " 0 -1 " + flags + " 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n"
	}
	maps := "5621f6ba9000-5621f6baa000 r--p 00000000 fe:00 11 /tmp/rank\n" +
		"7fab7c000000-7fab7c100000 r-xp 00000000 fe:00 12 " + libmpi + "\n" +
		"7fab7d000000-7fab7d100000 r-xp 00000000 fe:00 13 " + libpal + "\n" +
		"7fab7e000000-7fab7e100000 r-xp 00000000 fe:00 14 " + libDir + "/libc.so.6\n"
	files := map[string]string{
		"42/stat":           stat("42", "rank", "4194304"),
		"42/maps":           maps,
		"42/environ":        "OMPI_COMM_WORLD_RANK=0\x00PMIX_NAMESPACE=job@1\x00",
		"42/root" + libmpi:  "",
		"42/root" + ob1File: "",
		"43/stat":           stat("43", "bash", "4194304"),
		"43/maps":           "7fab7e000000-7fab7e100000 r-xp 00000000 fe:00 14 " + libDir + "/libc.so.6\n",
		"44/stat":           stat("44", "kworker/0:1", "2129984"), // PF_KTHREAD
		"45/stat":           stat("45", "rank", "4194304"),
		"45/maps":           maps,
		"45/environ":        "OMPI_COMM_WORLD_RANK=0\x00PMIX_NAMESPACE=other@1\x00",
		"45/root" + libmpi:  "",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return procfs.FS{Root: root}
}

// displays returns the libraries and displayed paths of targets.
func displays(ts []probes.Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, string(t.Library)+"="+t.Display)
	}
	return out
}

func TestSelect(t *testing.T) {
	pfs := fakeProc(t)
	sel := Select(pfs, []int{42, 43, 44, 46}, []probes.Library{probes.OMPIPmlOb1, probes.OMPIPal})
	if !slices.Equal(sel.Live, []int{42}) {
		t.Errorf("Live = %v, want [42]", sel.Live)
	}
	want := []string{string(probes.OMPILibMPI) + "=" + libmpi, string(probes.OMPIPmlOb1) + "=" + ob1File}
	if got := displays(sel.Targets); !slices.Equal(got, want) {
		t.Errorf("Targets = %q, want %q", got, want)
	}
	for _, tg := range sel.Targets {
		if !strings.HasPrefix(tg.Path, pfs.Root+"/42/root/") {
			t.Errorf("%s opens as %s, want it under the process's root", tg.Display, tg.Path)
		}
	}
	if sel.Targets[0].Root != pfs.RootPath(42, "/") {
		t.Errorf("mapped library's Root = %q, want %q", sel.Targets[0].Root, pfs.RootPath(42, "/"))
	}
	if len(sel.Unattachable) != 1 || !strings.Contains(sel.Unattachable[0].Error(), "pid 42: stat "+libpal) {
		t.Errorf("Unattachable = %v, want the libopen-pal of pid 42", sel.Unattachable)
	}
	wantSkipped := []string{
		"pid 43 (bash) maps no MPI library",
		"pid 44 (kworker/0:1) is a kernel thread",
		"no process with pid 46: check the pid",
	}
	if len(sel.Skipped) != len(wantSkipped) {
		t.Fatalf("Skipped = %v, want %d errors", sel.Skipped, len(wantSkipped))
	}
	for i, w := range wantSkipped {
		if err := sel.Skipped[i].Error(); !strings.Contains(err, w) || strings.Contains(err, "\n") {
			t.Errorf("Skipped[%d] = %q, want one line containing %q", i, err, w)
		}
	}
}

func TestScan(t *testing.T) {
	pfs := fakeProc(t)
	tests := []struct {
		pid   int
		ok    bool
		want  []string
		nErrs int
	}{
		{42, true, []string{string(probes.OMPILibMPI) + "=" + libmpi}, 1},
		{43, false, nil, 0},
		{44, false, nil, 0}, // no maps: a kernel thread
		{46, false, nil, 0}, // gone
	}
	for _, tt := range tests {
		targets, errs, ok := Scan(pfs, tt.pid, nil)
		if ok != tt.ok || !slices.Equal(displays(targets), tt.want) || len(errs) != tt.nErrs {
			t.Errorf("Scan(%d) = %q, %v, %v; want %q, %d errors, %v", tt.pid, displays(targets), errs, ok, tt.want, tt.nErrs, tt.ok)
		}
	}
}

func TestNamed(t *testing.T) {
	pfs := fakeProc(t)
	job := identity.Resolve(42, pfs, "node1").Job
	if job == identity.Unknown || job == identity.Resolve(45, pfs, "node1").Job {
		t.Fatalf("the fake ranks' jobs are %q and %q: want two known, different ones", job, identity.Resolve(45, pfs, "node1").Job)
	}
	got, err := Named(pfs, []int{7}, job, "node1")
	if err != nil || !slices.Equal(got, []int{7, 42}) {
		t.Errorf("Named(job %s) = %v, %v; want [7 42]", job, got, err)
	}
	if got, err := Named(pfs, []int{7, 8}, "", "node1"); err != nil || !slices.Equal(got, []int{7, 8}) {
		t.Errorf("Named(no job) = %v, %v; want [7 8]", got, err)
	}
	if _, err := Named(pfs, nil, "no-such-job", "node1"); err == nil || !strings.Contains(err.Error(), `no rank of job "no-such-job" runs on this node`) {
		t.Errorf("Named(unknown job): err %v", err)
	}
}

func TestLibraryFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"libmpi.so.40", "libc.so.6", "mca_pml_ob1.so", "libmpich.so.12/x"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plain := filepath.Join(dir, "libc.so.6")
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name  string
		paths []string
		want  []string
		errs  int
	}{
		{"a directory: its MPI libraries, not its subdirectories", []string{dir}, []string{filepath.Join(dir, "libmpi.so.40"), filepath.Join(dir, "mca_pml_ob1.so")}, 0},
		{"a file is taken as it is", []string{plain}, []string{plain}, 0},
		{"a missing path is an error, the others go on", []string{missing, plain}, []string{plain}, 1},
		{"nothing", nil, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := LibraryFiles(tt.paths)
			if !slices.Equal(got, tt.want) || len(errs) != tt.errs {
				t.Errorf("LibraryFiles(%q) = %q, %v; want %q, %d errors", tt.paths, got, errs, tt.want, tt.errs)
			}
			for _, err := range errs {
				if !strings.Contains(err.Error(), missing) {
					t.Errorf("error %q does not name the path", err)
				}
			}
		})
	}
}
