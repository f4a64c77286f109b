package probecheck

import (
	"debug/elf"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"

	"github.com/mpiprobe/mpiprobe/internal/discover"
	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/kernel"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/symbolize"
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

// Layouts returns the struct layouts the probes of one process read,
// field by field with where each came from (verified table, debug info,
// inferred and how, unknown): the communicator layout of its MPI C library
// and the free-list layout of its libopen-pal. debugDirs are as in
// session.Config.DebugDirs.
func Layouts(pfs procfs.FS, pid int, debugDirs []string) ([]mpiabi.LayoutStatus, error) {
	libs, err := discover.CheckTarget(pfs, pid)
	if err != nil {
		return nil, err
	}
	targets, _ := discover.ProcessTargets(pfs, pid, libs, []probes.Library{probes.OMPILibMPI, probes.MPICHLib, probes.OMPIPal})
	maps, err := pfs.Maps(pid)
	if err != nil {
		return nil, err
	}
	maps = discover.SeenMaps(pfs, pid, maps) // a rank in a chroot: its own paths
	mem, err := pfs.OpenMem(pid)
	if err != nil {
		return nil, err
	}
	defer mem.Close()
	env, _ := pfs.Environ(pid)
	lp := discover.LiveProcess(mem.Memory(), env)
	var out []mpiabi.LayoutStatus
	for _, t := range targets {
		if t.Library != probes.OMPILibMPI && t.Library != probes.MPICHLib && t.Library != probes.OMPIPal {
			continue
		}
		f, err := elf.Open(t.Path)
		if err != nil {
			out = append(out, mpiabi.LayoutStatus{File: t.Display, Reason: err.Error()})
			continue
		}
		if t.Library == probes.OMPIPal {
			out = append(out, mpiabi.FreeListLayoutStatus(f, t.Display, t.DebugDirs(debugDirs), t.Sibling(mpiabi.LibMPIName), t.Root))
			_ = f.Close()
			continue
		}
		p := lp
		if m, ok := discover.MappingOf(maps, t); ok {
			p.Bias, _ = elfx.Loads(f.Progs).Bias(m.Start, m.Offset)
		}
		st, comm := mpiabi.CommLayoutStatus(f, t.Library.Flavour(), t.Display, p)
		out = append(out, st)
		switch t.Library {
		case probes.OMPILibMPI:
			out = append(out, ob1Status(pfs, pid, maps, f, p, comm))
		case probes.MPICHLib:
			out = append(out, mpiabi.MPICHRequestLayoutStatus(f, t.Display))
			if st, ok := ucpStatus(pfs, pid, maps); ok {
				out = append(out, st)
			}
		}
		_ = f.Close()
	}
	return out, nil
}

// ob1Status resolves the request layout of the ob1 a process with Open
// MPI's libmpi (lib) uses: mca_pml_ob1.so, or lib itself when it builds
// ob1 in (Open MPI 5.0).
func ob1Status(pfs procfs.FS, pid int, maps []procfs.Mapping, lib *elf.File, p mpiabi.LiveProcess, comm mpiabi.CommLayout) mpiabi.LayoutStatus {
	st := mpiabi.LayoutStatus{Struct: mpiabi.OB1LayoutStruct}
	m, builtIn, ok := mpiabi.LocateOB1(maps, func(procfs.Mapping) bool { return true }, func() *elf.File { return lib })
	if !ok {
		st.Reason = "mca_pml_ob1.so is not mapped (another pml, or before MPI_Init)"
		return st
	}
	ob1, display := lib, "libmpi.so (ob1 built in)"
	if !builtIn {
		f, done, err := openMapping(pfs, pid, m)
		if err != nil {
			st.File, st.Reason = m.Path, err.Error()
			return st
		}
		defer done()
		ob1, display = f, m.Path
	}
	if comm.Kind != mpiabi.LayoutOMPI {
		st.File, st.Reason = display, "not inferred: the request's fields are found through the communicator layout, which is not known for this build (its row above says why)"
		return st
	}
	return mpiabi.OB1LayoutStatus(lib, ob1, display, p, comm)
}

// ucpStatus lists the request layout of the libucp a process maps, if it
// maps one (MPICH with ch4:ucx).
func ucpStatus(pfs procfs.FS, pid int, maps []procfs.Mapping) (mpiabi.LayoutStatus, bool) {
	f, m, done, err := openMapped(pfs, pid, maps, func(base string) bool { return strings.HasPrefix(base, "libucp.so") })
	switch {
	case err != nil:
		return mpiabi.LayoutStatus{File: m.Path, Struct: mpiabi.UCPRequestStruct, Reason: err.Error()}, true
	case f == nil:
		return mpiabi.LayoutStatus{}, false
	}
	defer done()
	return mpiabi.UCPRequestLayoutStatus(f, m.Path), true
}

// openMapped opens the first file pid maps whose base name match accepts,
// as symbolize.ProcOpener does (map_files, else the path under the
// process's root), with the function that closes it; no file and no error
// when pid maps none.
func openMapped(pfs procfs.FS, pid int, maps []procfs.Mapping, match func(base string) bool) (*elf.File, procfs.Mapping, func(), error) {
	for _, m := range maps {
		if m.Inode == 0 || !match(filepath.Base(m.Path)) {
			continue
		}
		f, done, err := openMapping(pfs, pid, m)
		return f, m, done, err
	}
	return nil, procfs.Mapping{}, nil, nil
}

// openMapping opens the file of one of pid's mappings, as
// symbolize.ProcOpener does, with the function that closes it.
func openMapping(pfs procfs.FS, pid int, m procfs.Mapping) (*elf.File, func(), error) {
	osf, err := symbolize.ProcOpener(pfs, pid)(m)
	if err != nil {
		return nil, nil, err
	}
	f, err := elf.NewFile(osf)
	if err != nil {
		_ = osf.Close()
		return nil, nil, fmt.Errorf("%s: %w", m.Path, err)
	}
	return f, func() { _ = osf.Close() }, nil
}
