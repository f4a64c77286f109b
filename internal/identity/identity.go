package identity

import (
	"strconv"
	"strings"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// Unknown is shown for any field that could not be read; it is never guessed.
const Unknown = "?"

// Identity names an MPI process: the host it runs on, its job and its rank.
type Identity struct {
	// Host is the host name of the process's node: its UTS namespace's
	// (Reader.Hostname), else the one Resolve was given.
	Host string `json:"host"`
	// Job identifies the job across its ranks, the same on every node
	// (launcher-specific, see the package documentation).
	Job string `json:"job"`
	// Rank is the process's rank in MPI_COMM_WORLD as a decimal string.
	Rank string `json:"rank"`
	// Size is the world size as a decimal string.
	Size string `json:"size"`
	// Launcher names where Job and Rank came from: "openmpi", "hydra", "slurm" or "" when unknown.
	Launcher string `json:"launcher"`
}

// Values of Identity.Launcher.
const (
	// LauncherOpenMPI is Open MPI's mpirun (or prterun).
	LauncherOpenMPI = "openmpi"
	// LauncherHydra is MPICH's (or Intel MPI's) hydra mpiexec.
	LauncherHydra = "hydra"
	// LauncherSlurm is a task started by srun.
	LauncherSlurm = "slurm"
)

// Reader reads what Resolve needs about a process; procfs.FS satisfies it.
type Reader interface {
	// Environ returns the environment the process was started with.
	Environ(pid int) (map[string]string, error)
	// Stat returns the process's stat (parent pid and command name).
	Stat(pid int) (procfs.Stat, error)
	// Cmdline returns the process's arguments (a hydra proxy's
	// --control-port).
	Cmdline(pid int) ([]string, error)
	// Hostname returns the host name of the process's UTS namespace: the
	// node it runs on.
	Hostname(pid int) (string, error)
}

// Label formats id and pid as the prefix of an output line:
// "host=node1 job=12345@0 rank=3 pid=4242". Empty fields are shown as
// Unknown. Other values are shown as text.Quote shows them: Go-quoted
// when they contain spaces, quotes, backslashes, commas, characters that
// do not print, or invalid UTF-8, since environment values are chosen by
// users.
func (id Identity) Label(pid int) string {
	var b strings.Builder
	b.WriteString("host=")
	b.WriteString(labelValue(id.Host))
	b.WriteString(" job=")
	b.WriteString(labelValue(id.Job))
	b.WriteString(" rank=")
	b.WriteString(labelValue(id.Rank))
	b.WriteString(" pid=")
	b.WriteString(strconv.Itoa(pid))
	return b.String()
}

// labelValue returns s as it appears in a Label: Unknown for "", else as
// text.Quote shows it.
func labelValue(s string) string {
	if s == "" {
		return Unknown
	}
	return text.Quote(s)
}
