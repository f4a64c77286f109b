package discover

import (
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/text"
	"github.com/mpiprobe/mpiprobe/probes"
)

// CheckTarget verifies that pid is a live user process that maps an MPI
// library, and returns the libraries it maps.
func CheckTarget(pfs procfs.FS, pid int) ([]Mapped, error) {
	p, err := checkTarget(pfs, pid)
	return p.Libs, err
}

// checkTarget is CheckTarget returning the process as Select keeps it. A
// process that exits between the reads is reported as a *RaceError, a
// permission error with its real cause.
func checkTarget(pfs procfs.FS, pid int) (Proc, error) {
	st, err := pfs.Stat(pid)
	if errors.Is(err, fs.ErrNotExist) {
		return Proc{}, fmt.Errorf("no process with pid %d: check the pid (ps -p %d)", pid, pid)
	}
	if errors.Is(err, fs.ErrPermission) {
		return Proc{}, explainPermission(pfs, pid, "stat")
	}
	if err != nil {
		return Proc{}, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	if st.KernelThread() {
		return Proc{}, fmt.Errorf("pid %d (%s) is a kernel thread: mpiprobe traces MPI user processes", pid, text.Line(st.Comm))
	}
	p := Proc{PID: pid, Comm: st.Comm, StartTime: st.StartTime}
	if !pfs.InScope(pid) {
		return Proc{}, OutOfScope(pid, st.Comm)
	}
	if st.Ended() {
		return Proc{}, &RaceError{PID: pid, Comm: st.Comm, What: "exited", During: "examining"}
	}
	maps, err := pfs.Maps(pid)
	switch {
	case err != nil && gone(err):
		return Proc{}, &RaceError{PID: pid, Comm: st.Comm, What: "exited", During: "examining"}
	case errors.Is(err, fs.ErrPermission):
		return Proc{}, explainPermission(pfs, pid, "maps")
	case err != nil:
		return Proc{}, fmt.Errorf("read memory map of pid %d (%s): %w", pid, text.Line(st.Comm), err)
	}
	p.Maps, p.Libs = maps, Discover(maps)
	if !IsMPI(p.Libs) {
		if len(maps) == 0 {
			// A process whose memory is gone between the two reads.
			if err := Recheck(pfs, p, "examining"); err != nil {
				return Proc{}, err
			}
		}
		if linksMPI(pfs.ExeFile(pid)) {
			exe, _ := pfs.Exe(pid)
			return Proc{}, fmt.Errorf("pid %d (%s) has MPI linked into its program %s (a static MPI library: MPI_Init is in the executable, no libmpi.so or libmpich.so is mapped): mpiprobe probes the shared libraries only; link the program with the shared MPI library (mpicc without -static or libmpich.a)",
				pid, text.Line(st.Comm), text.Quote(exe))
		}
		return Proc{}, fmt.Errorf("pid %d (%s) maps no MPI library (Open MPI libmpi.so.40, MPICH libmpich.so.12): give the pid of an MPI rank that has called MPI_Init", pid, text.Line(st.Comm))
	}
	return p, nil
}

// linksMPI reports whether the executable file defines MPI_Init, in its
// symbol table or its dynamic one: MPI linked in statically. A stripped
// executable says nothing.
func linksMPI(file string) bool {
	f, err := elf.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, read := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, _ := read()
		for _, s := range syms {
			if (s.Name == "MPI_Init" || s.Name == "PMPI_Init") && s.Section != elf.SHN_UNDEF && s.Value != 0 {
				return true
			}
		}
	}
	return false
}

// JobPIDs returns the processes on this node (in pfs's scope) whose
// identity names the job (identity.Matches).
func JobPIDs(pfs procfs.FS, job, host string) ([]int, error) {
	return jobPIDs(pfs, pfs, job, host)
}

// jobPIDs is JobPIDs reading the identities through r.
func jobPIDs(pfs procfs.FS, r identity.Reader, job, host string) ([]int, error) {
	all, err := pfs.PIDs()
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []int
	cr := &deniedCounter{Reader: r}
	for _, pid := range all {
		if pid == os.Getpid() {
			continue
		}
		id, keys := identity.ResolveKeys(pid, cr, host)
		if identity.Matches(job, id, keys) && id.Rank != identity.Unknown {
			out = append(out, pid)
		}
	}
	switch {
	case len(out) > 0:
		return out, nil
	case cr.denied > 0 && os.Geteuid() != 0:
		// A rank's job is in its environment, which only its user and
		// root may read: another user's job is invisible, not absent.
		// (Root too is denied some, in other user namespaces: no hint.)
		return nil, fmt.Errorf("no rank of job %q among the processes this user can read (the environment of %d processes of other users, where the job id is, needs root): run mpiprobe as root (sudo)", job, cr.denied)
	}
	return nil, fmt.Errorf("no rank of job %q runs on this node: check the id (mpiprobe ps lists the jobs of this node)", job)
}

// deniedCounter is an identity.Reader that counts the processes whose
// environment it was not allowed to read.
type deniedCounter struct {
	identity.Reader
	denied int
}

func (d *deniedCounter) Environ(pid int) (map[string]string, error) {
	env, err := d.Reader.Environ(pid)
	if errors.Is(err, fs.ErrPermission) {
		d.denied++
	}
	return env, err
}

// ProcessTargets returns the attach targets of one process: the MPI
// libraries it maps, opened through /proc/PID/map_files, and for Open MPI the
// MCA components of want it has not loaded yet, found next to libmpi
// through /proc/PID/root.
func ProcessTargets(pfs procfs.FS, pid int, libs []Mapped, want []probes.Library) ([]probes.Target, []error) {
	var out []probes.Target
	var errs []error
	have := map[probes.Library]bool{}
	// The kernel shows the files of a process in another root (chroot,
	// unshare --root) by their path from mpiprobe's root: Display and the
	// component lookup take the path as the process sees it.
	root := ""
	if r, err := RootOf(pfs, pid); err == nil {
		root = r.Link
	}
	for _, m := range libs {
		seen := InRoot(root, m.Mapping.Path)
		t, err := probes.FileTarget(m.Library, pfs.MapFile(pid, m.Mapping), seen)
		if err != nil {
			// map_files needs CAP_SYS_ADMIN on some kernels; the root path works within the namespace.
			t, err = probes.FileTarget(m.Library, pfs.RootPath(pid, seen), seen)
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
		out = append(out, componentTargets(want, InRoot(root, m.Mapping.Path), have, func(p string) string { return pfs.RootPath(pid, p) })...)
	}
	return out, errs
}

// componentTargets finds the Open MPI components of want that are not in
// have, in the component directories next to libmpi, else built into
// libmpi or the libopen-pal beside it (Open MPI 5.0 builds its components
// into the libraries by default: ob1 and the colls into libmpi, the btls
// into libopen-pal), where the library defines the component's
// mca_<framework>_<name>_component.
func componentTargets(want []probes.Library, libmpi string, have map[probes.Library]bool, open func(string) string) []probes.Target {
	var out []probes.Target
	var builtin []string // the libraries that may hold components, read once
	defines := map[string]map[string]elf.Symbol{}
	for _, lib := range want {
		file, ok := ComponentFile(lib)
		if !ok || have[lib] {
			continue
		}
		for _, dir := range ComponentDirs(libmpi) {
			display := path.Join(dir, file)
			t, err := probes.FileTarget(lib, open(display), display)
			if err == nil {
				out = append(out, t)
				have[lib] = true
				break
			}
		}
		if have[lib] {
			continue
		}
		if builtin == nil {
			builtin = []string{libmpi, path.Join(path.Dir(libmpi), "libopen-pal.so.80"), path.Join(path.Dir(libmpi), "libopen-pal.so.40")}
			for _, b := range builtin {
				defines[b] = definedSymbols(open(b))
			}
		}
		for _, b := range builtin {
			if _, ok := defines[b][string(lib)+"_component"]; !ok {
				continue
			}
			if t, err := probes.FileTarget(lib, open(b), b); err == nil {
				out = append(out, t)
				have[lib] = true
				break
			}
		}
	}
	return out
}

// definedSymbols returns the dynamic symbols an ELF file defines
// (elfx.Defined); none when it cannot be read.
func definedSymbols(file string) map[string]elf.Symbol {
	f, err := elf.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	syms, _ := elfx.Defined(f)
	return syms
}

// ErrNoSystemLibrary is SystemTargets's error when it found no library.
var ErrNoSystemLibrary = errors.New("no MPI library found on this system (ldconfig -p lists none): install Open MPI or MPICH, or name the library with --lib")

// noCacheError is SystemTargets's error when ldconfig could not list the
// dynamic linker's cache; it is an ErrNoSystemLibrary.
type noCacheError struct{ ldconfig error }

func (e noCacheError) Error() string {
	return "no MPI library found: the dynamic linker's cache could not be read (" + e.ldconfig.Error() + "): install Open MPI or MPICH, or name the library with --lib"
}

func (e noCacheError) Is(target error) bool { return target == ErrNoSystemLibrary }

// SystemTargets returns attach targets for a command mpiprobe starts itself:
// the MPI libraries the dynamic linker knows (ldconfig -p), the extra files
// given, and for Open MPI the components of want next to libmpi.
func SystemTargets(want []probes.Library, extra []string) ([]probes.Target, error) {
	var paths []string
	out, lerr := runLdconfig("-p")
	if lerr == nil {
		paths = ParseLdconfig(out)
	}
	paths = append(paths, extra...)
	var targets []probes.Target
	seen := map[string]bool{}
	for _, p := range paths {
		lib, ok := Classify(p)
		if !ok {
			return nil, fmt.Errorf("library %s: not a known MPI library file (libmpi.so.40, libmpich.so.12, libopen-pal.so.40, libucp.so, libibverbs.so, mca_*.so)", p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, fmt.Errorf("library %s: %w", p, err)
		}
		if seen[real] {
			continue // named twice (ldconfig's cache and --lib, or two links)
		}
		seen[real] = true
		t, err := probes.FileTarget(lib, real, real)
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
		if lib == probes.OMPILibMPI {
			// Each Open MPI installation has its own components (the
			// attacher attaches a file once).
			targets = append(targets, componentTargets(want, real, map[probes.Library]bool{}, func(p string) string { return p })...)
		}
	}
	switch {
	case len(targets) > 0:
		return targets, nil
	case lerr != nil:
		return nil, noCacheError{lerr}
	}
	return nil, ErrNoSystemLibrary
}

// Named returns the processes a command names: pids, then the ranks of
// job on this node (none when job is "").
func Named(pfs procfs.FS, pids []int, job, host string) ([]int, error) {
	return NamedVia(pfs, pfs, pids, job, host)
}

// NamedVia is Named reading the processes' identities through r: a
// caller that needs their environments again passes a reader that keeps
// what it read.
func NamedVia(pfs procfs.FS, r identity.Reader, pids []int, job, host string) ([]int, error) {
	out := slices.Clone(pids)
	if job == "" {
		return out, nil
	}
	jp, err := jobPIDs(pfs, r, job, host)
	if err != nil {
		return nil, err
	}
	return append(out, jp...), nil
}

// Selection is what Select found in the processes it was given.
type Selection struct {
	// Targets are the library files to attach to, of every live process.
	Targets []probes.Target
	// Live are the processes that map an MPI library, in the order given.
	Live []int
	// Procs are the live processes with what was read of them, in the
	// order of Live: Recheck tells later whether one went away.
	Procs []Proc
	// Skipped says for every other process why it is no target
	// (CheckTarget's error, or the race of Gone).
	Skipped []error
	// Gone are the processes of Skipped that exited, ran another program
	// or unmapped their MPI library while they were examined (*RaceError
	// each).
	Gone []error
	// Unattachable are the libraries of live processes that could not be
	// opened, each error naming its process.
	Unattachable []error
}

// Select checks each process with CheckTarget and collects the attach
// targets (ProcessTargets) of those that map an MPI library: the choice
// every command that names processes makes.
func Select(pfs procfs.FS, pids []int, want []probes.Library) Selection {
	var s Selection
	for _, pid := range pids {
		p, err := checkTarget(pfs, pid)
		if IsRace(err) {
			s.Gone = append(s.Gone, err)
		}
		if err != nil {
			s.Skipped = append(s.Skipped, err)
			continue
		}
		t, errs := ProcessTargets(pfs, pid, p.Libs, want)
		if len(errs) > 0 {
			// A library that cannot be opened through the process: it may
			// have gone meanwhile.
			if race := Recheck(pfs, p, "examining"); race != nil {
				s.Gone = append(s.Gone, race)
				s.Skipped = append(s.Skipped, race)
				continue
			}
		}
		for _, err := range errs {
			s.Unattachable = append(s.Unattachable, fmt.Errorf("pid %d: %w", pid, err))
		}
		p.Targets = t
		s.Targets = append(s.Targets, t...)
		s.Live = append(s.Live, pid)
		s.Procs = append(s.Procs, p)
	}
	return s
}

// TargetsOf returns the attach targets of ps, in order.
func TargetsOf(ps []Proc) []probes.Target {
	var out []probes.Target
	for _, p := range ps {
		out = append(out, p.Targets...)
	}
	return out
}

// PIDsOf returns the pids of ps, in order.
func PIDsOf(ps []Proc) []int {
	out := make([]int, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.PID)
	}
	return out
}

// Scan returns the attach targets of a process if it maps an MPI library,
// as ProcessTargets does; ok is false, without a reason, for a process
// that maps none or is gone. It serves scans over every process of the
// node, where most are not MPI and that is no error.
func Scan(pfs procfs.FS, pid int, want []probes.Library) (targets []probes.Target, errs []error, ok bool) {
	maps, err := pfs.Maps(pid)
	if err != nil {
		return nil, nil, false // gone, or a kernel thread
	}
	return ScanMaps(pfs, pid, maps, want)
}

// ScanMaps is Scan of a process whose memory map the caller read: it can
// tell a process gone (the read failed) from one that maps no MPI library.
// A process outside pfs's scope (procfs.FS.Net) is none either: the
// agent's exec watch and the session's command scan both come here.
func ScanMaps(pfs procfs.FS, pid int, maps []procfs.Mapping, want []probes.Library) (targets []probes.Target, errs []error, ok bool) {
	libs := Discover(maps)
	if !IsMPI(libs) || !pfs.InScope(pid) {
		return nil, nil, false
	}
	targets, errs = ProcessTargets(pfs, pid, libs, want)
	return targets, errs, true
}

// LibraryFiles expands configured library paths into the MPI library
// files they name: a file is taken as it is (SystemTargets checks it), a
// directory gives the files in it whose names Classify as MPI libraries.
// A path that cannot be read gives an error and the others go on.
func LibraryFiles(paths []string) ([]string, []error) {
	var out []string
	var errs []error
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("library path: %w", err))
			continue
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("library path: %w", err))
			continue
		}
		for _, e := range ents {
			if _, ok := Classify(e.Name()); ok && !e.IsDir() {
				out = append(out, filepath.Join(p, e.Name()))
			}
		}
	}
	return out, errs
}
