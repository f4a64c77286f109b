//go:build ignore

// gen_other writes mpiprobe_other.go, the declarations of
// mpiprobe_x86_bpfel.go for the architectures the BPF object was not built
// for: the same types, constants and loaders, with no object embedded, so
// that the module builds there and the command can refuse to run (see
// cmd/mpiprobe/main_unsupported.go). Run by go generate after bpf2go.
package main

import (
	"fmt"
	"os"

	"github.com/mpiprobe/mpiprobe/bpf"
)

func main() {
	src, err := os.ReadFile("mpiprobe_x86_bpfel.go")
	if err == nil {
		var out []byte
		out, err = bpf.OtherArchSource(src)
		if err == nil {
			err = os.WriteFile("mpiprobe_other.go", out, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen_other:", err)
		os.Exit(1)
	}
}
