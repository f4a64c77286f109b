package discover

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// TestScope scopes fakeProc's ranks 42 and 45 to two network namespaces,
// 42's being mpiprobe's own ("self"): -p of 45 says why in one line,
// --job and the scans leave it out, and at host scope nothing changes.
func TestScope(t *testing.T) {
	pfs := fakeProc(t)
	net := func(pid string) string {
		p := filepath.Join(pfs.Root, pid, "ns", "net")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := os.WriteFile(net("42"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(net("45"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("42", filepath.Join(pfs.Root, "self")); err != nil {
		t.Fatal(err)
	}
	scoped, err := pfs.Scoped(procfs.ScopeNetns)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := CheckTarget(scoped, 42); err != nil {
		t.Errorf("CheckTarget(42) in its own namespace: %v", err)
	}
	_, err = CheckTarget(scoped, 45)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "pid 45 (rank) runs in another network namespace") ||
		!strings.Contains(err.Error(), "nsenter --net=/proc/45/ns/net") || !strings.Contains(err.Error(), "--scope host") {
		t.Errorf("CheckTarget(45) outside the scope: %v", err)
	}
	if _, err := CheckTarget(pfs, 45); err != nil {
		t.Errorf("CheckTarget(45) at host scope: %v", err)
	}

	if pids, err := JobPIDs(scoped, "other@1", "h"); err == nil {
		t.Errorf("JobPIDs of 45's job in another namespace: %v, want none", pids)
	}
	if pids, err := JobPIDs(pfs, "other@1", "h"); err != nil || !slices.Equal(pids, []int{45}) {
		t.Errorf("JobPIDs at host scope: %v, %v", pids, err)
	}
	for pid, want := range map[int]bool{42: true, 45: false} {
		if _, _, ok := Scan(scoped, pid, nil); ok != want {
			t.Errorf("Scan(%d) in scope: %v, want %v", pid, ok, want)
		}
		if _, _, ok := Scan(pfs, pid, nil); !ok {
			t.Errorf("Scan(%d) at host scope: not found", pid)
		}
	}
}
