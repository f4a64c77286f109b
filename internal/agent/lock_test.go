package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
