package status

import (
	"debug/elf"
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
func (p *process) commLayout(env map[string]string, m discover.Mapped, build string, bias uint64) (mpiabi.CommLayout, bool) {
	if l, ok := mpiabi.CommLayoutOf(build); ok {
		return l, true
	}
	f, err := p.open(m.Mapping)
	if err != nil {
		return mpiabi.CommLayout{}, false
	}
	defer f.Close()
	ef, err := elf.NewFile(f)
	if err != nil {
		return mpiabi.CommLayout{}, false
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
		return mpiabi.CommLayout{}, false
	}
	return res.Layout, true
}
