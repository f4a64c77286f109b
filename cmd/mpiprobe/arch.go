package main

import "fmt"

// unsupportedMessage is the one line mpiprobe prints, and exits 1 after, on
// an architecture other than x86-64 (main_unsupported.go).
func unsupportedMessage(goos, goarch string) string {
	return fmt.Sprintf("mpiprobe: linux/amd64 only (this is %s/%s): the BPF programs read x86-64 registers and call sites are found by x86-64 decoding; see docs/arm64.md", goos, goarch)
}
