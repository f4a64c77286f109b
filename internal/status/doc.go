// Package status answers "who waits where" for the ranks of an MPI job on
// this node, without stopping them: `mpiprobe status`.
//
// For every thread of every rank it reads the user registers the thread
// last entered the kernel with (a BPF task iterator; a thread spinning in
// user space enters the kernel at every timer tick), unwinds its stack
// with the call-frame information of the mapped files (package unwind),
// and symbolizes the frames. The outermost frame inside an MPI API library
// (libmpi, libmpich, their Fortran bindings) names the MPI call; the frame
// that called it is the application's call site.
//
// How long a thread has been inside is known exactly when a running
// `mpiprobe --collectives` session tracks the rank (its maps are pinned,
// see package collstate): the collective in flight, its communicator, its
// sequence number and when it was entered. Without that history, status
// watches for a window: it counts the MPI calls each thread enters (a
// uprobe on every MPI function) and samples the stacks at both ends. A
// thread that entered no MPI call and sits in the same call at both ends
// has been inside for at least the window, which the verdict states as
// "at least". The communicator of a call is then found on the stack: the
// libraries pass it down through their frames, so status reads the words
// between the stack pointer and the application's frame and takes the
// communicator object most of them point to (validated against the
// library's layout: Open MPI's class pointer, MPICH's object tables).
//
// The MPI objects themselves (communicators, point-to-point requests) are
// decoded by package mpiabi; status finds them on the stack and turns what
// mpiabi reads into agg.Comm and hang.Wait (adapter.go). The decision
// itself is package hang's.
package status
