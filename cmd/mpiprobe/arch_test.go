package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCrossBuildArm64 builds the command and vets the module for
// linux/arm64: the build must succeed there (and refuse at run time, see
// main_unsupported.go) even though the BPF object is x86-64 only.
func TestCrossBuildArm64(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles the module")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	out := filepath.Join(t.TempDir(), "mpiprobe-arm64")
	for _, args := range [][]string{
		{"build", "-o", out, "."},
		{"vet", "../../..."},
	} {
		cmd := exec.Command(goBin, args...)
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("GOARCH=arm64 go %v: %v\n%s", args, err, b)
		}
	}
}

// TestUnsupportedMessage pins the line printed on other architectures.
func TestUnsupportedMessage(t *testing.T) {
	const want = "mpiprobe: linux/amd64 only (this is linux/arm64): the BPF programs read x86-64 registers and call sites are found by x86-64 decoding; see docs/arm64.md"
	if got := unsupportedMessage("linux", "arm64"); got != want {
		t.Errorf("unsupportedMessage = %q, want %q", got, want)
	}
}
