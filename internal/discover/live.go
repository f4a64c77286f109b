package discover

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/probes"
)

// MappingOf returns the first mapping of a target's file.
func MappingOf(maps []procfs.Mapping, t probes.Target) (procfs.Mapping, bool) {
	for _, m := range maps {
		if m.Inode == t.Inode && unix.Mkdev(m.Major, m.Minor) == t.Dev {
			return m, true
		}
	}
	return procfs.Mapping{}, false
}

// ProcRoot is the procfs mount point fs reads.
func ProcRoot(fs procfs.FS) string {
	if fs.Root == "" {
		return "/proc"
	}
	return fs.Root
}

// LiveProcess reads what inference needs to know of a process: its memory
// and its world rank and size from its environment.
func LiveProcess(fs procfs.FS, pid int, mem *os.File) probes.LiveProcess {
	lp := probes.LiveProcess{WorldRank: -1, WorldSize: -1, Mem: func(addr uint64, p []byte) error {
		if addr > 1<<62 {
			return fmt.Errorf("address %#x out of range", addr)
		}
		n, err := mem.ReadAt(p, int64(addr))
		if n == len(p) {
			return nil
		}
		if err == nil {
			err = errors.New("short read")
		}
		return err
	}}
	if env, err := fs.Environ(pid); err == nil {
		id := identity.FromEnv(env)
		if v, err := strconv.Atoi(id.Rank); err == nil {
			lp.WorldRank = v
		}
		if v, err := strconv.Atoi(id.Size); err == nil {
			lp.WorldSize = v
		}
		lp.OMPIName = probes.OMPIName(env)
	}
	return lp
}
