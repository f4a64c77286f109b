package discover

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// CommandLibraryDirs returns the directories, besides the dynamic linker's
// cache, where the ranks of a command mpiprobe starts find their MPI
// library: each entry of ldPath ($LD_LIBRARY_PATH, how environment modules,
// Spack and EasyBuild make an MPI available), then the lib and lib64
// directories beside the directory of launcher, the command's program
// resolved to a path (an mpirun under a prefix, whose programs find that
// prefix's libmpi by rpath); launcher "" adds none. It is a pure function.
func CommandLibraryDirs(ldPath, launcher string) []string {
	var out []string
	add := func(d string) {
		if d = filepath.Clean(d); filepath.IsAbs(d) && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	for _, d := range strings.Split(ldPath, ":") {
		if d != "" {
			add(d)
		}
	}
	if launcher != "" {
		prefix := filepath.Dir(filepath.Dir(launcher))
		add(filepath.Join(prefix, "lib"))
		add(filepath.Join(prefix, "lib64"))
	}
	return out
}

// LibrariesIn returns the MPI library files (Classify) directly in dirs,
// each file once whatever the names that lead to it, but not MCA
// components, which SystemTargets finds next to libmpi for the events that
// want them. A directory that cannot be read is skipped.
func LibrariesIn(dirs []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			lib, ok := Classify(e.Name())
			if !ok || strings.HasPrefix(string(lib), "mca_") {
				continue
			}
			p := filepath.Join(d, e.Name())
			real, err := filepath.EvalSymlinks(p)
			if err != nil || seen[real] {
				continue
			}
			if st, err := os.Stat(real); err != nil || !st.Mode().IsRegular() {
				continue
			}
			seen[real] = true
			out = append(out, p)
		}
	}
	return out
}
