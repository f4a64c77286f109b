package bpf

import (
	"bytes"
	"errors"
)

// The build constraint of bpf2go's output for -target amd64, and the one
// of the declarations for every other architecture.
const (
	amd64Constraint = "//go:build (386 || amd64) && linux\n"
	otherConstraint = "//go:build linux && !(386 || amd64)\n"
)

// The embedding of the object in bpf2go's output, and what replaces it.
const (
	amd64Embed = "//go:embed mpiprobe_x86_bpfel.o\nvar _MpiprobeBytes []byte\n"
	otherEmbed = "// No BPF object exists for this architecture: loading fails.\nvar _MpiprobeBytes []byte\n"
)

// OtherArchSource turns the source bpf2go generated for amd64 into
// mpiprobe_other.go: the same declarations under the complementary build
// constraint, without the embedded object (LoadMpiprobe then fails). It is
// used by gen_other.go and by the test that keeps the committed file in
// step with the generated one.
func OtherArchSource(amd64 []byte) ([]byte, error) {
	if bytes.Count(amd64, []byte(amd64Constraint)) != 1 || bytes.Count(amd64, []byte(amd64Embed)) != 1 {
		return nil, errors.New("bpf: the generated source lacks its amd64 build constraint or its embed: update OtherArchSource")
	}
	out := bytes.Replace(amd64, []byte(amd64Constraint), []byte(otherConstraint), 1)
	out = bytes.Replace(out, []byte(amd64Embed), []byte(otherEmbed), 1)
	out = bytes.Replace(out, []byte("\t_ \"embed\"\n"), nil, 1)
	return out, nil
}
