// Package probecheck answers `mpiprobe probes -p PID`: which entries of the
// probe catalog attach to the MPI libraries one process maps, and why the
// others cannot (a symbol missing in that build, a struct layout unknown,
// a library the process does not map). It attaches as a counting session
// would and detaches at once; nothing is counted and the process is not
// traced. It is a mode of its own: it imports no other mode.
package probecheck
