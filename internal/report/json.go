package report

import (
	"io"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
)

// The summary document (kind "summary", docs/json.md). Its field names are
// part of mpiprobe's interface: add fields freely; renaming or removing one
// raises SchemaVersion.
type (
	jsonSummary struct {
		Envelope
		Hosts   []string    `json:"hosts"`
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
		// Rank is null when the rank is unknown.
		Rank   *int        `json:"rank"`
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
		InitStart       time.Time `json:"init_start,omitzero"`
		InitSeconds     float64   `json:"init_seconds"`
		ModexSeconds    float64   `json:"modex_seconds"`
		ModexVia        string    `json:"modex_via,omitempty"`
		FinalizeSeconds float64   `json:"finalize_seconds"`
	}
	jsonComm struct {
		// ID is the context id, or the local handle when Local.
		ID    uint64 `json:"id"`
		Size  int    `json:"size"`
		Name  string `json:"name,omitempty"`
		Local bool   `json:"local,omitempty"`
		// Text names the communicator for people.
		Text string `json:"text"`
		// Rank is the process's rank in it, null when unknown.
		Rank  *int       `json:"rank"`
		Calls []jsonColl `json:"calls"`
	}
	jsonColl struct {
		Name         string  `json:"name"`
		Count        uint64  `json:"count"`
		TotalSeconds float64 `json:"total_seconds"`
		MaxSeconds   float64 `json:"max_seconds"`
		// Nonblocking collectives: requests not seen completing, seen
		// completing, and the total time from start to completion.
		PendingCount      int64   `json:"pending_count,omitempty"`
		CompletedCount    uint64  `json:"completed_count,omitempty"`
		ToCompleteSeconds float64 `json:"to_complete_seconds,omitempty"`
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
		// MPIAbort is set when the rank called MPI_Abort.
		MPIAbort *jsonAbort `json:"mpi_abort,omitempty"`
		// Text is End.String's rendering.
		Text string `json:"text"`
	}
	jsonAbort struct {
		// Code is the error code MPI_Abort was called with.
		Code int `json:"code"`
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

// WriteJSON writes s as one indented JSON document of kind "summary"
// (docs/json.md): schema_version, kind, hosts (a list: one host, or the
// hosts of a merged summary), start, end, jobs (job, ranks: rank, pid, comm,
// host, end, events: event, detail, layer, count, peak, first, last,
// message, advice), dropped (what, count, raise) and totals (per event over
// all ranks, as Summary.Totals). A rank is a number, null when unknown. A
// rank's end is an object with state ("running", "exited", "signaled",
// "vanished"), code (exited only), signal and signal_name (signaled only),
// mpi_abort (code: the error code, when the rank called MPI_Abort), at and
// text (End.String). A rank's startup (init_start, init_seconds,
// modex_seconds, modex_via, finalize_seconds) is there when any of it was
// observed, and its collectives when they were tracked. Times are RFC 3339
// with nanoseconds; unknown times are left out. Lists are never null.
// ReadJSON reads the document back.
func WriteJSON(w io.Writer, s agg.Summary) error {
	return EncodeJSON(w, toJSON(s), "summary")
}

// hostsOf splits agg.Summary.Host, the hosts of a merged summary joined
// by commas (agg.Merge), into a list.
func hostsOf(host string) []string {
	if host == "" {
		return []string{}
	}
	return strings.Split(host, ",")
}

func toJSON(s agg.Summary) jsonSummary {
	out := jsonSummary{
		Envelope: NewEnvelope(KindSummary),
		Hosts:    hostsOf(s.Host),
		Start:    s.Start,
		End:      s.End,
		Jobs:     make([]jsonJob, 0, len(s.Jobs)),
		Dropped:  make([]jsonDrop, 0, len(s.Dropped)),
		Totals:   jsonEvents(s.Totals()),
	}
	for _, j := range s.Jobs {
		jj := jsonJob{Job: j.ID, Ranks: make([]jsonRank, 0, len(j.Ranks))}
		for _, r := range j.Ranks {
			jj.Ranks = append(jj.Ranks, jsonRank{
				Rank:        RankNumber(r.Rank),
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
	if e.MPIAbort {
		out.MPIAbort = &jsonAbort{Code: e.AbortCode}
	}
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
			Text: c.Comm.String(), Calls: []jsonColl{}}
		if c.Rank >= 0 {
			rank := c.Rank
			jc.Rank = &rank
		}
		for _, cc := range c.Calls {
			jc.Calls = append(jc.Calls, jsonColl{Name: cc.Name, Count: cc.Calls,
				TotalSeconds: Seconds(cc.Total), MaxSeconds: Seconds(cc.Max),
				PendingCount: cc.Pending, CompletedCount: cc.Completed, ToCompleteSeconds: Seconds(cc.ToComplete)})
		}
		out = append(out, jc)
	}
	return out
}

func jsonStartupOf(s agg.Startup) *jsonStartup {
	if s.IsZero() {
		return nil
	}
	return &jsonStartup{InitStart: s.InitStart, InitSeconds: Seconds(s.Init), ModexSeconds: Seconds(s.Modex),
		ModexVia: s.ModexVia, FinalizeSeconds: Seconds(s.Finalize)}
}

// fromDoc turns a decoded document of SchemaVersion into a Summary.
func fromDoc(d jsonSummary) (agg.Summary, error) {
	s := agg.Summary{Host: strings.Join(d.Hosts, ","), Start: d.Start, End: d.End}
	for _, j := range d.Jobs {
		job := agg.Job{ID: j.Job}
		for _, r := range j.Ranks {
			rank := agg.Rank{
				Rank:   rankString(r.Rank),
				PID:    r.PID,
				Comm:   r.Comm,
				Host:   r.Host,
				Events: make([]agg.EventTotal, 0, len(r.Events)),
			}
			end, err := endOf(r.End)
			if err != nil {
				return agg.Summary{}, rankErr(j.Job, rank, err)
			}
			rank.End = end
			for _, e := range r.Events {
				rank.Events = append(rank.Events, agg.EventTotal(e))
			}
			for _, c := range r.Collectives {
				cc := agg.CommCalls{
					PID:  r.PID,
					Comm: agg.Comm{ID: c.ID, Size: c.Size, Name: c.Name, Local: c.Local},
					Rank: -1,
				}
				if c.Rank != nil {
					cc.Rank = *c.Rank
				}
				for _, k := range c.Calls {
					cc.Calls = append(cc.Calls, agg.CollCalls{Name: k.Name, Calls: k.Count,
						Total: durationOf(k.TotalSeconds), Max: durationOf(k.MaxSeconds),
						Pending: k.PendingCount, Completed: k.CompletedCount, ToComplete: durationOf(k.ToCompleteSeconds)})
				}
				rank.Collectives = append(rank.Collectives, cc)
			}
			if su := r.Startup; su != nil {
				rank.Startup = agg.Startup{InitStart: su.InitStart, Init: durationOf(su.InitSeconds),
					Modex: durationOf(su.ModexSeconds), ModexVia: su.ModexVia, Finalize: durationOf(su.FinalizeSeconds)}
			}
			job.Ranks = append(job.Ranks, rank)
		}
		s.Jobs = append(s.Jobs, job)
	}
	for _, dr := range d.Dropped {
		s.Dropped = append(s.Dropped, agg.Drop(dr))
	}
	return s, nil
}
