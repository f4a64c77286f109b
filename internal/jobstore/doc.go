// Package jobstore keeps one file per MPI job in a state directory: the
// JSON summary that `mpiprobe agent` writes for each job it traces, while
// the job runs (rewritten periodically) and after it ended, and that
// `mpiprobe jobs` and `mpiprobe report` read.
//
// A job's file is Dir/FileName(job)+".json". Job ids come from the ranks'
// environments, so users choose them: FileName escapes every byte that
// could make a path or a hidden file (a separator, "..", a leading dot,
// control bytes), reversibly, and JobOf turns a file name back into the
// job.
//
// Save replaces a file atomically (write a temporary file, fsync, rename,
// fsync the directory), so a reader sees the old summary or the new one,
// never a part; after a crash a temporary file may be left behind, which
// List ignores and Prune removes once it is an hour old. Files are 0640
// and a directory Save creates is 0750, whatever the umask.
//
// No symbolic link is followed: not one at a job's file (Load refuses it,
// List leaves it out) nor one in place of Dir (every method refuses it,
// ErrLinkedDir).
//
// Prune keeps the directory bounded: by count (Keep) and by age (MaxAge),
// never removing the summary of a job the caller says still runs.
//
// Shared is a directory the nodes share (a shared file system), where each
// node's agent writes its part of each job: Dir/FileName(job)/
// FileName(node)+".part.json", atomically as Save does, in job
// directories of mode 0770 that keep a set-group-id Dir's group; the
// merged summary goes next to the parts as SummaryName. Nothing prunes it
// yet.
package jobstore
