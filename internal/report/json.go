package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
)

// The JSON document. Field names are part of mpiprobe's interface: add
// fields, never rename them.
type (
	jsonSummary struct {
		Host    string      `json:"host"`
		Start   time.Time   `json:"start,omitzero"`
		End     time.Time   `json:"end,omitzero"`
		Jobs    []jsonJob   `json:"jobs"`
		Dropped []jsonDrop  `json:"dropped"`
		Totals  []jsonEvent `json:"totals"`
	}
	jsonDrop struct {
		What  string `json:"what"`
		Count uint64 `json:"count"`
		Raise string `json:"raise,omitempty"`
	}
	jsonJob struct {
		Job   string     `json:"job"`
		Ranks []jsonRank `json:"ranks"`
	}
	jsonRank struct {
		Rank   string      `json:"rank"`
		PID    int         `json:"pid"`
		Comm   string      `json:"comm"`
		Host   string      `json:"host"`
		End    jsonEnd     `json:"end"`
		Events []jsonEvent `json:"events"`
		// Collectives is present when collectives were tracked.
		Collectives []jsonComm `json:"collectives,omitempty"`
		// Startup is present when any of MPI_Init and MPI_Finalize was
		// observed.
		Startup *jsonStartup `json:"startup,omitempty"`
	}
	jsonStartup struct {
		InitStart  time.Time `json:"init_start,omitzero"`
		InitNs     int64     `json:"init_ns"`
		ModexNs    int64     `json:"modex_ns"`
		ModexVia   string    `json:"modex_via,omitempty"`
		FinalizeNs int64     `json:"finalize_ns"`
	}
	jsonComm struct {
		// ID is the context id, or the local handle when Local.
		ID    uint64 `json:"id"`
		Size  int    `json:"size"`
		Name  string `json:"name,omitempty"`
		Local bool   `json:"local,omitempty"`
		// Text names the communicator for people.
		Text string `json:"text"`
		// Rank is the process's rank in it, -1 when unknown.
		Rank  int        `json:"rank"`
		Calls []jsonColl `json:"calls"`
	}
	jsonColl struct {
		Name    string `json:"name"`
		Calls   uint64 `json:"calls"`
		TotalNs int64  `json:"total_ns"`
		MaxNs   int64  `json:"max_ns"`
		// Nonblocking collectives: requests not seen completing, seen
		// completing, and the total time from start to completion.
		Pending      int64  `json:"pending,omitempty"`
		Completed    uint64 `json:"completed,omitempty"`
		ToCompleteNs int64  `json:"to_complete_ns,omitempty"`
	}
	jsonEnd struct {
		// State is "running", "exited", "signaled" or "vanished".
		State string `json:"state"`
		// Code is set for "exited".
		Code *int `json:"code,omitempty"`
		// Signal and SignalName are set for "signaled".
		Signal     *int      `json:"signal,omitempty"`
		SignalName string    `json:"signal_name,omitempty"`
		At         time.Time `json:"at,omitzero"`
		// Text is End.String's rendering.
		Text string `json:"text"`
	}
	jsonEvent struct {
		Event   string    `json:"event"`
		Detail  string    `json:"detail,omitempty"`
		Layer   string    `json:"layer,omitempty"`
		Count   uint64    `json:"count"`
		Peak    uint64    `json:"peak,omitempty"`
		First   time.Time `json:"first,omitzero"`
		Last    time.Time `json:"last,omitzero"`
		Message string    `json:"message"`
		Advice  string    `json:"advice"`
	}
)

// WriteJSON writes s as one indented JSON document: host, start, end, jobs
// (job, ranks: rank, pid, comm, host, end, events: event, detail, layer, count, peak,
// first, last, message, advice), dropped (what, count, raise) and totals (per
// event over all ranks, as Summary.Totals). A rank's end is an object with
// state ("running", "exited", "signaled", "vanished"), code (exited only),
// signal and signal_name (signaled only), at and text (End.String). A rank's
// startup (init_start, init_ns, modex_ns, modex_via, finalize_ns) is there
// when any of it was observed, and its collectives when they were tracked.
// Times are RFC 3339 with nanoseconds; unknown times are left out. Lists
// are never null. ReadJSON reads the document back.
func WriteJSON(w io.Writer, s agg.Summary) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // advice such as "btl_<name>_..." stays legible
	if err := enc.Encode(toJSON(s)); err != nil {
		return fmt.Errorf("report: encode summary: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("report: write json: %w", err)
	}
	return nil
}

func toJSON(s agg.Summary) jsonSummary {
	out := jsonSummary{
		Host:    s.Host,
		Start:   s.Start,
		End:     s.End,
		Jobs:    make([]jsonJob, 0, len(s.Jobs)),
		Dropped: make([]jsonDrop, 0, len(s.Dropped)),
		Totals:  jsonEvents(s.Totals()),
	}
	for _, j := range s.Jobs {
		jj := jsonJob{Job: j.ID, Ranks: make([]jsonRank, 0, len(j.Ranks))}
		for _, r := range j.Ranks {
			jj.Ranks = append(jj.Ranks, jsonRank{
				Rank:        r.Rank,
				PID:         r.PID,
				Comm:        r.Comm,
				Host:        r.Host,
				End:         jsonEndOf(r.End),
				Events:      jsonEvents(r.Events),
				Collectives: jsonComms(r.Collectives),
				Startup:     jsonStartupOf(r.Startup),
			})
		}
		out.Jobs = append(out.Jobs, jj)
	}
	for _, d := range s.Dropped {
		out.Dropped = append(out.Dropped, jsonDrop(d))
	}
	return out
}

func jsonEndOf(e agg.End) jsonEnd {
	out := jsonEnd{State: endState(e.Kind), At: e.At, Text: e.String()}
	switch e.Kind {
	case agg.Exited:
		code := e.Code
		out.Code = &code
	case agg.Signaled:
		sig := e.Signal
		out.Signal = &sig
		out.SignalName = agg.SignalName(sig)
	}
	return out
}

func jsonEvents(es []agg.EventTotal) []jsonEvent {
	out := make([]jsonEvent, 0, len(es))
	for _, e := range es {
		out = append(out, jsonEvent(e))
	}
	return out
}

func jsonComms(cs []agg.CommCalls) []jsonComm {
	var out []jsonComm
	for _, c := range cs {
		jc := jsonComm{ID: c.Comm.ID, Size: c.Comm.Size, Name: c.Comm.Name, Local: c.Comm.Local,
			Text: c.Comm.String(), Rank: c.Rank, Calls: []jsonColl{}}
		for _, cc := range c.Calls {
			jc.Calls = append(jc.Calls, jsonColl{Name: cc.Name, Calls: cc.Calls, TotalNs: int64(cc.Total), MaxNs: int64(cc.Max),
				Pending: cc.Pending, Completed: cc.Completed, ToCompleteNs: int64(cc.ToComplete)})
		}
		out = append(out, jc)
	}
	return out
}

func jsonStartupOf(s agg.Startup) *jsonStartup {
	if s.IsZero() {
		return nil
	}
	return &jsonStartup{InitStart: s.InitStart, InitNs: int64(s.Init), ModexNs: int64(s.Modex),
		ModexVia: s.ModexVia, FinalizeNs: int64(s.Finalize)}
}
