package symbolize

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// ProcOpener returns the Opener for a live process: map_files first, then
// the root path.
//
// /proc/PID/map_files/START-END opens exactly the mapped file, even when
// it was deleted or lives in another mount namespace, but needs
// CAP_SYS_ADMIN. The fallback opens the mapping's path through
// /proc/PID/root; it is not tried for a deleted file, and the file it
// opens is accepted only if its inode number is the mapping's, so a file
// replaced at the same path is not mistaken for the mapped one.
func ProcOpener(fs procfs.FS, pid int) Opener {
	return func(m procfs.Mapping) (*os.File, error) {
		f, err := os.Open(fs.MapFile(pid, m))
		if err == nil {
			return f, nil
		}
		if m.Deleted || !strings.HasPrefix(m.Path, "/") {
			return nil, err
		}
		p := fs.RootPath(pid, m.Path)
		g, err2 := os.Open(p)
		if err2 != nil {
			return nil, errors.Join(err, err2)
		}
		fi, err2 := g.Stat()
		if err2 != nil {
			g.Close()
			return nil, errors.Join(err, err2)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Ino != m.Inode {
			g.Close()
			return nil, errors.Join(err, fmt.Errorf("%s has inode %d, the mapped file %d: replaced since it was mapped", p, st.Ino, m.Inode))
		}
		return g, nil
	}
}
