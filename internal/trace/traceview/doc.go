// Package traceview reads a recorded trace back as each rank's loop
// structure: every thread's stream of MPI calls, with the compute bursts
// between them, becomes a sequence of (call, call site) symbols that package
// loops compresses; call sites are numbered in the order they first appear,
// ranks in rank order, so that the same source line has the same number on
// every rank; loops are turned to start where the program's do, by the
// call sites' functions and addresses (loops.Rephase). Show prints the call
// sites and each distinct structure once with the ranks that share it
// ("ranks 1-3"), or every rank in detail; times carry their units. ShowJSON prints the same as a versioned JSON document
// for programs.
package traceview
