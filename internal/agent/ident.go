package agent

import (
	"bytes"
	"io/fs"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// recorded is what the BPF side kept about a process when it entered
// MPI_Init (struct ident in bpf/lifecycle.h): its environment, its parent
// chain and its start time. It outlives the process and the agent (the
// idents map is pinned), so that a rank that ran entirely while no agent
// did is named as /proc would have named it. It is an identity.Reader.
type recorded struct {
	pid int
	env map[string]string
	// chain is the process's stat and its ancestors', nearest first.
	chain []procfs.Stat
	// ticks is the start time in /proc/PID/stat's unit.
	ticks uint64
}

// recordOf decodes the record of process pid.
func recordOf(pid int, id *bpf.MpiprobeIdent) recorded {
	r := recorded{pid: pid, ticks: id.StartBoottime / (1e9 / userHZ)}
	env := make([]byte, min(int(id.EnvLen), len(id.Env)))
	for i := range env {
		env[i] = byte(id.Env[i])
	}
	if id.EnvCut != 0 {
		// The tail of a longer environment: its first entry is cut.
		if i := bytes.IndexByte(env, 0); i >= 0 {
			env = env[i+1:]
		} else {
			env = nil
		}
	}
	r.env = procfs.ParseEnviron(env)
	for _, c := range id.Chain[:min(int(id.ChainLen), len(id.Chain))] {
		comm := make([]byte, 0, len(c.Comm))
		for _, b := range c.Comm {
			if b == 0 {
				break
			}
			comm = append(comm, byte(b))
		}
		r.chain = append(r.chain, procfs.Stat{PID: int(c.Tgid), PPID: int(c.Ppid), Comm: string(comm)})
	}
	if len(r.chain) > 0 {
		r.chain[0].StartTime = r.ticks
	}
	return r
}

// comm is the process's command name ("" when not recorded).
func (r recorded) comm() string {
	if len(r.chain) == 0 {
		return ""
	}
	return r.chain[0].Comm
}

// Environ returns the recorded environment of the process.
func (r recorded) Environ(pid int) (map[string]string, error) {
	if pid != r.pid || r.env == nil {
		return nil, fs.ErrNotExist
	}
	return r.env, nil
}

// Stat returns the recorded stat of the process or of an ancestor.
func (r recorded) Stat(pid int) (procfs.Stat, error) {
	for _, s := range r.chain {
		if s.PID == pid {
			return s, nil
		}
	}
	return procfs.Stat{}, fs.ErrNotExist
}

// Cmdline is not recorded: a hydra rank known only from its record is
// named by its mpiexec's pid, as before hydra jobs were named by their
// proxies' --control-port.
func (r recorded) Cmdline(int) ([]string, error) { return nil, fs.ErrNotExist }

// Hostname is not recorded: the process is named on the agent's host.
func (r recorded) Hostname(int) (string, error) { return "", fs.ErrNotExist }
