package discover

import (
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/probes"
)

// Mapped is an MPI library file found in a process's memory map.
type Mapped struct {
	Library probes.Library
	// Mapping is the first mapping of the file; its address range names the
	// file under /proc/PID/map_files.
	Mapping procfs.Mapping
}

// Classify tells which library a file is by its base name, and whether it is one at all.
func Classify(file string) (probes.Library, bool) {
	base := path.Base(file)
	switch {
	// MPICH releases install libmpi.so.12 (libmpich.so a link to it);
	// built from its git repository, whose libtool version is 0:0:0,
	// libmpi.so.0. (Open MPI's libmpi.so.0 was 1.0-1.4's, long gone.)
	case strings.HasPrefix(base, "libmpich.so"), strings.HasPrefix(base, "libmpi.so.12"), strings.HasPrefix(base, "libmpi.so.0"):
		return probes.MPICHLib, true
	case strings.HasPrefix(base, "libmpi.so.40"):
		return probes.OMPILibMPI, true
	case strings.HasPrefix(base, "libmpi_mpifh.so"):
		return probes.OMPIFortran, true
	case strings.HasPrefix(base, "libmpichfort.so"), strings.HasPrefix(base, "libmpifort.so"): // Debian's name, MPICH's own
		return probes.MPICHFortran, true
	case strings.HasPrefix(base, "libucp.so"):
		return probes.UCXLib, true
	case strings.HasPrefix(base, "libopen-pal.so.40"), strings.HasPrefix(base, "libopen-pal.so.80"): // Open MPI 4.x, 5.0
		return probes.OMPIPal, true
	case strings.HasPrefix(base, "libibverbs.so"):
		return probes.IBVerbs, true
	case strings.HasPrefix(base, "mca_") && strings.HasSuffix(base, ".so"):
		return probes.Library(strings.TrimSuffix(base, ".so")), true
	}
	return "", false
}

// Discover returns the MPI library files a process maps, one per
// (device, inode), in address order. It is a pure function of the parsed
// /proc/PID/maps.
func Discover(maps []procfs.Mapping) []Mapped {
	type fileID struct {
		major, minor uint32
		inode        uint64
	}
	seen := map[fileID]bool{}
	var out []Mapped
	sorted := append([]procfs.Mapping(nil), maps...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Start < sorted[j].Start })
	for _, m := range sorted {
		if m.Inode == 0 || !strings.HasPrefix(m.Path, "/") {
			continue
		}
		lib, ok := Classify(m.Path)
		if !ok {
			continue
		}
		id := fileID{m.Major, m.Minor, m.Inode}
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, Mapped{Library: lib, Mapping: m})
	}
	return out
}

// IsMPI reports whether libs hold an MPI library itself (Open MPI's
// libmpi or MPICH's libmpich), not only a library MPI uses such as UCX.
func IsMPI(libs []Mapped) bool {
	for _, m := range libs {
		if m.Library == probes.OMPILibMPI || m.Library == probes.MPICHLib {
			return true
		}
	}
	return false
}

// ComponentDirs returns the directories, most likely first, where Open MPI
// keeps its MCA components relative to the directory of libmpi.so: the
// upstream layout ($libdir/openmpi) and Debian's ($libdir/openmpi/lib/openmpi3).
func ComponentDirs(libmpi string) []string {
	dir := path.Dir(libmpi)
	var out []string
	for _, d := range []string{
		path.Join(dir, "openmpi", "lib", "openmpi3"),
		path.Join(dir, "openmpi"),
		path.Join(dir, "openmpi3"),
		path.Join(dir, "..", "lib", "openmpi"), // lib64 installs
	} {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// ComponentFile returns the file name of an MCA component library, e.g. "mca_pml_ob1.so".
func ComponentFile(l probes.Library) (string, bool) {
	if !strings.HasPrefix(string(l), "mca_") {
		return "", false
	}
	return string(l) + ".so", true
}
