package elfx

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
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
