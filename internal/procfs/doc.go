// Package procfs parses the parts of /proc that mpiprobe needs to find MPI
// libraries in running processes and to name those processes: memory maps,
// the initial environment, stat, comm and cmdline, and the namespaces a
// process is in: its network namespace scopes what mpiprobe watches
// (FS.Net, --scope netns), and its UTS namespace names its node
// (FS.Hostname, read with setns on a thread of its own).
//
// The parsers (ParseMaps, ParseEnviron, ParseStat) are pure functions over
// bytes; they treat their input as untrusted, never panic and report
// malformed input as errors. FS is a thin reader that opens the files under
// a configurable root, so tests can point it at a temporary directory tree.
//
// A process that does not exist (or exits while it is being read) yields an
// error for which errors.Is(err, fs.ErrNotExist) holds, so callers can say
// "no such process".
package procfs
