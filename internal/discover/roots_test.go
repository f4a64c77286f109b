package discover

import (
	"os"
	"path/filepath"
	"testing"
)

func TestInRoot(t *testing.T) {
	for _, tc := range []struct{ root, p, want string }{
		{"/", "/usr/lib/libmpi.so.40", "/usr/lib/libmpi.so.40"},
		{"", "/usr/lib/libmpi.so.40", "/usr/lib/libmpi.so.40"},
		{"/srv/r", "/srv/r/usr/lib/libmpi.so.40", "/usr/lib/libmpi.so.40"},
		{"/srv/r/", "/srv/r/usr/lib/libmpi.so.40", "/usr/lib/libmpi.so.40"},
		{"/srv/r", "/srv/rx/usr/lib/libmpi.so.40", "/srv/rx/usr/lib/libmpi.so.40"}, // a sibling, not inside
		{"/srv/r", "/usr/lib/libmpi.so.40", "/usr/lib/libmpi.so.40"},               // outside the root: as shown
		{"mnt:[4026531841]", "/usr/lib/libmpi.so.40", "/usr/lib/libmpi.so.40"},
	} {
		if got := InRoot(tc.root, tc.p); got != tc.want {
			t.Errorf("InRoot(%q, %q) = %q, want %q", tc.root, tc.p, got, tc.want)
		}
	}
}

// TestResolveIn: links inside a root resolve inside it, also absolute ones
// and ".." above its top, as the chrooted process's own lookups would.
func TestResolveIn(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "usr/lib/x86_64-linux-gnu/openmpi/lib"), 0o755))
	must(os.WriteFile(filepath.Join(root, "usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi.so.40.30.4"), nil, 0o644))
	must(os.Symlink("usr/lib", filepath.Join(root, "lib")))
	must(os.Symlink("openmpi/lib/libmpi.so.40.30.4", filepath.Join(root, "usr/lib/x86_64-linux-gnu/libmpi.so.40")))
	must(os.MkdirAll(filepath.Join(root, "etc/alternatives"), 0o755))
	must(os.Symlink("/usr/lib/x86_64-linux-gnu/libmpi.so.40", filepath.Join(root, "etc/alternatives/libmpi.so")))
	must(os.Symlink("../../../../../../etc/alternatives/libmpi.so", filepath.Join(root, "usr/lib/x86_64-linux-gnu/libmpi.so")))
	want := "/usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi.so.40.30.4"
	for _, p := range []string{"/lib/x86_64-linux-gnu/libmpi.so.40", "/usr/lib/x86_64-linux-gnu/libmpi.so", "/etc/alternatives/libmpi.so", want} {
		got, err := ResolveIn(root, p)
		if err != nil || got != want {
			t.Errorf("ResolveIn(%s) = %q, %v; want %q", p, got, err, want)
		}
	}
	must(os.Symlink("loop", filepath.Join(root, "loop")))
	if _, err := ResolveIn(root, "/loop"); err == nil {
		t.Error("a link to itself resolved")
	}
	if _, err := ResolveIn(root, "/usr/lib/missing.so"); err == nil {
		t.Error("a missing file resolved")
	}
}
