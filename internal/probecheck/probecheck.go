package probecheck

import (
	"github.com/mpiprobe/mpiprobe/internal/discover"
	"github.com/mpiprobe/mpiprobe/internal/kernel"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/probes"
)

// Entries attaches the catalog to the libraries one process maps, as
// a counting session would, and returns every catalog entry with whether
// it attached there and why not; the probes are detached again before it
// returns. Nothing is counted: the process is not added to the traced set.
// debugDirs are where separate debug files are looked for, as in
// session.Config.DebugDirs.
func Entries(pfs procfs.FS, pid int, cat probes.Catalog, debugDirs []string) ([]probes.EntryStatus, error) {
	libs, err := discover.CheckTarget(pfs, pid)
	if err != nil {
		return nil, err
	}
	targets, errs := discover.ProcessTargets(pfs, pid, libs, cat.Libraries())
	if err := kernel.Preflight(); err != nil {
		return nil, err
	}
	// Only the catalog's programs, with the maps they use.
	var progs probes.Programs
	if err := kernel.Load(&progs, kernel.Options{}); err != nil {
		return nil, err
	}
	defer progs.Close()
	att, err := probes.NewAttacher(progs, cat)
	if err != nil {
		return nil, err
	}
	att.DebugDirs = debugDirs
	defer att.Close()
	if err := att.Add(targets); err != nil {
		return nil, kernel.ExplainLoad("attach probes", err)
	}
	out := probes.Entries(cat, pid, targets, att.Status())
	for _, e := range errs {
		out = append(out, probes.EntryStatus{Event: "-", Reason: e.Error()})
	}
	return out, nil
}
