// Package agg turns what the tracer read from its BPF maps into the figures
// mpiprobe reports: per event and process totals, grouped by rank and by MPI
// job.
//
// Build is pure: it takes the traced processes, the cumulative counter
// samples, a catalog lookup and the counts of updates the kernel side had to
// drop, and returns a Summary whose order is fully determined by its inputs.
// Nothing that was counted is left out: a sample whose process is unknown is
// kept under an unknown job and rank, and a process with no samples is kept
// with no events.
//
// Merge joins the summaries that several nodes wrote of one job into one.
package agg
