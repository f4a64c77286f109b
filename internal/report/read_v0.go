package report

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
)

// The summary as mpiprobe wrote it before schema_version (schema version
// 0): one "host" string (hosts joined by commas when merged), ranks as
// strings ("?" when unknown), a communicator's unknown rank as -1,
// durations as "*_ns" integers, and a collective's count as "calls". The
// agent's state dir may still hold such files; ReadJSON reads them.
type (
	v0Summary struct {
		Host    string     `json:"host"`
		Start   time.Time  `json:"start"`
		End     time.Time  `json:"end"`
		Jobs    []v0Job    `json:"jobs"`
		Dropped []jsonDrop `json:"dropped"`
	}
	v0Job struct {
		Job   string   `json:"job"`
		Ranks []v0Rank `json:"ranks"`
	}
	v0Rank struct {
		Rank        string      `json:"rank"`
		PID         int         `json:"pid"`
		Comm        string      `json:"comm"`
		Host        string      `json:"host"`
		End         jsonEnd     `json:"end"`
		Events      []jsonEvent `json:"events"`
		Collectives []v0Comm    `json:"collectives"`
		Startup     *v0Startup  `json:"startup"`
	}
	v0Startup struct {
		InitStart  time.Time `json:"init_start"`
		InitNs     int64     `json:"init_ns"`
		ModexNs    int64     `json:"modex_ns"`
		ModexVia   string    `json:"modex_via"`
		FinalizeNs int64     `json:"finalize_ns"`
	}
	v0Comm struct {
		ID    uint64   `json:"id"`
		Size  int      `json:"size"`
		Name  string   `json:"name"`
		Local bool     `json:"local"`
		Rank  int      `json:"rank"`
		Calls []v0Coll `json:"calls"`
	}
	v0Coll struct {
		Name         string `json:"name"`
		Calls        uint64 `json:"calls"`
		TotalNs      int64  `json:"total_ns"`
		MaxNs        int64  `json:"max_ns"`
		Pending      int64  `json:"pending"`
		Completed    uint64 `json:"completed"`
		ToCompleteNs int64  `json:"to_complete_ns"`
	}
)

// readV0 reads a summary of schema version 0.
func readV0(data []byte) (agg.Summary, error) {
	var doc v0Summary
	if err := json.Unmarshal(data, &doc); err != nil {
		return agg.Summary{}, decodeErr(err)
	}
	if doc.Jobs == nil {
		return agg.Summary{}, fmt.Errorf(`report: read summary: %w (no "jobs" list)`, errNotSummary)
	}
	s, err := fromV0(doc)
	if err != nil {
		return agg.Summary{}, fmt.Errorf("report: read summary: %w", err)
	}
	return s, nil
}
