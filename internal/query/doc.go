// Package query is the agent's local query socket: how a user who is not
// root asks the agent (which is) for `mpiprobe status` of their own
// processes.
//
// Status needs root: it loads BPF programs, attaches uprobes and reads
// other processes' registers and memory. The agent runs as root anyway, so
// it listens on a unix socket (default DefaultPath, mode 0666: any local
// user may connect) and runs status for the caller. The kernel tells who
// the caller is (SO_PEERCRED, which the caller cannot forge); Owns turns
// that uid into the filter status applies: root sees every process, any
// other user only the processes whose real uid is theirs.
//
// The protocol is one JSON Request and one JSON Response per connection,
// both versioned (Version); the request is at most MaxRequest bytes and
// is untrusted (ReadRequest checks every field), the response at most
// MaxResponse. The answer carries the document status prints (table,
// JSON or node facts), rendered by the same code as a direct status, so
// the caller's output is root's. The server runs one status at a time:
// another caller waits up to BusyWait, then gets a busy answer that says
// to retry.
//
// The package knows nothing of status itself: the command gives the
// Server a Handler that runs it.
package query
