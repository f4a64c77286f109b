package query

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// Owns returns the filter of what uid may look at: root every process,
// any other user the processes whose real uid is theirs. A process of
// another user gives one line naming its owner and what to do.
func Owns(pfs procfs.FS, uid int) func(pid int) error {
	return func(pid int) error {
		if uid == 0 {
			return nil
		}
		owner, err := pfs.UID(pid)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("pid %d: no such process on this node: check the pid (mpiprobe ps lists your MPI processes)", pid)
		case err != nil:
			return fmt.Errorf("pid %d: %v", pid, err)
		case owner != uid:
			return fmt.Errorf("pid %d is not yours: it is owned by uid %d, you are uid %d: give a pid of your own job (mpiprobe ps), or ask root (sudo mpiprobe status -p %d)", pid, owner, uid, pid)
		}
		return nil
	}
}
