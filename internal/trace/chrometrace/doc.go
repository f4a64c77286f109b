// Package chrometrace exports a recorded trace as a timeline in the Trace
// Event Format that Perfetto (ui.perfetto.dev) and chrome://tracing load: a
// JSON object whose "traceEvents" holds one process per MPI rank and one
// track per thread, every MPI call a complete ("X") event whose gaps are the
// compute bursts. A trace merged from several nodes' files of one job
// (tracefile.Merge) is one timeline whose processes are named with their
// host and sorted node by node. Write streams the events, so the output never sits in
// memory whole.
package chrometrace
