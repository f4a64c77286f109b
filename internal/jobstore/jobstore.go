package jobstore

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/atomicfile"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// DefaultStateDir is mpiprobe's state directory; the jobs' summaries are
// in JobsDir(DefaultStateDir).
const DefaultStateDir = "/var/lib/mpiprobe"

// JobsDir is the directory of the jobs' summaries in the state directory
// stateDir.
func JobsDir(stateDir string) string { return filepath.Join(stateDir, "jobs") }

const (
	// ext ends every job's file name.
	ext = ".json"
	// staleTemp is the age from which Prune removes a temporary file: it
	// was left by a Save that crashed.
	staleTemp = time.Hour
	// fileMode and dirMode are the modes of a job's file and of a
	// directory Save creates.
	fileMode = 0o640
	dirMode  = 0o750
	// maxName is the longest file name Linux file systems take.
	maxName = 255
)

// Store is a directory of job summaries, one file per job.
type Store struct {
	// Dir holds the files, e.g. JobsDir(DefaultStateDir).
	Dir string
	// Keep is how many summaries Prune leaves, newest first, besides
	// those of the jobs it is told to keep; 0 or less means no limit.
	Keep int
	// MaxAge is the age (since the last Save) beyond which Prune removes
	// a summary, unless it is told to keep the job; 0 or less means no
	// limit.
	MaxAge time.Duration
	// Now returns the current time for Prune; nil means time.Now.
	Now func() time.Time
}

// Entry is one job's file in a Store.
type Entry struct {
	// Job is the job id (JobOf of the file's name).
	Job string
	// Path is the file's path: the Store's Dir and the file's name.
	Path string
	// Modified is when the file was last written.
	Modified time.Time
}

// NotFoundError is Load's error when the store has no summary of the job;
// it matches fs.ErrNotExist.
type NotFoundError struct {
	// Job is the job asked for and Dir the directory looked in.
	Job, Dir string
}

// Error names the job, the directory and `mpiprobe jobs`, which lists the
// jobs there.
func (e *NotFoundError) Error() string {
	return fmt.Sprintf("jobstore: no summary of job %s in %s (mpiprobe jobs lists the jobs there)", text.Quote(e.Job), e.Dir)
}

// Unwrap returns fs.ErrNotExist.
func (e *NotFoundError) Unwrap() error { return fs.ErrNotExist }

// Path returns the path of job's file in the store, whether or not it
// exists.
func (s Store) Path(job string) string { return filepath.Join(s.Dir, FileName(job)+ext) }

// Save makes data the summary of job, atomically: it writes a temporary
// file in Dir, syncs it to disk, sets its mode to 0640, renames it over
// the job's file and syncs the directory, so that a reader sees the whole
// old summary or the whole new one. It creates Dir (mode 0750) when it is
// missing.
func (s Store) Save(job string, data []byte) (err error) {
	if err := s.check(job); err != nil {
		return fmt.Errorf("jobstore: save %s: %w", text.Quote(job), err)
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("jobstore: save %s: %w", text.Quote(job), err)
		}
	}()
	if err := s.mkdir(); err != nil {
		return err
	}
	f, err := atomicfile.Create(s.Path(job), fileMode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(fileMode) // the umask does not apply to chmod
	}
	return f.Finish(err)
}

// Load returns the summary of job; when the store has none the error is a
// *NotFoundError, naming the job and `mpiprobe jobs` as the way to see
// which jobs there are. Neither a symbolic link at the job's file nor one
// in place of Dir is followed (atomicfile.ReadFile, ErrLinkedDir).
func (s Store) Load(job string) ([]byte, error) {
	if err := s.check(job); err != nil {
		return nil, fmt.Errorf("jobstore: load %s: %w", text.Quote(job), err)
	}
	if err := s.noLink(); err != nil {
		return nil, fmt.Errorf("jobstore: load %s: %w", text.Quote(job), err)
	}
	data, err := atomicfile.ReadFile(s.Path(job))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &NotFoundError{Job: job, Dir: s.Dir}
	}
	if err != nil {
		return nil, fmt.Errorf("jobstore: load %s: %w", text.Quote(job), err)
	}
	return data, nil
}

// List returns the jobs' files, newest first (then by job id). Files that
// are not a job's (temporary files, other names, directories, symbolic
// links) are left out. A missing Dir holds no jobs.
func (s Store) List() ([]Entry, error) {
	if s.Dir == "" {
		return nil, errors.New("jobstore: list: no directory")
	}
	if err := s.noLink(); err != nil {
		return nil, fmt.Errorf("jobstore: list: %w", err)
	}
	des, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jobstore: list: %w", err)
	}
	var out []Entry
	for _, de := range des {
		job, ok := JobOf(de.Name())
		if !ok || !de.Type().IsRegular() {
			continue
		}
		fi, err := de.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since ReadDir
		}
		if err != nil {
			return nil, fmt.Errorf("jobstore: list: %w", err)
		}
		out = append(out, Entry{Job: job, Path: filepath.Join(s.Dir, de.Name()), Modified: fi.ModTime()})
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if c := b.Modified.Compare(a.Modified); c != 0 {
			return c
		}
		return cmp.Compare(a.Job, b.Job)
	})
	return out, nil
}

// Prune removes the summaries older than MaxAge and those beyond the
// newest Keep, except the jobs for which keep (which may be nil) returns
// true, e.g. those still running: they are neither removed nor counted
// against Keep. It also removes temporary files that a crashed Save left,
// once they are an hour old. It returns the jobs whose summaries it
// removed; it goes on after a failed removal and returns the first error.
func (s Store) Prune(keep func(job string) bool) ([]string, error) {
	entries, err := s.List()
	if err != nil {
		return nil, err
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	t := now()
	var (
		removed  []string
		firstErr error
		kept     int
	)
	fail := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	for _, e := range entries {
		if keep != nil && keep(e.Job) {
			continue
		}
		old := s.MaxAge > 0 && t.Sub(e.Modified) > s.MaxAge
		over := s.Keep > 0 && kept >= s.Keep
		if !old && !over {
			kept++
			continue
		}
		// A summary written again since List is not the one judged.
		if fi, err := os.Lstat(e.Path); err != nil || !fi.Mode().IsRegular() || !fi.ModTime().Equal(e.Modified) {
			continue
		}
		if err := os.Remove(e.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			fail(fmt.Errorf("jobstore: prune %s: %w", text.Quote(e.Job), err))
			continue
		}
		removed = append(removed, e.Job)
	}

	des, err := os.ReadDir(s.Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		fail(fmt.Errorf("jobstore: prune: %w", err))
	}
	for _, de := range des {
		name := de.Name()
		if !atomicfile.IsTemp(name) || !de.Type().IsRegular() {
			continue
		}
		fi, err := de.Info()
		if err != nil || t.Sub(fi.ModTime()) < staleTemp {
			continue
		}
		if err := os.Remove(filepath.Join(s.Dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			fail(fmt.Errorf("jobstore: prune: %w", err))
		}
	}
	return removed, firstErr
}

// check says why job cannot be stored in s, or nil.
func (s Store) check(job string) error {
	switch {
	case s.Dir == "":
		return errors.New("no directory")
	case job == "":
		return errors.New("empty job id")
	case len(FileName(job))+len(ext) > maxName:
		return fmt.Errorf("job id too long for a file name (%d bytes escaped, at most %d)", len(FileName(job)), maxName-len(ext))
	}
	return nil
}

// mkdir creates Dir with mode 0750 (and missing parents) when it is
// missing.
func (s Store) mkdir() error {
	if err := s.noLink(); err != nil {
		return err
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, fs.ErrNotExist) {
		return nil // it exists, or creating it would fail the same way as the temporary file
	}
	if err := os.MkdirAll(s.Dir, dirMode); err != nil {
		return err
	}
	return os.Chmod(s.Dir, dirMode) // MkdirAll's mode is masked by the umask
}

// ErrLinkedDir is the error (wrapped) of Save, Load, List and Prune when
// the store's directory is a symbolic link: it is not followed, so that a
// link planted where the agent keeps its summaries cannot make it write
// (or a reader read) another directory's files.
var ErrLinkedDir = errors.New("is a symbolic link, which is not followed (remove it; the agent creates the directory)")

// noLink says whether Dir is a symbolic link (ErrLinkedDir, naming Dir);
// nil when it is not or does not exist.
func (s Store) noLink() error {
	fi, err := os.Lstat(s.Dir)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s %w", s.Dir, ErrLinkedDir)
	}
	return nil
}

// safe reports whether FileName keeps byte c as it is (a leading '.' or
// '-' aside).
func safe(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '.' || c == '_' || c == '@' || c == '+' || c == '-'
}

// FileName is the name of job's file in a store, without the ".json" that
// ends it: job with every byte outside [A-Za-z0-9._@+-], and a leading
// '.' or '-', written as %XX (two upper-case hex digits). It never contains
// a path separator, is never "." or "..", never starts with a dot (a hidden
// file) or a dash (read as an option by rm, ls or grep in an operator's
// shell), and different jobs have different names. The empty job has the empty name, which Save
// and Load refuse.
func FileName(job string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(job))
	for i := 0; i < len(job); i++ {
		c := job[i]
		if safe(c) && (i > 0 || !leading(c)) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xf])
	}
	return b.String()
}

// JobOf returns the job whose file is named file (a name in a store's
// directory, ".json" included): JobOf(FileName(job)+".json") is job. It
// reports false for any other name, e.g. a temporary file, a name not
// ending in ".json", or a name FileName does not produce (a lower-case or
// needless escape, an empty job).
func JobOf(file string) (string, bool) {
	stem, ok := strings.CutSuffix(file, ext)
	if !ok || stem == "" {
		return "", false
	}
	job := make([]byte, 0, len(stem))
	for i := 0; i < len(stem); i++ {
		c := stem[i]
		if c != '%' {
			if !safe(c) || (len(job) == 0 && leading(c)) {
				return "", false
			}
			job = append(job, c)
			continue
		}
		if i+2 >= len(stem) {
			return "", false
		}
		hi, ok1 := unhex(stem[i+1])
		lo, ok2 := unhex(stem[i+2])
		if !ok1 || !ok2 {
			return "", false
		}
		v := hi<<4 | lo
		if safe(v) && (len(job) > 0 || !leading(v)) {
			return "", false // FileName would not have escaped it
		}
		job = append(job, v)
		i += 2
	}
	return string(job), true
}

// Key is the name under which a job's summary is stored when the job has
// the id job: job itself, or "job-" and 16 hex digits of its SHA-256 when
// job's file name would not fit in a file name (FileName writes a byte as
// three) or when job starts with "pid-" or "job-", the prefixes of the
// names the agent gives processes without a job id and hashed ids. Two
// different ids get different keys (barring a hash collision), and no id
// gets the key "pid-N". The summary holds the id itself.
func Key(job string) string {
	if len(FileName(job)) > maxKeyFile || strings.HasPrefix(job, "pid-") || strings.HasPrefix(job, "job-") {
		sum := sha256.Sum256([]byte(job))
		return "job-" + hex.EncodeToString(sum[:8])
	}
	return job
}

// maxKeyFile is the longest escaped job id used as a file name: 255 bytes
// less ".json".
const maxKeyFile = 255 - len(ext)

// leading reports whether FileName escapes c at the start of a name.
func leading(c byte) bool { return c == '.' || c == '-' }

// unhex reads an upper-case hex digit.
func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
