package procfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeProc builds a procfs-like tree in a temporary directory.
func fakeProc(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"4242/maps": "55b72cdbe000-55b72cdc0000 r--p 00000000 fe:00 247026                     /usr/bin/mpi app\n" +
			"7f3a1c200000-7f3a1c3a5000 r-xp 00022000 fd:01 1835082                    /opt/openmpi/lib/libmpi.so.40 (deleted)\n",
		"4242/environ": "OMPI_COMM_WORLD_RANK=3\x00PMIX_NAMESPACE=job@1\x00",
		"4242/stat":    "4242 (mpi app) S 4200 4242 4100 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0\n",
		"4242/comm":    "mpi app\n",
		"17/stat":      "17 (bad\n",
		"17/maps":      "not a maps line\n",
		"99/comm":      "x\n",
		"sys/kernel":   "",
		"0012/comm":    "leading zeros\n",
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
	if err := os.Symlink("4242", filepath.Join(root, "self")); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestFS(t *testing.T) {
	p := FS{Root: fakeProc(t)}

	m, err := p.Maps(4242)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m[0].Path != "/usr/bin/mpi app" || !m[1].Deleted || m[1].Path != "/opt/openmpi/lib/libmpi.so.40" {
		t.Fatalf("Maps = %+v", m)
	}
	env, err := p.Environ(4242)
	if err != nil || env["OMPI_COMM_WORLD_RANK"] != "3" || env["PMIX_NAMESPACE"] != "job@1" {
		t.Fatalf("Environ = %v, %v", env, err)
	}
	st, err := p.Stat(4242)
	if err != nil || st.PID != 4242 || st.PPID != 4200 || st.Comm != "mpi app" || st.StartTime != 12345 {
		t.Fatalf("Stat = %+v, %v", st, err)
	}
	comm, err := p.Comm(4242)
	if err != nil || comm != "mpi app" {
		t.Fatalf("Comm = %q, %v", comm, err)
	}
	pids, err := p.PIDs()
	if err != nil || !slices.Equal(pids, []int{12, 17, 99, 4242}) {
		t.Fatalf("PIDs = %v, %v", pids, err)
	}

	if _, err := p.Stat(17); err == nil || !errContains(err, "parse stat of 17: ") {
		t.Errorf("Stat(17) error = %v", err)
	}
	if _, err := p.Maps(17); err == nil || !errContains(err, "parse maps of 17: maps line 1: ") {
		t.Errorf("Maps(17) error = %v", err)
	}

	if got, want := p.MapFile(4242, m[1]), filepath.Join(p.Root, "4242/map_files/7f3a1c200000-7f3a1c3a5000"); got != want {
		t.Errorf("MapFile = %q, want %q", got, want)
	}
	for in, want := range map[string]string{
		"/opt/openmpi/lib/libmpi.so.40": "/4242/root/opt/openmpi/lib/libmpi.so.40",
		"/../../etc/passwd":             "/4242/root/etc/passwd",
		"lib/x.so":                      "/4242/root/lib/x.so",
	} {
		if got := p.RootPath(4242, in); got != p.Root+want {
			t.Errorf("RootPath(%q) = %q, want %q", in, got, p.Root+want)
		}
	}
}

func errContains(err error, s string) bool {
	return err != nil && strings.Contains(err.Error(), s)
}

func TestFSMissingProcess(t *testing.T) {
	p := FS{Root: fakeProc(t)}
	checks := map[string]func() error{
		"Maps":        func() error { _, err := p.Maps(5); return err },
		"Environ":     func() error { _, err := p.Environ(5); return err },
		"Stat":        func() error { _, err := p.Stat(5); return err },
		"Comm":        func() error { _, err := p.Comm(5); return err },
		"Environ(99)": func() error { _, err := p.Environ(99); return err },
		"Stat(-1)":    func() error { _, err := p.Stat(-1); return err },
	}
	for name, check := range checks {
		err := check()
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: error %v does not match fs.ErrNotExist", name, err)
		}
	}
	if _, err := (FS{Root: filepath.Join(p.Root, "nope")}).PIDs(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("PIDs of missing root: %v", err)
	}
}

func TestFSDefaultRoot(t *testing.T) {
	var p FS
	if got := p.MapFile(1, Mapping{Start: 0x400000, End: 0x401000}); got != "/proc/1/map_files/400000-401000" {
		t.Errorf("MapFile = %q", got)
	}
	if got := p.RootPath(1, "/usr/lib/libmpi.so"); got != "/proc/1/root/usr/lib/libmpi.so" {
		t.Errorf("RootPath = %q", got)
	}
}

func TestPidMax(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          int
		wantErr       string
	}{
		{name: "default", content: "32768\n", want: 32768},
		{name: "large", content: "4194304\n", want: 4194304},
		{name: "not a number", content: "lots\n", wantErr: `"lots" is not a pid limit`},
		{name: "zero", content: "0\n", wantErr: `"0" is not a pid limit`},
		{name: "missing", wantErr: "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.content != "" {
				dir := filepath.Join(root, "sys", "kernel")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "pid_max"), []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := FS{Root: root}.PidMax()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("PidMax = %d, %v; want error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("PidMax = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
	if _, err := os.Stat("/proc/sys/kernel/pid_max"); err == nil {
		if n, err := (FS{}).PidMax(); err != nil || n < os.Getpid() {
			t.Errorf("real PidMax = %d, %v; this process is %d", n, err, os.Getpid())
		}
	}
}

// TestFSRealProc reads this test process through the real /proc.
func TestFSRealProc(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc:", err)
	}
	var p FS
	pid := os.Getpid()
	st, err := p.Stat(pid)
	if err != nil {
		t.Fatal(err)
	}
	if st.PID != pid || st.PPID != os.Getppid() || st.KernelThread() {
		t.Errorf("Stat = %+v", st)
	}
	comm, err := p.Comm(pid)
	if err != nil || comm == "" || comm != st.Comm {
		t.Errorf("Comm = %q, %v (stat says %q)", comm, err, st.Comm)
	}
	m, err := p.Maps(pid)
	if err != nil || len(m) == 0 {
		t.Fatalf("Maps = %d mappings, %v", len(m), err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mm := range m {
		found = found || mm.Path == exe
	}
	if !found {
		t.Errorf("executable %q not among the mappings", exe)
	}
	env, err := p.Environ(pid)
	if err != nil {
		t.Fatal(err)
	}
	if path, ok := os.LookupEnv("PATH"); ok && env["PATH"] != path {
		t.Errorf("Environ PATH = %q, want %q", env["PATH"], path)
	}
	pids, err := p.PIDs()
	if err != nil || !slices.Contains(pids, pid) {
		t.Errorf("PIDs does not list %d: %v", pid, err)
	}
}
