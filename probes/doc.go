// Package probes holds mpiprobe's probe catalog, the discovery of MPI
// libraries in a process's memory map, and the attachment of the catalog's
// uprobes to those libraries.
//
// The catalog is declarative: each Event names a library, the symbols to
// probe (entry or return), the condition under which a hit counts, and the
// message, default C/T thresholds and tuning advice shown to the user. One BPF
// program serves every entry; the attach cookie (see Cookie) tells it which
// event a hit belongs to and which condition to check.
//
// Discovery is a pure function over parsed /proc/PID/maps; the files it finds
// are opened through /proc/PID/map_files or /proc/PID/root so that processes
// in other mount namespaces work, and are deduplicated by (device, inode):
// a uprobe on a file is armed in every process that maps it, so each file is
// attached once.
//
// For trace mode, MPIFunctions and FortranBindings list every MPI function
// and Fortran binding of a library, ArgsOf says which arguments hold the
// peer, count, datatype and root, and TraceAttacher attaches the trace
// programs to all of them (one uprobe_multi link per library and side).
package probes
