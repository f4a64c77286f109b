// Package probes holds mpiprobe's probe catalog, the attach cookies, and
// the attachment of the catalog's uprobes to MPI library files: the edge
// between what mpiprobe counts and the libraries' symbols.
//
// The catalog is declarative: each Event names a library, the symbols to
// probe (entry or return), the condition under which a hit counts, and the
// message, default C/T thresholds and tuning advice shown to the user. One BPF
// program serves every entry; the attach cookie (see Cookie) tells it which
// event a hit belongs to and which condition to check.
//
// The files to attach to (Target) are found by package discover; they are
// read through package elfx (symbols, build ids, DWARF). Attachers attach
// each file, by (device, inode), once: a uprobe on a file is armed in every
// process that maps it. The struct layouts the programs read (the Open
// MPI free lists, the communicators of --collectives) come from package
// mpiabi, which knows the MPI builds.
//
// For trace mode, mpiabi.MPIFunctions lists every MPI function of a library,
// argsOf says which arguments hold the peer, count, datatype and root, and
// TraceAttacher attaches the trace programs to all of them and to every
// Fortran binding (one uprobe_multi link per library and side).
package probes
