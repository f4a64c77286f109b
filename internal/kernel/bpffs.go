package kernel

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// MountBPFFS makes sure the BPF file system is mounted at dir (normally
// /sys/fs/bpf), mounting it when it is not: fresh machines often lack it.
func MountBPFFS(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil && st.Type == unix.BPF_FS_MAGIC {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("mount the BPF file system at %s: %w", dir, err)
	}
	if err := unix.Mount("bpf", dir, "bpf", 0, "mode=0700"); err != nil {
		return fmt.Errorf("mount the BPF file system at %s (mount -t bpf bpf %s): %w", dir, dir, err)
	}
	return nil
}
