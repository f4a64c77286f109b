// Package discover finds the MPI libraries mpiprobe attaches to, and is the
// one place where session, agent and status choose their targets.
//
// Discovery is a pure function over a parsed /proc/PID/maps (Discover):
// file names are classified (Classify) and files deduplicated by (device,
// inode), since a uprobe on a file is armed in every process that maps it,
// so each file is attached once. IsMPI tells a process of an MPI library
// from one that only maps a library MPI uses.
//
// The files found are opened through /proc/PID/map_files, or
// /proc/PID/root when map_files is refused, so that processes in other
// mount namespaces work (ProcessTargets). Open MPI components a process has
// not loaded yet are looked for next to its libmpi (ComponentDirs,
// ComponentFile), to be probed before they are.
//
// The commands choose their targets through the same functions: Named and
// Select for the processes given by pid or job (CheckTarget says, in one
// line, why a process is no target), Scan for the agent's node-wide scan,
// and SystemTargets, with ParseLdconfig and LibraryFiles, for the
// libraries on the system when mpiprobe starts the command itself.
//
// A process may run in another root (chroot, unshare --root, a container):
// the kernel shows its files by their path from mpiprobe's root, and its
// linker looks in its own root. RootOf and InRoot give its paths as it sees
// them (SeenMaps for a whole map), RootTargets the libraries of its root's
// linker cache and ExecTargets those of its $LD_LIBRARY_PATH and program
// prefix, each resolved inside the root (ResolveIn): what the session
// attaches when a process of its command runs a new program, before the
// program can call MPI (the agent does so for the first process of each
// root of the node), with the process held meanwhile (Hold);
// SystemTargets is only that look's fast path for mpiprobe's own root.
package discover
