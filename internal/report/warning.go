package report

import (
	"strconv"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/identity"
)

// WarningTime is how a warning line shows when its report fell due.
const WarningTime = "2006-01-02 15:04:05.000"

// Warning is one C/T report of a counter (thresholds.Report) as the
// warning line shows it, the one shape of every warning mpiprobe prints
// or sends to the journal.
type Warning struct {
	// At is when the report fell due. The zero time leaves the timestamp
	// out, as in a journal entry, which the journal stamps itself.
	At time.Time
	// ID names the process; nil when it is not known, and the line then
	// names its pid only.
	ID *identity.Identity
	// PID is the process id.
	PID int
	// Prefix says how often the event happened: thresholds.Report.Prefix,
	// e.g. "3,872 warnings (in 1 second)" or "At finalize : 23 times".
	Prefix string
	// Message is the event's message from the catalog.
	Message string
	// Detail names the event's instance (agg.Sample.Detail), "" when it
	// has one. It is read from the traced process.
	Detail string
}

// Line returns the warning line, without a newline:
//
//	[2026-11-23 20:38:27.114] host=node1 job=1417805825 rank=0 pid=14465: 3,872 warnings (in 1 second) : <message> [<detail>]
//
// The process is named by identity.Identity.Label (host, job and rank as
// text.Quote shows them), or "pid=N" without an identity. The timestamp
// is left out when At is zero, " [<detail>]" when Detail is empty. The
// detail, which comes from the traced process, is escaped as the tables
// escape it (text.Escape), so that no character of it that does not print
// reaches a terminal or a log, and the line stays one line.
func (w Warning) Line() string {
	var b strings.Builder
	if !w.At.IsZero() {
		b.WriteString("[" + w.At.Format(WarningTime) + "] ")
	}
	if w.ID != nil {
		b.WriteString(w.ID.Label(w.PID))
	} else {
		b.WriteString("pid=" + strconv.Itoa(w.PID))
	}
	b.WriteString(": " + w.Prefix + " : " + w.Message)
	if w.Detail != "" {
		b.WriteString(" [" + showDetail(w.Detail) + "]")
	}
	return b.String()
}
