package procfs

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestScopeFake scopes a fake tree: 4242 (self) and 99 share a network
// namespace (one file, hard-linked), 17 has another, 12 has none readable.
func TestScopeFake(t *testing.T) {
	root := fakeProc(t)
	mk := func(name string) string {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	own := mk("4242/ns/net")
	if err := os.WriteFile(own, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(own, mk("99/ns/net")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mk("17/ns/net"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	all, err := FS{Root: root}.PIDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		scope string
		want  []int
	}{{ScopeHost, all}, {ScopeNetns, []int{99, 4242}}} {
		f, err := FS{Root: root}.Scoped(tt.scope)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.PIDs()
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("scope %s: PIDs = %v, %v; want %v", tt.scope, got, err, tt.want)
		}
		for _, pid := range all {
			if in := f.InScope(pid); in != slices.Contains(tt.want, pid) {
				t.Errorf("scope %s: InScope(%d) = %v", tt.scope, pid, in)
			}
		}
	}
	if _, err := (FS{Root: root}).Scoped("pod"); err == nil || !strings.Contains(err.Error(), `scope "pod": give host`) {
		t.Errorf("Scoped(pod): %v", err)
	}
	if _, err := (FS{Root: t.TempDir()}).Scoped(ScopeNetns); err == nil {
		t.Error("Scoped(netns) without self: no error")
	}
	if _, err := (FS{Root: root}).Namespace(12, "net"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Namespace of a missing process: %v", err)
	}
}

// TestCmdline reads the real command line of a child.
func TestCmdline(t *testing.T) {
	root := fakeProc(t)
	if err := os.WriteFile(filepath.Join(root, "4242", "cmdline"), []byte("hydra_pmi_proxy\x00--control-port\x00vm:39587\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "99", "cmdline"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f := FS{Root: root}
	if got, err := f.Cmdline(4242); err != nil || !slices.Equal(got, []string{"hydra_pmi_proxy", "--control-port", "vm:39587"}) {
		t.Errorf("Cmdline(4242) = %q, %v", got, err)
	}
	if got, err := f.Cmdline(99); err != nil || got != nil {
		t.Errorf("Cmdline of a kernel thread = %q, %v", got, err)
	}
	if _, err := f.Cmdline(5); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Cmdline of a missing process: %v", err)
	}
}

// TestNamespacesReal starts a process in a network and UTS namespace of
// its own with a host name of its own (root and unshare needed): its host
// name is its namespace's, not this one's, and --scope netns leaves it
// out while this process is in.
func TestNamespacesReal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make namespaces")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare:", err)
	}
	cmd := exec.Command("unshare", "--net", "--uts", "sh", "-c", "hostname nodeZ && exec sleep 30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	f := FS{}
	pid := cmd.Process.Pid
	// Wait for the exec of sleep: then the host name is set.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, _ := f.Comm(pid); c == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child did not reach sleep")
		}
		time.Sleep(10 * time.Millisecond)
	}
	own, err := f.Namespace(os.Getpid(), "uts")
	if err != nil {
		t.Fatal(err)
	}
	// Again and again: a thread (the main one too) that took the child's
	// namespace must not answer for this process later.
	for i := range 20 {
		if got, err := f.Hostname(pid); err != nil || got != "nodeZ" {
			t.Fatalf("Hostname(child), call %d = %q, %v; want nodeZ", i, got, err)
		}
		if now, err := f.Namespace(os.Getpid(), "uts"); err != nil || now != own {
			t.Fatalf("after call %d, this process's uts namespace is %v, %v; was %v", i, now, err, own)
		}
	}
	mine, _ := os.Hostname()
	if got, err := f.Hostname(os.Getpid()); err != nil || got != mine {
		t.Errorf("Hostname(self) = %q, %v; want %q", got, err, mine)
	}
	// The foreign namespace did not leak into this process's threads.
	if again, _ := os.Hostname(); again != mine {
		t.Errorf("os.Hostname after Hostname(child) = %q, want %q", again, mine)
	}
	scoped, err := f.Scoped(ScopeNetns)
	if err != nil {
		t.Fatal(err)
	}
	if scoped.InScope(pid) || !scoped.InScope(os.Getpid()) || !f.InScope(pid) {
		t.Errorf("InScope: child %v, self %v, child at host scope %v", scoped.InScope(pid), scoped.InScope(os.Getpid()), f.InScope(pid))
	}
	pids, err := scoped.PIDs()
	if err != nil || slices.Contains(pids, pid) || !slices.Contains(pids, os.Getpid()) {
		t.Errorf("scoped PIDs hold the child: %v, or not this process; err %v", slices.Contains(pids, pid), err)
	}
}
