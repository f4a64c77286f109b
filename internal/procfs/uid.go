package procfs

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// UID returns the real uid of a process, from /proc/PID/status (which
// any user may read): the user the process runs as.
func (f FS) UID(pid int) (int, error) {
	data, err := f.read(pid, "status")
	if err != nil {
		return -1, err
	}
	uid := StatusUID(data)
	if uid < 0 {
		return -1, fmt.Errorf("read status of %d: no Uid line", pid)
	}
	return uid, nil
}

// StatusUID returns the real uid of a /proc/PID/status text, -1 if none.
func StatusUID(b []byte) int {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				if v, err := strconv.Atoi(f[0]); err == nil {
					return v
				}
			}
		}
	}
	return -1
}
