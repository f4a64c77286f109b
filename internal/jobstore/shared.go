package jobstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mpiprobe/mpiprobe/internal/atomicfile"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// partExt ends the name of a node's part of a job in a Shared directory;
// a name without it (the merged summary, SummaryName) is never a part.
const partExt = ".part.json"

// SummaryName is the name of the merged summary of a job in its directory
// of a Shared directory (written by the Slurm epilog, dist/slurm): it does
// not end in ".part.json", so it is never taken for a node's part.
const SummaryName = "summary.json"

// Shared is a directory that the agents of several nodes share (a shared
// file system): each writes its node's part of each job there, in a
// directory per job, Dir/FileName(job)/FileName(node)+".part.json", and
// `mpiprobe report --shared-dir` merges a job's parts. Names are escaped
// as FileName does, so that neither a job id nor a host name makes a path.
// Files are 0640 and job directories 0770; in a set-group-id Dir they
// take Dir's group, so that a reader in that group (e.g. the Slurm epilog
// run as SlurmUser) can read them and store the merged summary.
type Shared struct {
	// Dir is the shared directory.
	Dir string
}

// JobDir is the directory of job's parts.
func (s Shared) JobDir(job string) string { return filepath.Join(s.Dir, FileName(job)) }

// PartPath is the file of node's part of job.
func (s Shared) PartPath(job, node string) string {
	return filepath.Join(s.JobDir(job), FileName(node)+partExt)
}

// SavePart makes data node's part of job, atomically (a temporary file in
// the job's directory, synced and renamed into place); it creates the
// job's directory. Dir itself must exist: a missing shared directory is a
// file system that is not mounted, not one to create.
func (s Shared) SavePart(job, node string, data []byte) error {
	if node == "" || len(FileName(node))+len(partExt) > maxName {
		return fmt.Errorf("jobstore: save the part of job %s: no node name, or one too long for a file name", text.Quote(job))
	}
	if err := s.save(job, s.PartPath(job, node), data); err != nil {
		return fmt.Errorf("jobstore: save the part of job %s: %w", text.Quote(job), err)
	}
	return nil
}

// SaveSummary makes data the merged summary of job (SummaryName in the
// job's directory), atomically.
func (s Shared) SaveSummary(job string, data []byte) error {
	if err := s.save(job, filepath.Join(s.JobDir(job), SummaryName), data); err != nil {
		return fmt.Errorf("jobstore: save the summary of job %s: %w", text.Quote(job), err)
	}
	return nil
}

// save writes data to path in job's directory, creating the directory.
func (s Shared) save(job, path string, data []byte) error {
	switch {
	case s.Dir == "":
		return errors.New("no shared directory")
	case job == "":
		return errors.New("empty job id")
	case len(FileName(job)) > maxName:
		return errors.New("job id too long for a file name")
	}
	fi, err := os.Stat(s.Dir)
	if err != nil {
		return fmt.Errorf("shared directory: %w (mount or create it, or fix --shared-dir / shared_dir)", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("shared directory %s is not a directory (fix --shared-dir / shared_dir)", s.Dir)
	}
	if err := s.mkdirJob(job); err != nil {
		return err
	}
	f, err := atomicfile.Create(path, fileMode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(fileMode)
	}
	return f.Finish(err)
}

// sharedDirMode is the mode of a job's directory in a Shared directory:
// its group (Dir's, in a set-group-id Dir) writes there too, e.g. the
// Slurm epilog's merged summary when it runs as SlurmUser.
const sharedDirMode = 0o770

// mkdirJob creates job's directory, sharedDirMode whatever the umask, and
// set-group-id when Dir is (as Linux makes it).
func (s Shared) mkdirJob(job string) error {
	dir := s.JobDir(job)
	err := os.Mkdir(dir, sharedDirMode)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	return os.Chmod(dir, sharedDirMode|fi.Mode()&fs.ModeSetgid)
}

// Jobs returns the jobs with a directory in Dir, sorted; names FileName
// does not make are left out.
func (s Shared) Jobs() ([]string, error) {
	des, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("jobstore: shared directory: %w", err)
	}
	var jobs []string
	for _, de := range des {
		if job, ok := JobOf(de.Name() + ext); ok && de.IsDir() {
			jobs = append(jobs, job)
		}
	}
	slices.Sort(jobs)
	return jobs, nil
}

// Parts returns the paths of job's parts, sorted by name; temporary files,
// the merged summary and other names are left out. A job without a
// directory has none.
func (s Shared) Parts(job string) ([]string, error) {
	dir := s.JobDir(job)
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jobstore: parts of job %s: %w", text.Quote(job), err)
	}
	var out []string
	for _, de := range des {
		if strings.HasSuffix(de.Name(), partExt) && !atomicfile.IsTemp(de.Name()) && de.Type().IsRegular() {
			out = append(out, filepath.Join(dir, de.Name()))
		}
	}
	return out, nil
}
