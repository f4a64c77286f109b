// Package report renders an agg.Summary for people (WriteTable) and for
// programs (WriteJSON), and reads the JSON back (ReadJSON), e.g. the
// summaries the agent stores per job. It also builds the warning line
// (Warning), which the session prints and the agent sends to the journal
// as each C/T report falls due.
//
// An event's instance name (agg.Sample.Detail) is read from the traced
// process: the warning line and the tables show it escaped (text.Escape),
// the JSON keeps it exactly (control characters as JSON escapes).
//
// The table shows one block per MPI job with a row per rank and event; how a
// rank ended is always visible, so a rank killed by a signal stands out. What
// an event means and what to do about it is listed once per job below its
// table, keyed from the ADVICE column, so that a job with many ranks stays
// readable. Counter updates the tracer lost are reported as warnings, never
// left out. When MPI_Init and MPI_Finalize were timed, a startup section
// per job shows them for each rank and names the rank slowest to start.
//
// A job across nodes: each node's agent writes its Part of the job (kind
// "job_part": node, job key, final or periodic, the launcher's node list,
// the node's summary) to a shared directory (jobstore.Shared); ReadShared
// reads a job's parts (a Slurm job's bare id takes its steps) and
// MergeParts merges them: a node's latest part wins, the node list's nodes
// without a part are Missing and the result Partial, a part that does not
// read is Skipped and named. WriteShared and WriteSharedJSON show the
// result as the summary with what the parts were.
package report
