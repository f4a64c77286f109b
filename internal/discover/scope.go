package discover

import (
	"fmt"

	"github.com/mpiprobe/mpiprobe/internal/text"
)

// OutOfScope is the error for process pid, named by the user, that runs
// outside the network namespace mpiprobe watches under --scope netns
// (procfs.FS.Net).
func OutOfScope(pid int, comm string) error {
	return fmt.Errorf("pid %d (%s) runs in another network namespace than mpiprobe, and --scope netns watches only mpiprobe's own: run mpiprobe in the process's namespace (nsenter --net=/proc/%d/ns/net mpiprobe …), or give --scope host", pid, text.Line(comm), pid)
}
