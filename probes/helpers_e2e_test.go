package probes_test

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

func inodeOf(st os.FileInfo) (ino, dev uint64) {
	s := st.Sys().(*syscall.Stat_t)
	return s.Ino, s.Dev
}

func itoa(n int) string { return strconv.Itoa(n) }

func missingTools(tools ...string) []string {
	var out []string
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			out = append(out, t+" not installed")
		}
	}
	return out
}
