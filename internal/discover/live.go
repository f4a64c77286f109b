package discover

import (
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
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

// LiveProcess is what inference needs to know of a process: its memory,
// and its world rank and size from its environment env (nil: unknown).
func LiveProcess(mem procfs.Memory, env map[string]string) mpiabi.LiveProcess {
	lp := mpiabi.LiveProcess{WorldRank: -1, WorldSize: -1, Mem: mem}
	if env != nil {
		id := identity.FromEnv(env)
		if v, err := strconv.Atoi(id.Rank); err == nil {
			lp.WorldRank = v
		}
		if v, err := strconv.Atoi(id.Size); err == nil {
			lp.WorldSize = v
		}
		lp.OMPIName = mpiabi.OMPIName(env)
	}
	return lp
}
