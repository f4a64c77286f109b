// Package config parses mpiprobe's configuration file, by default
// /etc/mpiprobe/config.conf ([DefaultPath]). The node-wide agent
// (mpiprobe agent) reads all of it; the per-job command (mpiprobe --config
// FILE) uses only the thresholds and accepts, and ignores, the agent's keys,
// so one file serves both.
//
// # Syntax
//
// The file is UTF-8 text (a byte order mark at the start is ignored) with
// one "key = value" setting per line. Blank lines are ignored and '#'
// starts a comment that runs to the end of the line, so values cannot
// contain '#'. Spaces around keys and values are ignored. Lines may be at
// most [MaxLine] bytes long. Keys are case-sensitive and each may be given
// only once. A key not set takes its default ([Default]).
//
// An unknown key, a bad value, a malformed line or a key given twice is an
// error. Every error is one line naming the file, the line number and the
// key, and saying how to fix it:
//
//	config /etc/mpiprobe/config.conf:7: key "T": "ten" is not a duration (use e.g. 10s, 2m)
//	config /etc/mpiprobe/config.conf:3: unknown key "metrics-addr" (did you mean "metrics_addr"?)
//	config /etc/mpiprobe/config.conf:9: key "C" repeats line 2 (keep only one of them)
//
// # Durations
//
// Durations are Go durations such as 10s, 1m30s, 500ms or 2h; the agent's
// duration keys (retention.age, interval, metrics_ttl) also take whole days
// in front, such as 30d or 1d12h, and reject a bare number other than 0.
// The T of the thresholds is the exception: as on the command line, a bare
// whole number there means seconds (T = 10 is T = 10s, and
// threshold.EVENT = 5/10 is 5/10s).
//
// # Thresholds
//
// These keys override the probe catalog's C/T rule (see package thresholds
// for the rule and how the layers combine; the command line beats the file):
//
//	C = 1000
//
// C (count, default: each event's catalog value) is the count threshold of
// every event: a decimal whole number, 0 or more.
//
//	T = 10s
//
// T (duration, default: each event's catalog value) is the time delay of
// every event: a duration, 0 or more; 0 means no time limit.
//
//	threshold.ob1.send_pending.new = 500/30s
//
// threshold.EVENT (C/T, no default) overrides one event, with the syntax of
// --threshold: "500/30s" sets C and T, "500/" or "500" only C, "/30s" only
// T. It beats C and T of the file. EVENT must be an event of the catalog
// (mpiprobe -h lists them).
//
// # Agent keys
//
//	events = default,retries
//
// events (comma-separated levels, default: default) are the probe levels
// the agent enables: default (cold paths only), retries, messages (a probe
// hit per message), or all alone.
//
//	library_paths = /opt/openmpi/lib:/opt/mpich/lib/libmpi.so.12
//
// library_paths (colon-separated absolute paths, default: none) are files
// or directories searched for MPI libraries in addition to those ldconfig
// knows.
//
//	debug_dirs = /opt/openmpi/lib/debug
//
// debug_dirs (colon-separated absolute directories, default: none) are
// searched before /usr/lib/debug for the separate debug file of an MPI
// library (<dir>/.build-id/ab/cdef….debug, as gdb names them): mpiprobe
// reads the layout of a struct it must read (opal_free_list_t) from it when
// the library's build is not one it knows. Read by the agent and by
// mpiprobe --config.
//
//	metrics_addr = 127.0.0.1:9767
//
// metrics_addr (host:port or off, default: 127.0.0.1:9767) is where the
// agent serves its metrics. The host is an IP address (IPv6 in brackets,
// [::1]:9767) or a name, or empty for every address (:9767); the port is a
// number from 0 to 65535. off serves no metrics.
//
//	state_dir = /var/lib/mpiprobe
//
// state_dir (absolute path, default: /var/lib/mpiprobe) is the directory
// where the agent keeps job summaries.
//
//	shared_dir = /shared/mpiprobe
//
// shared_dir (absolute path, default: none) is a directory on a file system
// the nodes share: the agent writes there its node's part of each job's
// summary, which `mpiprobe report --job JOBID --shared-dir DIR` merges
// into one summary of the job (docs/agent.md).
//
//	query_socket = /run/mpiprobe/query.sock
//
// query_socket (absolute path or off, default: /run/mpiprobe/query.sock) is
// the unix socket where the agent answers `mpiprobe status` run by users
// who are not root, for their own processes (package query, docs/agent.md).
// off serves none.
//
//	retention.jobs = 1000
//
// retention.jobs (whole number, 1 or more, default: 1000) is how many job
// summaries the agent keeps.
//
//	retention.age = 30d
//
// retention.age (duration, 1m or more, default: 30d, that is 720h) is how
// long the agent keeps a job summary.
//
//	interval = 1s
//
// interval (duration, 100ms to 1m, default: 1s) is the time between two
// reads of the counters.
//
//	pin_dir = /sys/fs/bpf/mpiprobe/agent
//
// pin_dir (absolute path below /sys/fs/bpf, default:
// /sys/fs/bpf/mpiprobe/agent) is where the agent pins its BPF maps and
// programs.
//
//	metrics_ttl = 10m
//
// metrics_ttl (duration, 0 or more, default: 10m) is how long a finished
// job stays in the metrics.
//
//	scope = host
//
// scope (host or netns, default: host) is which processes of the node
// mpiprobe watches: host, all of them; netns, only those of its own
// network namespace (as a pod's sidecar). MPIPROBE_SCOPE overrides it, and
// --scope overrides both.
//
// Paths are cleaned (/opt//lib/ becomes /opt/lib). [Config.Lines] records
// the line of every key set, so that callers can let the command line win
// and name the line in later errors. The file testdata/config.conf of this
// package, installed as /etc/mpiprobe/config.conf, lists every key with its
// default.
package config
