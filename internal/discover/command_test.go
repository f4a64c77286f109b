package discover

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCommandLibraryDirs(t *testing.T) {
	for _, c := range []struct {
		name, ldPath, launcher string
		want                   []string
	}{
		{"nothing", "", "", nil},
		{"module path then prefix", "/opt/spack/ompi/lib::/opt/x/lib64/", "/opt/ompi-4.0.7/bin/mpirun",
			[]string{"/opt/spack/ompi/lib", "/opt/x/lib64", "/opt/ompi-4.0.7/lib", "/opt/ompi-4.0.7/lib64"}},
		{"relative entries are not searched", "lib:./x:/a", "", []string{"/a"}},
		{"a directory named twice is searched once", "/opt/ompi/lib:/opt/ompi/lib/", "/opt/ompi/bin/mpirun",
			[]string{"/opt/ompi/lib", "/opt/ompi/lib64"}},
		{"system launcher", "", "/usr/bin/mpirun", []string{"/usr/lib", "/usr/lib64"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := CommandLibraryDirs(c.ldPath, c.launcher); !slices.Equal(got, c.want) {
				t.Errorf("CommandLibraryDirs(%q, %q) = %q, want %q", c.ldPath, c.launcher, got, c.want)
			}
		})
	}
}

// TestLibrariesIn lays out a prefix install as Open MPI's make install
// does (the library and its links) beside files that are not MPI
// libraries, a component and a dangling link.
func TestLibrariesIn(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib")
	if err := os.MkdirAll(filepath.Join(lib, "openmpi"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"libmpi.so.40.20.7", "libopen-pal.so.40.20.7", "libhwloc.so.15", "mca_pml_ob1.so", "libmpich.so.12.2.0", "libucp.so.0"} {
		if err := os.WriteFile(filepath.Join(lib, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"libmpi.so.40": "libmpi.so.40.20.7", "libmpi.so": "libmpi.so.40", "libopen-pal.so.40": "libopen-pal.so.40.20.7", "libmpi.so.12": "gone"} {
		if err := os.Symlink(target, filepath.Join(lib, link)); err != nil {
			t.Fatal(err)
		}
	}
	got := LibrariesIn([]string{lib, filepath.Join(dir, "missing"), lib})
	var base []string
	for _, p := range got {
		base = append(base, filepath.Base(p))
	}
	// One name per file (libmpi.so.40 before libmpi.so.40.20.7 in
	// directory order), no component, nothing dangling.
	want := []string{"libmpi.so.40", "libmpich.so.12.2.0", "libopen-pal.so.40", "libucp.so.0"}
	if !slices.Equal(base, want) {
		t.Errorf("LibrariesIn = %q, want %q", base, want)
	}
}
