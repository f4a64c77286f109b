package status

import (
	"os"
	"syscall"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/probes"
)

// TestCountCallsPassesOverGonePaths: a rank that unmapped its library or
// exited while status read it leaves a /proc/PID/map_files path that no
// longer opens; the counter goes on with the next process's path of the
// same file instead of failing the whole status (issue 30, item 10).
func TestCountCallsPassesOverGonePaths(t *testing.T) {
	lib := "/usr/lib/x86_64-linux-gnu/libmpich.so.12"
	st, err := os.Stat(lib)
	if err != nil {
		mpitest.Require(t, err.Error())
	}
	if os.Geteuid() != 0 {
		mpitest.Require(t, "root (uprobes)")
	}
	k, err := openLive()
	if err != nil {
		t.Fatal(err)
	}
	defer k.close()
	sys := st.Sys().(*syscall.Stat_t)
	gone := probes.Target{Library: probes.MPICHLib, Path: "/proc/2147483646/map_files/7f0000000000-7f0000001000", Display: lib, Dev: sys.Dev, Inode: sys.Ino}
	live := gone
	live.Path = lib
	if err := k.countCalls([]probes.Target{gone, live}); err != nil {
		t.Fatalf("countCalls: %v", err)
	}
	if len(k.links) != 1 {
		t.Errorf("%d links, want 1 (the file attached through its second path)", len(k.links))
	}
	// A file none of whose paths opens is no error either: no process
	// maps it any more.
	k2, err := openLive()
	if err != nil {
		t.Fatal(err)
	}
	defer k2.close()
	if err := k2.countCalls([]probes.Target{gone}); err != nil {
		t.Errorf("countCalls of a gone file: %v", err)
	}
}
