package elfx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// TestDebugPackage finds the package of a library in a root's dpkg
// database, multi-arch or not, and says nothing where none owns it.
func TestDebugPackage(t *testing.T) {
	root := t.TempDir()
	info := filepath.Join(root, "var/lib/dpkg/info")
	if err := os.MkdirAll(info, 0o755); err != nil {
		t.Fatal(err)
	}
	lists := map[string]string{
		"libopenmpi40:amd64.list": "/.\n/usr\n/usr/lib/x86_64-linux-gnu/libopen-pal.so.80.0.5\n/usr/lib/x86_64-linux-gnu/libmpi.so.40.40.7\n",
		"libmpich12.list":         "/usr/lib/x86_64-linux-gnu/libmpich.so.12.4.1\n",
	}
	for name, body := range lists {
		if err := os.WriteFile(filepath.Join(info, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for file, want := range map[string]string{
		"/usr/lib/x86_64-linux-gnu/libmpi.so.40.40.7":   "libopenmpi40-dbgsym",
		"/usr/lib/x86_64-linux-gnu/libmpich.so.12.4.1":  "libmpich12-dbgsym",
		"/usr/lib/x86_64-linux-gnu/libmpi.so.40":        "", // a link's name: dpkg lists the file
		"/opt/openmpi/lib/libopen-pal.so.80.0.5":        "",
		"/usr/lib/x86_64-linux-gnu/libopen-pal.so.80.0": "",
	} {
		if got := DebugPackage(root, file); got != want {
			t.Errorf("DebugPackage(%s) = %q, want %q", file, got, want)
		}
	}
	if got := DebugPackage(t.TempDir(), "/usr/lib/x86_64-linux-gnu/libmpi.so.40.40.7"); got != "" {
		t.Errorf("a root without dpkg: %q, want none", got)
	}
	e := &MissingDebugError{What: "layout of opal_free_list_t", BuildID: "0123456789", Dir: DefaultDebugDir, Package: "libopenmpi40-dbgsym", Cause: "its code did not decide it"}
	want := "layout of opal_free_list_t not known for this build (its code did not decide it): install its debug file /usr/lib/debug/.build-id/01/23456789.debug (Debian package libopenmpi40-dbgsym) or pass --debug-dir"
	if e.Error() != want || strings.Contains(e.Error(), "\n") {
		t.Errorf("%q\nwant %q", e.Error(), want)
	}
	named := WithPackage(&MissingDebugError{What: "x", BuildID: "0123456789", Dir: DefaultDebugDir}, root, "/usr/lib/x86_64-linux-gnu/libmpi.so.40.40.7")
	if !strings.Contains(named.Error(), "(Debian package libopenmpi40-dbgsym)") {
		t.Errorf("WithPackage: %q names no package", named)
	}
	if WithPackage(nil, root, "/x") != nil {
		t.Errorf("WithPackage(nil) is not nil")
	}
	// The host's own Open MPI, as Debian installs it.
	pal, err := filepath.EvalSymlinks("/usr/lib/x86_64-linux-gnu/libopen-pal.so.40")
	if err != nil {
		mpitest.Require(t, "Debian's libopenmpi3: "+err.Error())
	}
	if got := DebugPackage("/", pal); got != "libopenmpi3-dbgsym" {
		t.Errorf("DebugPackage(/, %s) = %q, want libopenmpi3-dbgsym", pal, got)
	}
}
