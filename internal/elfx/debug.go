package elfx

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultDebugDir is where separate debug files are looked up by build id
// (<dir>/.build-id/ab/cdef….debug) when no other directory is given, as
// gdb does.
const DefaultDebugDir = "/usr/lib/debug"

// DebugFile returns the path of the separate debug file of a build id under
// dir, or "" when the id is too short to name one.
func DebugFile(dir, buildID string) string {
	if len(buildID) < 3 {
		return ""
	}
	return filepath.Join(dir, ".build-id", buildID[:2], buildID[2:]+".debug")
}

// OpenDebugFile opens the separate debug file of a build id in the first
// of dirs that holds one, and returns it with its path. It returns a nil
// file and no error when no directory holds one, and an error when the
// first one found does not parse.
func OpenDebugFile(buildID string, dirs []string) (*elf.File, string, error) {
	for _, dir := range dirs {
		p := DebugFile(dir, buildID)
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			continue
		}
		f, err := elf.Open(p)
		if err != nil {
			return nil, "", fmt.Errorf("read debug file %s: %w", p, err)
		}
		return f, p, nil
	}
	return nil, "", nil
}

// DebugPackage returns the Debian package that would install the separate
// debug file of file (its path as the processes of root see it): the
// package owning file in root's dpkg database (root's
// /var/lib/dpkg/info/PKG[:ARCH].list), with "-dbgsym", as Debian names its
// automatic debug packages. It returns "" when no package owns file or
// root has no dpkg database: then nothing is said rather than a guess.
func DebugPackage(root, file string) string {
	lists, _ := filepath.Glob(filepath.Join(root, "/var/lib/dpkg/info/*.list"))
	for _, l := range lists {
		b, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line == file {
				pkg, _, _ := strings.Cut(strings.TrimSuffix(filepath.Base(l), ".list"), ":")
				return pkg + "-dbgsym"
			}
		}
	}
	return ""
}

// WithPackage returns err with the Debian package of file (as the
// processes of root see it, DebugPackage) named, when err is a
// MissingDebugError (as returned, not yet wrapped in a message, which
// would keep the text it had); any other error as it is.
func WithPackage(err error, root, file string) error {
	if me := (*MissingDebugError)(nil); errors.As(err, &me) {
		me.Package = DebugPackage(root, file)
	}
	return err
}

// MissingDebugError says that what a build's code and tables did not give
// would be read from its debug symbols, and which file and package hold
// them: one line naming the cause and the fix.
type MissingDebugError struct {
	// What is what is not known, e.g. "layout of opal_free_list_t".
	What string
	// BuildID is the file's build id ("" when it has none).
	BuildID string
	// Dir is the debug directory the file would be looked up in.
	Dir string
	// Package, when known (DebugPackage), installs the debug file.
	Package string
	// Cause says why the other sources gave nothing, e.g. what the code
	// analysis stopped at.
	Cause string
}

func (e *MissingDebugError) Error() string {
	s := e.What + " not known for this build"
	if e.Cause != "" {
		s += " (" + e.Cause + ")"
	}
	if e.BuildID == "" {
		return s + ": the file has no build id to find its debug file by: pass the library built with -g, or --debug-dir with its debug file"
	}
	s += ": install its debug file " + DebugFile(e.Dir, e.BuildID)
	if e.Package != "" {
		s += " (Debian package " + e.Package + ")"
	}
	return s + " or pass --debug-dir"
}
