package discover

import (
	"bufio"
	"bytes"
	"strings"
)

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
