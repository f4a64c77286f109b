// Package metrics writes mpiprobe's metrics in the Prometheus text
// exposition format (version 0.0.4) and serves them over HTTP, without a
// Prometheus client library.
//
// # The page
//
// The caller hands [Encode] (or [Handler], which calls it for every scrape)
// its metrics as [Family] values. Encode validates them, sorts them and
// writes them deterministically: families sorted by name, each with one
// "# HELP" and one "# TYPE" line, and its samples sorted by their label
// values (compared in the order the labels are given). Label values are
// escaped (backslash, double quote, newline) and any invalid UTF-8 in them
// is replaced with U+FFFD, as Prometheus accepts only valid UTF-8. Invalid
// input (a bad metric or label name, a counter not ending in "_total", a
// duplicate series, ...) is a programming error of the caller: Encode
// returns an error naming the family and the label and writes nothing.
//
// # Bounded cardinality
//
// mpiprobe labels some series by host, job and rank, so a node running many
// jobs could grow the page without bound. Two things keep it small. The
// agent ages finished jobs out: their series leave the page some time after
// the job ends. And as a
// backstop, Encode takes a cap, maxSeries: when the page would hold more
// samples than that, it keeps the samples in page order (families by name,
// samples by label values) until the cap and drops the rest. With a cap, the
// page always carries the gauge mpiprobe_metrics_series_dropped, the number
// of samples dropped from this scrape (0 when none were), which is worth an
// alert: a nonzero value means the page is incomplete.
//
// # Serving
//
// The agent serves the page on 127.0.0.1:9767 by default ([DefaultAddr]):
// [Listen] opens the port with an error message that says how to pick
// another one, [Handler] answers GET and HEAD scrapes, and [Serve] runs
// the HTTP server until its context ends, then shuts it down gracefully.
package metrics
