// Package text makes strings that come from outside mpiprobe (job ids,
// hostnames, communicator names, environment values, command lines) safe to
// show: every place that prints such a string to a terminal, a log line or a
// one-line verdict goes through this package, so there is one rule for what
// is kept, what is replaced and what is escaped.
package text
