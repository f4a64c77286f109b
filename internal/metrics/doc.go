// Package metrics serves mpiprobe's Prometheus metrics over HTTP with
// github.com/prometheus/client_golang.
//
// # The page
//
// The agent's state changes with the jobs it follows, so its metrics come
// from a [Collector]: at every scrape it calls a fill function, which adds
// the samples of the moment to a [Page] (under the agent's lock), each
// with its [Family] (name, help text, kind) and labels. [NewRegistry] puts
// such collectors into a registry together with the Go runtime's and the
// process's collectors and [BuildInfoName]; [Handler] serves a registry's
// page, in the Prometheus text format or OpenMetrics and gzip-compressed
// when the scraper asks for it.
//
// # One bad sample never fails the page
//
// Label values come from users (job names from the environment), so
// [Page.Add] makes them valid UTF-8 (the exposition escapes quotes,
// backslashes and newlines). A sample that still cannot be written (its
// label set repeats one of the same family in this scrape, a name is
// invalid) is left out alone: the rest of its family and every other
// family stay on the page. Each kind of problem of a family is logged
// once, not at every scrape, and the gauge [DroppedName]{reason="invalid"}
// says how many samples this scrape lacks.
//
// # Bounded cardinality
//
// mpiprobe labels some series by job and rank, so a node running many
// jobs could grow the page without bound. The agent ages finished jobs
// out, and as a backstop a Collector takes a cap: samples added beyond it
// are left out and counted in [DroppedName]{reason="series_cap"}. Both
// reasons are always on the page (0 when nothing was dropped), and worth
// an alert: a nonzero value means the page is incomplete.
//
// # Serving
//
// The agent serves the page on 127.0.0.1:9767 by default ([DefaultAddr]):
// [Listen] opens the port with an error message that says how to pick
// another one, [Handler] answers GET and HEAD scrapes ([MaxScrapes] at a
// time), and [Serve] runs the HTTP server until its context ends, then
// shuts it down gracefully. With a web configuration file (the Prometheus
// exporters' --web.config.file, checked by [CheckWebConfig]), Serve goes
// through github.com/prometheus/exporter-toolkit: TLS and basic
// authentication.
package metrics
