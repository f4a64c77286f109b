// Package journal sends mpiprobe's warnings and per-job summaries to the
// systemd journal as structured entries, or to stderr as text when the
// program does not run under systemd.
//
// # Choosing a sink
//
// [Open] decides the way systemd documents it
// (https://systemd.io/JOURNAL_NATIVE_PROTOCOL/): the service manager sets
// JOURNAL_STREAM to "DEV:INODE", the device and inode numbers of the stream
// it connected to the program's stderr, in decimal. Only when that variable
// is well formed and equals the device and inode that fstat reports for
// file descriptor 2 is stderr known to reach the journal ([UnderJournal]);
// a program started from a shell inside a service, whose stderr was
// redirected, keeps writing to its own stderr. Under the journal Open
// returns the native sink ([NewNative]), otherwise the text sink
// ([NewText]) writing to stderr.
//
// # The native sink
//
// Each [Entry] becomes one datagram on the journal's AF_UNIX SOCK_DGRAM
// socket (/run/systemd/journal/socket). The datagram holds MESSAGE,
// PRIORITY and SYSLOG_IDENTIFIER, then the entry's own fields in order,
// each as NAME=value and a newline, or, when the value contains a newline,
// as NAME, a newline, the value's length as a 64-bit little-endian integer,
// the value and a newline. Values are sent byte for byte: invalid UTF-8,
// NUL bytes, newlines and escape characters reach the journal exactly as
// given. Field names are checked (see [Field]); a name the journal would
// drop is an error from Send instead. An entry too large for a datagram
// (EMSGSIZE or ENOBUFS) is written to a sealed memfd whose descriptor is
// sent with SCM_RIGHTS in an empty datagram, the protocol's second form.
// The socket is blocking, like libsystemd's, so a full journald queue
// holds a Send back, for at most 5 seconds; it is not connected, so a
// restarted journald is reached again.
//
// # The text sink
//
// Each entry becomes lines of text written with a single Write: the first
// line is the priority word ([Priority.String]), ": " and the first line
// of the message; every further line of the message follows on its own
// line, indented by as many spaces as the prefix is long. Hence every line
// the sink writes either starts a new entry with a priority word at column
// 0 or starts with a space: nothing inside a message, even a newline taken
// from a user-controlled string, can pass for the start of another entry.
// Trailing newlines of the message are dropped. Fields are not written:
// callers put what a reader of stderr needs (host, job, rank, pid) into the
// message itself.
//
// Within each line the text sink escapes, as [text.Escape] does,
// everything that could forge or hide output on a terminal or in a log
// file: a byte that is not part of valid UTF-8 becomes \xNN, and a
// character that [strconv.IsPrint] rejects (C0 controls such as ESC, CR,
// backspace and DEL, the C1 controls U+0080-U+009F, and non-printing
// characters such as U+2028 LINE SEPARATOR or the bidirectional overrides
// U+202A-U+202E) becomes the escape that [strconv.QuoteRune] gives it (\x1b, \r, \b, \x7f, \u0085, \u202e, ...).
// Tabs are the one exception and are written as they are, so that tables
// aligned with tabs stay aligned. Backslashes are not doubled: the text
// form is for reading, the journal keeps the exact bytes.
//
// A single user-controlled value that a caller embeds in a message (a
// process name, a job id, a path) goes through [text.Quote] first, so that
// it stays on one line in both sinks and its oddity is visible.
package journal
