package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// SchemaVersion is the "schema_version" of every document mpiprobe writes
// with --json (docs/json.md). Adding a field keeps it; renaming or removing
// a field, or changing a field's type or meaning, raises it.
const SchemaVersion = 1

// The "kind" of each --json document: which command wrote it.
const (
	KindSummary   = "summary"    // mpiprobe -p / -- cmd, report, report --merge
	KindStatus    = "status"     // mpiprobe status
	KindProbes    = "probes"     // mpiprobe probes
	KindPS        = "ps"         // mpiprobe ps
	KindJobs      = "jobs"       // mpiprobe jobs
	KindTraceShow = "trace_show" // mpiprobe trace show
)

// Envelope opens every --json document: the schema version and the kind of
// document. Embedded in a document's struct, its fields come first.
type Envelope struct {
	SchemaVersion int    `json:"schema_version"`
	Kind          string `json:"kind"`
}

// NewEnvelope returns the envelope of a document of kind at SchemaVersion.
func NewEnvelope(kind string) Envelope {
	return Envelope{SchemaVersion: SchemaVersion, Kind: kind}
}

// EncodeJSON writes v as one indented JSON document in one write, HTML
// characters left as they are (advice such as "btl_<name>_..." stays
// legible) and characters that do not print escaped (text.EncodeJSON).
// what names the document in errors.
func EncodeJSON(w io.Writer, v any, what string) error {
	if err := text.EncodeJSON(w, v); err != nil {
		return fmt.Errorf("report: encode %s: %w", what, err)
	}
	return nil
}

// RankNumber is how a rank or world size is written in JSON: the number,
// or nil (null) when s is not a number, e.g. identity.Unknown.
func RankNumber(s string) *int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return nil
	}
	return &n
}

// rankString is RankNumber's inverse: identity.Unknown for nil.
func rankString(n *int) string {
	if n == nil {
		return identity.Unknown
	}
	return strconv.Itoa(*n)
}

// Seconds is how a duration is written in JSON: a "*_seconds" number.
func Seconds(d time.Duration) float64 {
	return d.Seconds()
}

// durationOf is Seconds's inverse, to the nanosecond.
func durationOf(s float64) time.Duration {
	return time.Duration(math.Round(s * 1e9))
}

// IsCurrent reports whether data is a summary document of this
// SchemaVersion, so that it can be shown as stored (a later agent's added
// fields included); an older document is to be decoded and written again.
func IsCurrent(data []byte) bool {
	var head Envelope
	return json.Unmarshal(data, &head) == nil && head.SchemaVersion == SchemaVersion && head.Kind == KindSummary
}
