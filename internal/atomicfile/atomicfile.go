// Package atomicfile writes a file so that its path holds the whole old
// file or the whole new one, never a part: the data goes to a temporary
// file in the same directory, which is synced to disk and renamed over the
// path only once every write, the sync and the close succeeded. A symbolic
// link at the path is replaced, not followed; a failed write leaves the old
// file as it was.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// TempPrefix and TempSuffix bound the names of the temporary files: a
// crash between Create and Commit leaves one behind.
const (
	TempPrefix = ".mpiprobe-"
	TempSuffix = ".tmp"
)

// IsTemp reports whether a file name is that of a temporary file.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, TempPrefix) && strings.HasSuffix(name, TempSuffix)
}

// File is a file being written in place of its path. Write to it (it is an
// *os.File), then Commit, or Finish with the first error of the writes;
// Abort, which does nothing after Commit, removes it otherwise.
type File struct {
	*os.File
	path string
	done bool
	werr error // the first error of Write
}

// Write writes p to the temporary file, remembering the first error: a
// writer above (a buffer, an encoder) may wrap or drop it, and Finish and
// Commit then still fail with it.
func (f *File) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	if err != nil && f.werr == nil {
		f.werr = err
	}
	return n, err
}

// Create starts writing the file path: a temporary file in path's
// directory, with the mode perm less the umask.
func Create(path string, perm fs.FileMode) (*File, error) {
	dir, base := filepath.Split(path)
	if base == "" || base == "." || base == ".." {
		return nil, &fs.PathError{Op: "create", Path: path, Err: syscall.EISDIR}
	}
	if dir == "" {
		dir = "."
	}
	for range 10000 {
		tmp := filepath.Join(dir, TempPrefix+strconv.FormatUint(uint64(rand.Uint32()), 36)+TempSuffix)
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			// Name the file asked for, not the temporary one.
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, &fs.PathError{Op: "create", Path: path, Err: err}
		}
		return &File{File: f, path: path}, nil
	}
	return nil, &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
}

// Path is the path the file replaces on Commit.
func (f *File) Path() string { return f.path }

// Commit syncs the file to disk, closes it, renames it over its path and
// syncs the directory. On an error the temporary file is removed and the
// path keeps what it held; the error names the path.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("write %s: already committed or aborted", f.path)
	}
	if f.werr != nil {
		return f.Finish(f.werr)
	}
	f.done = true
	tmp := f.File.Name()
	err := f.File.Sync()
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, f.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", f.path, unwrapPath(err))
	}
	if err := syncDir(filepath.Dir(f.path)); err != nil {
		return fmt.Errorf("write %s: sync directory: %w", f.path, unwrapPath(err))
	}
	return nil
}

// Abort closes and removes the temporary file, leaving the path as it
// was; after Commit it does nothing.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	os.Remove(f.File.Name())
}

// Finish ends the file after writes whose first error was werr: nil, and
// no Write failed, commits it (Commit's error), else it is aborted and the
// error is that of the failed Write, or werr, naming the path (not the
// temporary file) and the cause, e.g. "write out.json: no space left on
// device".
func (f *File) Finish(werr error) error {
	if f.werr != nil {
		werr = f.werr
	}
	if werr == nil {
		return f.Commit()
	}
	f.Abort()
	return fmt.Errorf("write %s: %w", f.path, unwrapPath(werr))
}

// Write makes data the content of path, atomically; the file has the
// mode perm less the umask.
func Write(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return f.Finish(err)
}

// unwrapPath drops a *fs.PathError's operation and temporary file name,
// which mean nothing to the user, keeping its cause.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// ErrNotRegular is ReadFile's error for a path that is not a regular file:
// a symbolic link (which ReadFile does not follow), a directory, a device
// or a FIFO. None is a file Write or Commit made.
var ErrNotRegular = errors.New("not a regular file (a symbolic link is not followed)")

// ReadFile reads the file path that Write or Commit made: a symbolic link
// at path is not followed, and neither it nor any other file that is not a
// regular one is read (the error matches ErrNotRegular), so that a link
// planted in a directory mpiprobe owns cannot make it read another file.
func ReadFile(path string) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO does not wait for a writer.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &fs.PathError{Op: "read", Path: path, Err: ErrNotRegular}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: ErrNotRegular}
	}
	return io.ReadAll(f)
}
