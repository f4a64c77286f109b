package discover

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/probes"
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

// TestBuiltinComponents lays out an Open MPI 5.0 install, whose components
// are built into libmpi.so and libopen-pal.so.80 (made here with gcc, each
// defining its components' mca_*_component), beside a 4.x-style component
// file: each wanted component is found where it is, as its own target.
func TestBuiltinComponents(t *testing.T) {
	lib := filepath.Join(t.TempDir(), "lib")
	build := func(name, src string) { mpitest.GCCLib(t, filepath.Join(lib, name), src) }
	build("libmpi.so.40", "int mca_pml_ob1_component; int mca_coll_tuned_component;\n")
	build("libopen-pal.so.80", "int mca_btl_tcp_component;\n")
	build("openmpi/mca_btl_self.so", "int mca_btl_self_component;\n")
	want := []probes.Library{probes.OMPIPmlOb1, "mca_btl_tcp", "mca_btl_self", "mca_btl_vader"}
	got := map[probes.Library]string{}
	for _, tg := range componentTargets(want, filepath.Join(lib, "libmpi.so.40"), map[probes.Library]bool{}, func(p string) string { return p }) {
		got[tg.Library] = filepath.Base(tg.Display)
	}
	wantGot := map[probes.Library]string{probes.OMPIPmlOb1: "libmpi.so.40", "mca_btl_tcp": "libopen-pal.so.80", "mca_btl_self": "mca_btl_self.so"}
	if !maps.Equal(got, wantGot) {
		t.Errorf("components found in %v, want %v (vader in none)", got, wantGot)
	}
}
