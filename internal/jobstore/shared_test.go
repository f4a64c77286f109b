package jobstore

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestSharedParts(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o770|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	s := Shared{Dir: dir}
	for _, p := range [][2]string{{"7.0", "n1"}, {"7.0", "../n2"}, {"a/b", "n1"}, {"7.0", "n1"}} {
		if err := s.SavePart(p[0], p[1], []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SaveSummary("7.0", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Jobs()
	if err != nil || !slices.Equal(jobs, []string{"7.0", "a/b"}) {
		t.Errorf("Jobs() = %q, %v", jobs, err)
	}
	parts, err := s.Parts("7.0")
	want := []string{filepath.Join(dir, "7.0", "%2E.%2Fn2.part.json"), filepath.Join(dir, "7.0", "n1.part.json")}
	if err != nil || !slices.Equal(parts, want) {
		t.Errorf("Parts(7.0) = %q, %v; want %q", parts, err, want)
	}
	if parts, err := s.Parts("none"); err != nil || parts != nil {
		t.Errorf("Parts(none) = %q, %v", parts, err)
	}
	fi, err := os.Stat(s.JobDir("7.0"))
	if err != nil || fi.Mode()&(fs.ModePerm|fs.ModeSetgid) != 0o770|fs.ModeSetgid {
		t.Errorf("job directory mode %v (%v), want drwxrws--- whatever the umask", fi.Mode(), err)
	}
	fi, err = os.Stat(s.PartPath("7.0", "n1"))
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("part mode %v (%v), want 0640", fi.Mode(), err)
	}

	err = Shared{Dir: filepath.Join(dir, "unmounted")}.SavePart("7.0", "n1", nil)
	if err == nil || !strings.Contains(err.Error(), "mount or create it") {
		t.Errorf("missing shared dir: %v", err)
	}
	if err := s.SavePart("7.0", "", nil); err == nil {
		t.Error("a part without a node name was saved")
	}
}
