package bpf

import (
	"bytes"
	"os"
	"testing"
)

// TestOtherArchInStep checks that the committed mpiprobe_other.go is what
// gen_other.go makes of the committed bpf2go output.
func TestOtherArchInStep(t *testing.T) {
	src, err := os.ReadFile("mpiprobe_x86_bpfel.go")
	if err != nil {
		t.Fatal(err)
	}
	want, err := OtherArchSource(src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("mpiprobe_other.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("mpiprobe_other.go is stale: run go generate ./bpf")
	}
}

// TestOtherArchSourceRejectsUnknown checks that a changed bpf2go output is
// refused rather than half converted.
func TestOtherArchSourceRejectsUnknown(t *testing.T) {
	if _, err := OtherArchSource([]byte("package bpf\n")); err == nil {
		t.Error("OtherArchSource accepted a source without the amd64 constraint")
	}
}
