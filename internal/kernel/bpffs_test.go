package kernel

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// TestMountBPFFS checks that /sys/fs/bpf is a BPF file system after
// MountBPFFS, whether it was one before or not, and that a second call
// leaves it so.
func TestMountBPFFS(t *testing.T) {
	if os.Geteuid() != 0 {
		mpitest.Require(t, "root (mounting the BPF file system)")
	}
	for range 2 {
		if err := MountBPFFS("/sys/fs/bpf"); err != nil {
			t.Fatalf("MountBPFFS: %v", err)
		}
		var st unix.Statfs_t
		if err := unix.Statfs("/sys/fs/bpf", &st); err != nil || st.Type != unix.BPF_FS_MAGIC {
			t.Fatalf("/sys/fs/bpf is not a BPF file system after MountBPFFS (type %#x, %v)", st.Type, err)
		}
	}
}
