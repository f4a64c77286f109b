package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/jobstore"
)

// TestCleanupRefusedWhileLocked: --cleanup of a pin directory an agent
// holds would detach its probes; it is refused, naming the agent's pid,
// and nothing is removed. Released, the directory is removed; a directory
// that does not exist is reported as such.
func TestCleanupRefusedWhileLocked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pins")
	l, err := lockPinDir(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "links"), 0o700); err != nil {
		t.Fatal(err)
	}
	removed, err := Cleanup(dir)
	want := "an mpiprobe agent (pid " + strconv.Itoa(os.Getpid()) + ") uses pin directory " + dir
	if removed || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Cleanup while locked: %v, %v; want %q", removed, err, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "links")); err != nil {
		t.Errorf("Cleanup while locked removed the agent's pins: %v", err)
	}
	l.release()
	if removed, err := Cleanup(dir); !removed || err != nil {
		t.Errorf("Cleanup after release: %v, %v", removed, err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", dir, err)
	}
	if removed, err := Cleanup(dir); removed || err != nil {
		t.Errorf("Cleanup of a missing directory: %v, %v; want false, nil", removed, err)
	}
}

// plant puts a symbolic link at path to a new file holding "precious" and
// returns the file.
func plant(t *testing.T, path string) string {
	t.Helper()
	target := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(target, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	return target
}

// untouched fails unless the planted file still holds "precious".
func untouched(t *testing.T, target, what string) {
	t.Helper()
	if got, _ := os.ReadFile(target); string(got) != "precious" {
		t.Errorf("%s: the file a symbolic link points to was written: %q", what, got)
	}
}

// TestStateDirSymlinks: symbolic links planted at the agent's files in its
// state dir are never followed: the lock refuses one, the state is not
// read through one, and a job's summary replaces one.
func TestStateDirSymlinks(t *testing.T) {
	dir := t.TempDir()
	target := plant(t, filepath.Join(dir, "agent.lock"))
	l, err := takeLock(dir, "")
	if err == nil {
		l.release()
	}
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "agent.lock")) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("lock through a symbolic link: %v", err)
	}
	untouched(t, target, "agent.lock")

	a := &agent{cfg: Config{StateDir: dir}}
	target = plant(t, a.statePath())
	if err := os.WriteFile(target, []byte(`{"version": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := a.readState(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("state read through a symbolic link: %v", err)
	}

	store := jobstore.Store{Dir: jobstore.JobsDir(dir)}
	target = plant(t, store.Path("42"))
	if err := store.Save("42", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	untouched(t, target, "jobs/42.json")
	if fi, err := os.Lstat(store.Path("42")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the job's file is not a regular file: %v, %v", fi, err)
	}
}
