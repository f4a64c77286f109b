package atomicfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// noTemp fails when a temporary file is left in dir.
func noTemp(t *testing.T, dir string) {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		if IsTemp(de.Name()) {
			t.Errorf("temporary file left: %s", de.Name())
		}
	}
}

func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	for _, data := range []string{"old", "new"} {
		if err := Write(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != data {
			t.Errorf("%s holds %q, want %q", path, got, data)
		}
	}
	noTemp(t, dir)
}

// linked makes, in a new directory dir, a file holding data and a symbolic
// link to it.
func linked(t *testing.T, data string) (dir, file, link string) {
	t.Helper()
	dir = t.TempDir()
	file, link = filepath.Join(dir, "file"), filepath.Join(dir, "link")
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	return dir, file, link
}

// TestSymlinkReplaced: a symbolic link at the path is replaced by the new
// file; its target is left as it was.
func TestSymlinkReplaced(t *testing.T) {
	_, target, link := linked(t, "keep me")
	if err := Write(link, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != "keep me" {
		t.Errorf("the link's target holds %q", got)
	}
	fi, err := os.Lstat(link)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("%s is not a regular file: %v, %v", link, fi, err)
	}
	if got, _ := os.ReadFile(link); string(got) != "new" {
		t.Errorf("%s holds %q", link, got)
	}
}

// TestFullFileSystem: on a full file system the write fails with an error
// naming the path and the cause, the old file stays whole and no temporary
// file is left.
func TestFullFileSystem(t *testing.T) {
	dir := mpitest.Tmpfs(t, "64k")
	path := filepath.Join(dir, "out")
	if err := Write(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(bytes.Repeat([]byte("x"), 1<<20))
	if err == nil {
		err = f.Commit()
	} else {
		f.Abort()
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("writing 1 MiB to a 64 KiB file system: %v, want ENOSPC", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("%s holds %d bytes, want the old file", path, len(got))
	}
	noTemp(t, dir)

	err = Write(path, bytes.Repeat([]byte("x"), 1<<20), 0o644)
	if err == nil || !strings.HasPrefix(err.Error(), "write "+path+": ") || !errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), TempPrefix) {
		t.Errorf("Write of 1 MiB: %v, want write %s: no space left on device", err, path)
	}
	noTemp(t, dir)
}

func TestCreateErrorNamesPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "out")
	_, err := Create(path, 0o644)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), TempPrefix) {
		t.Errorf("Create in a missing directory: %v", err)
	}
}

// TestReadFileNoFollow: ReadFile reads a regular file, and refuses a
// symbolic link (without following it) and a directory.
func TestReadFileNoFollow(t *testing.T) {
	dir, path, link := linked(t, "data")
	if got, err := ReadFile(path); err != nil || string(got) != "data" {
		t.Errorf("ReadFile(%s) = %q, %v", path, got, err)
	}
	for _, p := range []string{link, dir} {
		if got, err := ReadFile(p); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), p) || got != nil {
			t.Errorf("ReadFile(%s) = %q, %v; want ErrNotRegular", p, got, err)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v", err)
	}
}
