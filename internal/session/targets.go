package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"

	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/probes"
)

// CheckTarget verifies that pid is a live user process that maps an MPI
// library, and returns the libraries it maps.
func CheckTarget(pfs procfs.FS, pid int) ([]probes.Mapped, error) {
	st, err := pfs.Stat(pid)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no process with pid %d: check the pid (ps -p %d)", pid, pid)
	}
	if err != nil {
		return nil, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	if st.KernelThread() {
		return nil, fmt.Errorf("pid %d (%s) is a kernel thread: mpiprobe traces MPI user processes", pid, st.Comm)
	}
	maps, err := pfs.Maps(pid)
	if err != nil {
		return nil, fmt.Errorf("read memory map of pid %d (%s): %w: run mpiprobe as root", pid, st.Comm, err)
	}
	libs := probes.Discover(maps)
	if !probes.IsMPI(libs) {
		return nil, fmt.Errorf("pid %d (%s) maps no MPI library (Open MPI libmpi.so.40, MPICH libmpich.so.12): give the pid of an MPI rank that has called MPI_Init", pid, st.Comm)
	}
	return libs, nil
}

// JobPIDs returns the processes on this node whose identity names the job.
func JobPIDs(pfs procfs.FS, job, host string) ([]int, error) {
	all, err := pfs.PIDs()
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []int
	for _, pid := range all {
		if pid == os.Getpid() {
			continue
		}
		id := identity.Resolve(pid, pfs, host)
		if id.Job == job && id.Rank != identity.Unknown {
			out = append(out, pid)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no rank of job %q runs on this node: check the id (mpiprobe prints it as job=...)", job)
	}
	return out, nil
}

// ProcessTargets returns the attach targets of one process: the MPI
// libraries it maps, opened through /proc/PID/map_files, and for Open MPI the
// MCA components of want it has not loaded yet, found next to libmpi
// through /proc/PID/root.
func ProcessTargets(pfs procfs.FS, pid int, libs []probes.Mapped, want []probes.Library) ([]probes.Target, []error) {
	var out []probes.Target
	var errs []error
	have := map[probes.Library]bool{}
	for _, m := range libs {
		t, err := probes.FileTarget(m.Library, pfs.MapFile(pid, m.Mapping), m.Mapping.Path)
		if err != nil {
			// map_files needs CAP_SYS_ADMIN on some kernels; the root path works within the namespace.
			t, err = probes.FileTarget(m.Library, pfs.RootPath(pid, m.Mapping.Path), m.Mapping.Path)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		t.Root = pfs.RootPath(pid, "/")
		have[m.Library] = true
		out = append(out, t)
	}
	for _, m := range libs {
		if m.Library != probes.OMPILibMPI {
			continue
		}
		out = append(out, componentTargets(want, m.Mapping.Path, have, func(p string) string { return pfs.RootPath(pid, p) })...)
	}
	return out, errs
}

// componentTargets finds the Open MPI components of want that are not in
// have, in the component directories next to libmpi.
func componentTargets(want []probes.Library, libmpi string, have map[probes.Library]bool, open func(string) string) []probes.Target {
	var out []probes.Target
	for _, lib := range want {
		file, ok := probes.ComponentFile(lib)
		if !ok || have[lib] {
			continue
		}
		for _, dir := range probes.ComponentDirs(libmpi) {
			display := path.Join(dir, file)
			t, err := probes.FileTarget(lib, open(display), display)
			if err == nil {
				out = append(out, t)
				have[lib] = true
				break
			}
		}
	}
	return out
}

// SystemTargets returns attach targets for a command mpiprobe starts itself:
// the MPI libraries the dynamic linker knows (ldconfig -p), the extra files
// given, and for Open MPI the components of want next to libmpi.
func SystemTargets(want []probes.Library, extra []string) ([]probes.Target, error) {
	var paths []string
	if out, err := exec.Command("ldconfig", "-p").Output(); err == nil {
		paths = probes.ParseLdconfig(out)
	}
	paths = append(paths, extra...)
	var out []probes.Target
	have := map[probes.Library]bool{}
	for _, p := range paths {
		lib, ok := probes.Classify(p)
		if !ok {
			return nil, fmt.Errorf("library %s: not a known MPI library file (libmpi.so.40, libmpich.so.12, libopen-pal.so.40, libucp.so, libibverbs.so, mca_*.so)", p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, fmt.Errorf("library %s: %w", p, err)
		}
		t, err := probes.FileTarget(lib, real, real)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
		have[lib] = true
		if lib == probes.OMPILibMPI {
			out = append(out, componentTargets(want, real, have, func(p string) string { return p })...)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no MPI library found on this system (ldconfig -p lists none): install Open MPI or MPICH, or name the library with --lib")
	}
	return out, nil
}
