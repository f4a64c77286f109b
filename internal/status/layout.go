package status

import (
	"debug/elf"
	"fmt"
	"path"
	"strconv"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"

	"github.com/mpiprobe/mpiprobe/internal/discover"
	"github.com/mpiprobe/mpiprobe/internal/identity"
)

// commLayout returns the communicator layout of the process's MPI library
// m (build id build, loaded at bias): the verified table's, else the one
// inferred from the process's own predefined communicators and the
// library's accessors (env is the process's environment, which gives its
// rank and the job's size). None when neither gives one.
func (p *process) commLayout(env map[string]string, m discover.Mapped, build string, bias uint64) (mpiabi.CommLayout, error) {
	if l, ok := mpiabi.CommLayoutOf(build); ok {
		return l, nil
	}
	f, err := p.open(m.Mapping)
	if err != nil {
		return mpiabi.CommLayout{}, err
	}
	defer f.Close()
	ef, err := elf.NewFile(f)
	if err != nil {
		return mpiabi.CommLayout{}, err
	}
	lp := mpiabi.LiveProcess{Mem: p.read, Bias: bias, WorldRank: -1, WorldSize: -1}
	id := identity.FromEnv(env)
	if v, err := strconv.Atoi(id.Rank); err == nil {
		lp.WorldRank = v
	}
	if v, err := strconv.Atoi(id.Size); err == nil {
		lp.WorldSize = v
	}
	res, err := mpiabi.InferCommLayout(ef, m.Library.Flavour(), lp)
	if err != nil {
		return mpiabi.CommLayout{}, err
	}
	return res.Layout, nil
}

// commUnknown says, in one line, why the process's communicator layout is
// not known and what would help: a debug file would not (the layout is
// read from the table of verified builds or inferred from the code and
// the live objects), so it names the build and where each field's cause
// is listed, then what inference stopped at.
func (p *process) commUnknown() string {
	if p.lib == "" {
		return "no MPI C library is mapped"
	}
	// The fix first: a shown line is cut at text.MaxLine.
	s := fmt.Sprintf("%s build %s: its communicator layout is in no table and was not inferred; `mpiprobe probes -p %d` lists each field and why", path.Base(p.lib), shortID(p.build), p.pid)
	if p.commErr != nil {
		s += ": " + p.commErr.Error()
	}
	return s
}
