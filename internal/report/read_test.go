package report

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
)

// rich is twoJobs with collectives, startup times and times in several
// zones: everything WriteJSON writes.
func rich() agg.Summary {
	s := twoJobs()
	s.Start = s.Start.In(time.FixedZone("IST", 5*3600+1800))
	s.End = s.End.UTC()
	s.AddCollectives([]agg.CommCalls{
		{PID: 4101, Comm: agg.Comm{ID: 0, Size: 3, Name: "WORLD"}, Rank: 0, Calls: []agg.CollCalls{
			{Name: "MPI_Barrier", Calls: 10, Total: 3 * time.Millisecond, Max: time.Millisecond},
			{Name: "MPI_Iallreduce", Calls: 5, Total: 0, Pending: 1, Completed: 4, ToComplete: 7 * time.Millisecond},
		}},
		{PID: 4101, Comm: agg.Comm{ID: 0x7f12, Size: 2, Local: true}, Rank: -1, Calls: []agg.CollCalls{}},
		{PID: 4102, Comm: agg.Comm{ID: 3, Size: 2}, Rank: 1, Calls: []agg.CollCalls{{Name: "MPI_Bcast", Calls: 1}}},
	})
	r := &s.Jobs[0].Ranks
	(*r)[0].Startup = agg.Startup{InitStart: at(-2500), Init: 2400 * time.Millisecond, Modex: 1900 * time.Millisecond,
		ModexVia: "PMIx fence", Finalize: 3 * time.Millisecond}
	(*r)[1].Startup = agg.Startup{Init: time.Second} // no start time, no modex
	(*r)[2].Startup = agg.Startup{Finalize: time.Nanosecond}
	(*r)[2].End.At = (*r)[2].End.At.UTC()
	return s
}

func TestReadJSONRoundTrip(t *testing.T) {
	for name, in := range map[string]agg.Summary{
		"rich":    rich(),
		"two":     twoJobs(),
		"empty":   {Host: "n1"},
		"no jobs": agg.Build("n1", t0, at(1), nil, nil, nil, []agg.Drop{{What: "x", Count: 1}}),
	} {
		t.Run(name, func(t *testing.T) {
			var first bytes.Buffer
			if err := WriteJSON(&first, in); err != nil {
				t.Fatal(err)
			}
			got, err := ReadJSON(bytes.NewReader(first.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			var second bytes.Buffer
			if err := WriteJSON(&second, got); err != nil {
				t.Fatal(err)
			}
			if first.String() != second.String() {
				t.Errorf("written again differs:\n%s\nfirst\n%s", second.String(), first.String())
			}
			if name == "rich" {
				for _, want := range []string{`"startup": {`, `"init_start": "`, `"modex_via": "PMIx fence"`, `"finalize_seconds": 1e-9`, `"collectives": [`, `"local": true`} {
					if !strings.Contains(first.String(), want) {
						t.Errorf("json lacks %s", want)
					}
				}
			}
			// Also equal as values, up to time zones.
			if g, w := normalizeAll(got), normalizeAll(in); !reflect.DeepEqual(g, w) {
				t.Errorf("read =\n%+v\nwant\n%+v", g, w)
			}
		})
	}
}

// normalizeAll is normalize, also for startup times, with empty lists as
// nil.
func normalizeAll(s agg.Summary) agg.Summary {
	s = normalize(s)
	for i := range s.Jobs {
		for k := range s.Jobs[i].Ranks {
			r := &s.Jobs[i].Ranks[k]
			if !r.Startup.InitStart.IsZero() {
				r.Startup.InitStart = r.Startup.InitStart.UTC()
			}
			if len(r.Events) == 0 {
				r.Events = nil
			}
			for c := range r.Collectives {
				if len(r.Collectives[c].Calls) == 0 {
					r.Collectives[c].Calls = nil
				}
			}
		}
	}
	return s
}

func TestReadJSONStartupOmitted(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, twoJobs()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "startup") {
		t.Errorf("startup written for ranks without startup data:\n%s", buf.String())
	}
}

func TestReadJSONBad(t *testing.T) {
	tests := []struct{ in, want string }{
		{``, "report: read summary: unexpected end of JSON input"},
		{`{"host": "n1", "jobs": [`, "report: read summary: unexpected end of JSON input"},
		{`{"host": "n1", "jobs": [] } x`, "report: read summary: invalid character 'x' after top-level value (at byte 29)"},
		{`{"host": 'n1'}`, "report: read summary: invalid character '\\'' looking for beginning of value (at byte 10)"},
		{`{"host": "n1", "jobs": {}}`, "report: read summary: not an mpiprobe summary: jobs is a JSON object, want a list (at byte 24)"},
		{`{"jobs": [{"ranks": [{"end": "exited"}]}]}`, "report: read summary: not an mpiprobe summary: jobs.ranks.end is a JSON string, want an object (at byte 37)"},
		{`null`, `report: read summary: not an mpiprobe summary (no "jobs" list)`},
		{`{"status": "ok"}`, `report: read summary: not an mpiprobe summary (no "jobs" list)`},
		{`[1, 2]`, "report: read summary: not an mpiprobe summary: the document is a JSON array, want an object (at byte 1)"},
		{`{"host": "n1", "jobs": [{"job": "1", "ranks": [{"rank": "0", "pid": "12"}]}]}`,
			"report: read summary: not an mpiprobe summary: jobs.ranks.pid is a JSON string, want int (at byte 72)"},
		{`{"jobs": [{"job": "1", "ranks": [{"rank": "0", "pid": 12, "end": {"state": "exited"}}]}]}`,
			`report: read summary: job 1 rank 0 (pid 12): end state "exited" without a code`},
		{`{"jobs": [{"job": "1", "ranks": [{"rank": "0", "pid": 12, "end": {"state": "signaled", "code": 1}}]}]}`,
			`report: read summary: job 1 rank 0 (pid 12): end state "signaled" without a signal`},
		{`{"jobs": [{"job": "1", "ranks": [{"rank": "0", "pid": 12}]}]}`,
			`report: read summary: job 1 rank 0 (pid 12): no end state`},
	}
	for _, tc := range tests {
		_, err := ReadJSON(strings.NewReader(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("ReadJSON(%q): err = %v\nwant %s", tc.in, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("ReadJSON(%q): error of several lines: %q", tc.in, err)
		}
	}
	boom := errors.New("disk on fire")
	if _, err := ReadJSON(iotest.ErrReader(boom)); !errors.Is(err, boom) || err.Error() != "report: read summary: disk on fire" {
		t.Errorf("read error: %v", err)
	}
}

// TestReadJSONForward reads a document of a later version, with fields and
// an end state this version does not know.
func TestReadJSONForward(t *testing.T) {
	in := `{
  "version": 7,
  "host": "n1",
  "gpu": {"count": 4},
  "jobs": [{"job": "9", "queue": "batch", "ranks": [
    {"rank": "0", "pid": 5, "comm": "app", "host": "n1", "numa": [0, 1],
     "end": {"state": "stopped", "at": "2025-03-01T12:00:00Z", "text": "stopped by SIGSTOP", "why": "debugger"},
     "events": [{"event": "e", "count": 3, "message": "m", "advice": "a", "severity": "high"}],
     "startup": {"init_ns": 5, "modex_ns": 2, "finalize_ns": 0, "pmix_ns": 1},
     "collectives": [{"id": 0, "size": 1, "name": "WORLD", "text": "WORLD (size 1)", "rank": 0, "calls": [{"name": "MPI_Barrier", "calls": 2, "total_ns": 9, "max_ns": 5, "bytes": 0}]}]}
  ]}],
  "dropped": [{"what": "w", "count": 1, "since": "boot"}],
  "totals": []
}`
	got, err := ReadJSON(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := agg.Summary{Host: "n1", Jobs: []agg.Job{{ID: "9", Ranks: []agg.Rank{{
		Rank: "0", PID: 5, Comm: "app", Host: "n1",
		End:     agg.End{Kind: agg.Vanished, At: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)},
		Events:  []agg.EventTotal{{Event: "e", Count: 3, Message: "m", Advice: "a"}},
		Startup: agg.Startup{Init: 5, Modex: 2},
		Collectives: []agg.CommCalls{{PID: 5, Comm: agg.Comm{Size: 1, Name: "WORLD"}, Rank: 0,
			Calls: []agg.CollCalls{{Name: "MPI_Barrier", Calls: 2, Total: 9, Max: 5}}}},
	}}}}, Dropped: []agg.Drop{{What: "w", Count: 1}}}
	if g, w := normalizeAll(got), normalizeAll(want); !reflect.DeepEqual(g, w) {
		t.Errorf("read =\n%+v\nwant\n%+v", g, w)
	}
}

// TestReadJSONVersion0 reads a summary as mpiprobe wrote it before
// schema_version (the agent's state dir may hold such files): the hosts of
// a merged summary joined in "host", ranks as strings, "?" for an unknown
// rank, -1 for an unknown rank in a communicator, durations in "*_ns".
// Written again, it is a document of SchemaVersion with the same values.
func TestReadJSONVersion0(t *testing.T) {
	in := `{
  "host": "n1,n2",
  "start": "2025-03-01T12:00:00Z",
  "jobs": [{"job": "9", "ranks": [
    {"rank": "?", "pid": 5, "comm": "app", "host": "n1",
     "end": {"state": "exited", "code": 3, "text": "exited with 3"},
     "events": [{"event": "e", "count": 3, "message": "m", "advice": "a"}],
     "startup": {"init_ns": 1500000000, "modex_ns": 2, "finalize_ns": 0},
     "collectives": [{"id": 4, "size": 2, "text": "comm 4 (size 2)", "rank": -1,
       "calls": [{"name": "MPI_Ibarrier", "calls": 2, "total_ns": 9, "max_ns": 5, "pending": 1, "completed": 1, "to_complete_ns": 7}]}]},
    {"rank": "1", "pid": 6, "comm": "app", "host": "n2", "end": {"state": "running", "text": "running"}, "events": []}
  ]}],
  "dropped": [],
  "totals": []
}`
	got, err := ReadJSON(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := agg.Summary{Host: "n1,n2", Start: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), Jobs: []agg.Job{{ID: "9", Ranks: []agg.Rank{{
		Rank: "?", PID: 5, Comm: "app", Host: "n1",
		End:     agg.End{Kind: agg.Exited, Code: 3},
		Events:  []agg.EventTotal{{Event: "e", Count: 3, Message: "m", Advice: "a"}},
		Startup: agg.Startup{Init: 1500 * time.Millisecond, Modex: 2},
		Collectives: []agg.CommCalls{{PID: 5, Comm: agg.Comm{ID: 4, Size: 2}, Rank: -1,
			Calls: []agg.CollCalls{{Name: "MPI_Ibarrier", Calls: 2, Total: 9, Max: 5, Pending: 1, Completed: 1, ToComplete: 7}}}},
	}, {Rank: "1", PID: 6, Comm: "app", Host: "n2", End: agg.End{Kind: agg.Running}, Events: []agg.EventTotal{}}}}}}
	if g, w := normalizeAll(got), normalizeAll(want); !reflect.DeepEqual(g, w) {
		t.Errorf("read =\n%+v\nwant\n%+v", g, w)
	}
	var out bytes.Buffer
	if err := WriteJSON(&out, got); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"schema_version": 1,`, `"hosts": [` + "\n    \"n1\",\n    \"n2\"\n  ],", `"rank": null,`, `"rank": 1,`,
		`"init_seconds": 1.5,`, `"modex_seconds": 2e-9,`, `"count": 2,`, `"pending_count": 1,`, `"to_complete_seconds": 7e-9`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("written again, lacks %s:\n%s", want, out.String())
		}
	}
	again, err := ReadJSON(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := normalizeAll(again), normalizeAll(want); !reflect.DeepEqual(g, w) {
		t.Errorf("read back =\n%+v\nwant\n%+v", g, w)
	}
}

// TestReadJSONSchema: a later schema_version is refused with a message
// saying so (its fields may have been renamed), a document of another kind
// is not a summary, and a document of this version with fields it does not
// know is read.
func TestReadJSONSchema(t *testing.T) {
	for in, want := range map[string]string{
		`{"schema_version": 2, "kind": "summary", "jobs": []}`: "report: read summary: schema_version 2 is newer than this mpiprobe reads (1); use a later mpiprobe",
		`{"schema_version": 1, "kind": "jobs", "jobs": []}`:    `report: read summary: not an mpiprobe summary (kind "jobs")`,
		`{"schema_version": 1, "kind": "summary"}`:             `report: read summary: not an mpiprobe summary (no "jobs" list)`,
		`{"schema_version": "1", "jobs": []}`:                  "report: read summary: not an mpiprobe summary: schema_version is a JSON string, want int (at byte 22)",
	} {
		if _, err := ReadJSON(strings.NewReader(in)); err == nil || err.Error() != want {
			t.Errorf("ReadJSON(%s): err = %v\nwant %s", in, err, want)
		}
	}
	later := `{"schema_version": 1, "kind": "summary", "hosts": ["n1"], "gpu": {"count": 4},
  "jobs": [{"job": "9", "ranks": [{"rank": 0, "pid": 5, "comm": "app", "host": "n1", "numa": [0],
    "end": {"state": "running", "text": "running"}, "events": []}]}], "dropped": [], "totals": []}`
	got, err := ReadJSON(strings.NewReader(later))
	if err != nil {
		t.Fatal(err)
	}
	if got.Host != "n1" || len(got.Jobs) != 1 || got.Jobs[0].Ranks[0].Rank != "0" || got.Jobs[0].Ranks[0].PID != 5 {
		t.Errorf("read %+v", got)
	}
}
