package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// errNotSummary says that a JSON document is not a summary.
var errNotSummary = errors.New("not an mpiprobe summary")

// ReadJSON reads a summary that WriteJSON wrote: host, interval, jobs with
// their ranks (end state, events, collectives, startup) and dropped
// counters. Derived fields (totals, an end's text and signal_name, a
// communicator's text) are not read; WriteJSON computes them again, so
// that writing what ReadJSON read reproduces the document byte for byte.
// Fields it does not know are ignored, so that summaries of later versions
// can be read. An end state it does not know is read as "vanished" (exit
// status unknown).
//
// Errors are one line: "report: read summary: " and the problem, e.g.
// "unexpected end of JSON input" for a truncated document.
func ReadJSON(r io.Reader) (agg.Summary, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return agg.Summary{}, fmt.Errorf("report: read summary: %w", err)
	}
	var head struct {
		SchemaVersion int    `json:"schema_version"`
		Kind          string `json:"kind"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return agg.Summary{}, decodeErr(err)
	}
	switch {
	case head.SchemaVersion > SchemaVersion:
		return agg.Summary{}, fmt.Errorf("report: read summary: schema_version %d is newer than this mpiprobe reads (%d); use a later mpiprobe",
			head.SchemaVersion, SchemaVersion)
	case head.SchemaVersion < 0:
		return agg.Summary{}, fmt.Errorf("report: read summary: %w (schema_version %d)", errNotSummary, head.SchemaVersion)
	case head.SchemaVersion == 0:
		return readV0(data)
	case head.Kind != KindSummary:
		return agg.Summary{}, fmt.Errorf("report: read summary: %w (kind %q)", errNotSummary, head.Kind)
	}
	var doc jsonSummary
	if err := json.Unmarshal(data, &doc); err != nil {
		return agg.Summary{}, decodeErr(err)
	}
	if doc.Jobs == nil {
		return agg.Summary{}, fmt.Errorf(`report: read summary: %w (no "jobs" list)`, errNotSummary)
	}
	s, err := fromDoc(doc)
	if err != nil {
		return agg.Summary{}, fmt.Errorf("report: read summary: %w", err)
	}
	return s, nil
}

// decodeErr words a JSON decoding error of a summary on one line.
func decodeErr(err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn) && syn.Error() != "unexpected end of JSON input":
		return fmt.Errorf("report: read summary: %w (at byte %d)", err, syn.Offset)
	case errors.As(err, &typ):
		field, want := typ.Field, typ.Type.String()
		switch typ.Type.Kind() {
		case reflect.Struct:
			want = "an object"
		case reflect.Slice:
			want = "a list"
		}
		if field == "" {
			field = "the document"
		}
		return fmt.Errorf("report: read summary: %w: %s is a JSON %s, want %s (at byte %d)",
			errNotSummary, field, typ.Value, want, typ.Offset)
	}
	return fmt.Errorf("report: read summary: %w", err)
}

// rankErr places err at one rank of job.
func rankErr(job string, r agg.Rank, err error) error {
	return fmt.Errorf("job %s rank %s (pid %d): %w", text.Quote(job), text.Quote(r.Rank), r.PID, err)
}

// fromV0 turns a decoded document of schema version 0 into a Summary.
func fromV0(d v0Summary) (agg.Summary, error) {
	s := agg.Summary{Host: d.Host, Start: d.Start, End: d.End}
	for _, j := range d.Jobs {
		job := agg.Job{ID: j.Job}
		for _, r := range j.Ranks {
			end, err := endOf(r.End)
			if err != nil {
				return agg.Summary{}, rankErr(j.Job, agg.Rank{Rank: r.Rank, PID: r.PID}, err)
			}
			rank := agg.Rank{
				Rank:   r.Rank,
				PID:    r.PID,
				Comm:   r.Comm,
				Host:   r.Host,
				End:    end,
				Events: make([]agg.EventTotal, 0, len(r.Events)),
			}
			for _, e := range r.Events {
				rank.Events = append(rank.Events, agg.EventTotal(e))
			}
			for _, c := range r.Collectives {
				cc := agg.CommCalls{
					PID:  r.PID,
					Comm: agg.Comm{ID: c.ID, Size: c.Size, Name: c.Name, Local: c.Local},
					Rank: c.Rank,
				}
				for _, k := range c.Calls {
					cc.Calls = append(cc.Calls, agg.CollCalls{Name: k.Name, Calls: k.Calls,
						Total: time.Duration(k.TotalNs), Max: time.Duration(k.MaxNs),
						Pending: k.Pending, Completed: k.Completed, ToComplete: time.Duration(k.ToCompleteNs)})
				}
				rank.Collectives = append(rank.Collectives, cc)
			}
			if su := r.Startup; su != nil {
				rank.Startup = agg.Startup{InitStart: su.InitStart, Init: time.Duration(su.InitNs),
					Modex: time.Duration(su.ModexNs), ModexVia: su.ModexVia, Finalize: time.Duration(su.FinalizeNs)}
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

// endOf reads a rank's end.
func endOf(e jsonEnd) (agg.End, error) {
	end := agg.End{At: e.At}
	if e.MPIAbort != nil {
		end.MPIAbort, end.AbortCode = true, e.MPIAbort.Code
	}
	switch e.State {
	case "running":
		end.Kind = agg.Running
	case "exited":
		if e.Code == nil {
			return end, errors.New(`end state "exited" without a code`)
		}
		end.Kind, end.Code = agg.Exited, *e.Code
	case "signaled":
		if e.Signal == nil {
			return end, errors.New(`end state "signaled" without a signal`)
		}
		end.Kind, end.Signal = agg.Signaled, *e.Signal
	case "":
		return end, errors.New("no end state")
	default:
		end.Kind = agg.Vanished
	}
	return end, nil
}
