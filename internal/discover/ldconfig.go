package discover

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// runLdconfig runs the system's ldconfig with args and returns its output.
// ldconfig lives in /sbin (or /usr/sbin), which the PATH of a user, or of
// root under su or cron, often lacks: those are tried first, then PATH.
func runLdconfig(args ...string) ([]byte, error) {
	var tried []string
	for _, p := range []string{"/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"} {
		path, err := exec.LookPath(p)
		if err != nil {
			tried = append(tried, p)
			continue
		}
		out, err := exec.Command(path, args...).Output()
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", path, strings.Join(args, " "), err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("no ldconfig (looked for %s and in $PATH): %w", strings.Join(tried[:len(tried)-1], ", "), errors.ErrUnsupported)
}

// ParseLdconfig returns the library paths listed by `ldconfig -p` whose file
// names Classify as MPI libraries, in the order listed, without duplicates.
func ParseLdconfig(out []byte) []string {
	var paths []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, "=> ")
		if i < 0 {
			continue
		}
		p := strings.TrimSpace(line[i+3:])
		if _, ok := Classify(p); !ok || !strings.HasPrefix(p, "/") || seen[p] {
			continue
		}
		seen[p] = true
		paths = append(paths, p)
	}
	return paths
}
