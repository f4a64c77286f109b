package monitor

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/probes"
	"github.com/mpiprobe/mpiprobe/procfs"
)

// ProbeEntries attaches the catalog to the libraries one process maps, as
// a counting session would, and returns every catalog entry with whether
// it attached there and why not; the probes are detached again before it
// returns. Nothing is counted: the process is not added to the traced set.
func ProbeEntries(pfs procfs.FS, pid int, cat probes.Catalog) ([]probes.EntryStatus, error) {
	libs, err := CheckTarget(pfs, pid)
	if err != nil {
		return nil, err
	}
	targets, errs := ProcessTargets(pfs, pid, libs, cat.Libraries())
	if err := Preflight(); err != nil {
		return nil, err
	}
	// Only the catalog's programs, with the maps they use.
	var objs struct {
		bpf.MpiprobePrograms
	}
	spec, err := bpf.LoadMpiprobe()
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for _, name := range []string{"count_event", "stash_arg", "free_list_grow", "free_list_at_max",
		"mpi_error", "async_event_ret", "gate_open", "gate_count", "gate_close"} {
		keep[name] = true
	}
	for name := range spec.Programs {
		if !keep[name] {
			delete(spec.Programs, name)
		}
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		var verr *ebpf.VerifierError
		if errors.As(err, &verr) {
			return nil, fmt.Errorf("load BPF programs: verifier rejected them (kernel too old?): %w", err)
		}
		return nil, ExplainLoad("load BPF programs", err)
	}
	defer coll.Close()
	prog := func(n string) *ebpf.Program { return coll.Programs[n] }
	objs.CountEvent, objs.StashArg, objs.FreeListGrow, objs.FreeListAtMax = prog("count_event"), prog("stash_arg"), prog("free_list_grow"), prog("free_list_at_max")
	objs.MpiError, objs.AsyncEventRet = prog("mpi_error"), prog("async_event_ret")
	objs.GateOpen, objs.GateCount, objs.GateClose = prog("gate_open"), prog("gate_count"), prog("gate_close")
	att, err := probes.NewAttacher(probes.ProgramsOf(&objs.MpiprobePrograms), cat)
	if err != nil {
		return nil, err
	}
	defer att.Close()
	if err := att.Add(targets); err != nil {
		return nil, ExplainLoad("attach probes", err)
	}
	out := probes.Entries(cat, pid, targets, att.Status())
	for _, e := range errs {
		out = append(out, probes.EntryStatus{Event: "-", Reason: e.Error()})
	}
	return out, nil
}
