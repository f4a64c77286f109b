package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/jobstore"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// jobTime is how START and LAST UPDATE are shown, in local time.
const jobTime = "2006-01-02 15:04:05"

// JobRow is one line of the list of stored job summaries (`mpiprobe jobs`).
type JobRow struct {
	// Job is the job id and File the summary's path.
	Job  string
	File string
	// State is "running", "finished", or "unreadable" (then Error says why).
	State string
	// Ranks is how many ranks the summary holds.
	Ranks int
	// Ended counts the ranks by how they ended (see Ended).
	Ended string
	// EndedGroups are the same counts as a list (see EndedGroups).
	EndedGroups []EndedGroup
	// Events is the sum of all event counts.
	Events uint64
	// Start is when tracing started; LastUpdate when the file was written.
	Start      time.Time
	LastUpdate time.Time
	// Error says why the summary could not be read.
	Error string
}

// EndedGroup counts the ranks that ended one way.
type EndedGroup struct {
	// State is "running", "exited", "signaled" or "vanished".
	State string
	// Code is the exit code ("exited") and Signal the signal ("signaled").
	Code, Signal int
	// Count is how many ranks ended so.
	Count int
}

// ListJobs reads every summary in store into a row, in the order of
// store.List (newest first). A summary that cannot be read is a row with
// State "unreadable"; only failing to list the store, or ctx ending, is an
// error.
func ListJobs(ctx context.Context, store jobstore.Store) ([]JobRow, error) {
	entries, err := store.List()
	if err != nil {
		return nil, err
	}
	rows := make([]JobRow, 0, len(entries))
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rows = append(rows, jobRowOf(e))
	}
	return rows, nil
}

// jobRowOf reads one stored summary into a row.
func jobRowOf(e jobstore.Entry) JobRow {
	row := JobRow{Job: e.Job, File: e.Path, LastUpdate: e.Modified}
	sum, err := ReadFile(e.Path)
	if err != nil {
		row.State, row.Error = "unreadable", err.Error()
		return row
	}
	row.Start = sum.Start
	var ranks []agg.Rank
	for _, j := range sum.Jobs {
		ranks = append(ranks, j.Ranks...)
	}
	row.Ranks = len(ranks)
	row.State = "finished"
	for _, r := range ranks {
		if r.End.Kind == agg.Running {
			row.State = "running"
		}
		for _, ev := range r.Events {
			row.Events += ev.Count
		}
	}
	row.Ended = Ended(ranks)
	row.EndedGroups = EndedGroups(ranks)
	return row
}

// ReadFile reads and decodes the summary file at path (see ReadJSON).
func ReadFile(path string) (agg.Summary, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return agg.Summary{}, err
	}
	return ReadJSON(bytes.NewReader(data))
}

// EndedGroups counts ranks by how they ended, in the order of kinds
// (running, exited, signaled, vanished), then by exit code or signal. A
// rank of an end kind it does not know counts as vanished.
func EndedGroups(ranks []agg.Rank) []EndedGroup {
	type group struct {
		kind agg.EndKind
		g    EndedGroup
	}
	var groups []*group
	for _, r := range ranks {
		g := group{kind: r.End.Kind}
		switch r.End.Kind {
		case agg.Running:
		case agg.Exited:
			g.g.Code = r.End.Code
		case agg.Signaled:
			g.g.Signal = r.End.Signal
		default:
			g.kind = agg.Vanished
		}
		g.g.State = endState(g.kind)
		i := slices.IndexFunc(groups, func(o *group) bool { return o.kind == g.kind && o.g.Code == g.g.Code && o.g.Signal == g.g.Signal })
		if i < 0 {
			groups = append(groups, &g)
			i = len(groups) - 1
		}
		groups[i].g.Count++
	}
	slices.SortFunc(groups, func(a, b *group) int {
		if a.kind != b.kind {
			return int(a.kind) - int(b.kind)
		}
		return (a.g.Code + a.g.Signal) - (b.g.Code + b.g.Signal)
	})
	out := make([]EndedGroup, len(groups))
	for i, g := range groups {
		out[i] = g.g
	}
	return out
}

// Ended counts ranks by how they ended: "2 running, 3 exited, 1 exited
// with 1, 1 killed by SIGKILL, 1 status unknown", in the order of
// EndedGroups; "-" without ranks.
func Ended(ranks []agg.Rank) string {
	groups := EndedGroups(ranks)
	if len(groups) == 0 {
		return "-"
	}
	parts := make([]string, len(groups))
	for i, g := range groups {
		var what string
		switch g.State {
		case "running":
			what = "running"
		case "exited":
			what = "exited"
			if g.Code != 0 {
				what = "exited with " + strconv.Itoa(g.Code)
			}
		case "signaled":
			what = agg.End{Kind: agg.Signaled, Signal: g.Signal}.String()
		default:
			what = "status unknown"
		}
		parts[i] = strconv.Itoa(g.Count) + " " + what
	}
	return strings.Join(parts, ", ")
}

// WriteJobs writes rows as a table (JOB, STATE, RANKS, ENDED, EVENTS,
// START, LAST UPDATE; "-" where unknown), then, when some summaries could
// not be read, "Unreadable summaries:" with a line per such summary: job,
// file and why. Job ids are shown by text.Quote.
func WriteJobs(w io.Writer, rows []JobRow) error {
	var cells [][]string
	var problems []string
	for _, r := range rows {
		job := text.Quote(r.Job)
		if r.Error != "" {
			cells = append(cells, []string{job, r.State, "-", "-", "-", "-", jobClock(r.LastUpdate)})
			problems = append(problems, fmt.Sprintf("%s: %s: %s", job, r.File, text.Line(r.Error)))
			continue
		}
		cells = append(cells, []string{job, r.State, strconv.Itoa(r.Ranks), r.Ended,
			thousands(r.Events), jobClock(r.Start), jobClock(r.LastUpdate)})
	}
	var buf bytes.Buffer
	if err := text.Table(&buf, []string{"JOB", "STATE", "RANKS", "ENDED", "EVENTS", "START", "LAST UPDATE"}, cells, 2, 4); err != nil {
		return fmt.Errorf("report: write jobs: %w", err)
	}
	if len(problems) > 0 {
		buf.WriteString("\nUnreadable summaries:\n")
		for _, p := range problems {
			buf.WriteString("  " + p + "\n")
		}
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("report: write jobs: %w", err)
	}
	return nil
}

// The jobs document (kind "jobs", docs/json.md).
type (
	jsonJobs struct {
		Envelope
		Jobs []jsonJobRow `json:"jobs"`
	}
	jsonJobRow struct {
		Job        string      `json:"job"`
		File       string      `json:"file"`
		State      string      `json:"state"`
		RankCount  *int        `json:"rank_count"`
		Ended      []jsonEnded `json:"ended"`
		EndedText  string      `json:"ended_text"`
		EventCount *uint64     `json:"event_count"`
		Start      time.Time   `json:"start,omitzero"`
		LastUpdate time.Time   `json:"last_update,omitzero"`
		Error      string      `json:"error,omitempty"`
	}
	jsonEnded struct {
		State  string `json:"state"`
		Code   *int   `json:"code,omitempty"`
		Signal *int   `json:"signal,omitempty"`
		Count  int    `json:"count"`
	}
)

// WriteJobsJSON writes rows as one JSON document of kind "jobs": a list
// of jobs, each with job, file, state, rank_count, ended (a list of
// state, code or signal, and count), ended_text (as Ended), event_count,
// start, last_update and error. An unreadable summary's counts are null
// and its ended list empty.
func WriteJobsJSON(w io.Writer, rows []JobRow) error {
	doc := jsonJobs{Envelope: NewEnvelope(KindJobs), Jobs: make([]jsonJobRow, 0, len(rows))}
	for _, r := range rows {
		jr := jsonJobRow{Job: r.Job, File: r.File, State: r.State, Ended: []jsonEnded{}, EndedText: r.Ended,
			Start: r.Start, LastUpdate: r.LastUpdate, Error: r.Error}
		if r.Error == "" {
			ranks, events := r.Ranks, r.Events
			jr.RankCount, jr.EventCount = &ranks, &events
		}
		for _, g := range r.EndedGroups {
			je := jsonEnded{State: g.State, Count: g.Count}
			switch g.State {
			case "exited":
				code := g.Code
				je.Code = &code
			case "signaled":
				sig := g.Signal
				je.Signal = &sig
			}
			jr.Ended = append(jr.Ended, je)
		}
		doc.Jobs = append(doc.Jobs, jr)
	}
	return EncodeJSON(w, doc, "jobs")
}

// jobClock shows a time of the list, "-" when unknown.
func jobClock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(jobTime)
}

// LoadJob reads job's summary from store: the stored bytes as they are
// (a later agent's fields included) and the summary decoded. job is a name
// `mpiprobe jobs` lists, or a job id the agent stored under a hashed name
// (jobstore.Key). When the store has no such summary the error is a
// *jobstore.NotFoundError; a summary that cannot be decoded gives an error
// naming its file.
func LoadJob(store jobstore.Store, job string) ([]byte, agg.Summary, error) {
	data, err := store.Load(job)
	var nf *jobstore.NotFoundError
	if key := jobstore.Key(job); errors.As(err, &nf) && key != job {
		if d, err2 := store.Load(key); err2 == nil {
			data, err, job = d, nil, key
		}
	}
	if err != nil {
		return nil, agg.Summary{}, err
	}
	sum, err := ReadJSON(bytes.NewReader(data))
	if err != nil {
		return nil, agg.Summary{}, fmt.Errorf("%s: %w", store.Path(job), err)
	}
	return data, sum, nil
}

// MergeNodes reads one summary per path (see ReadNode) and merges them
// into one summary of job (see agg.Merge; job "" when each path holds only
// one). It returns the merged summary and agg.Merge's notes.
func MergeNodes(ctx context.Context, paths []string, job string) (agg.Summary, []string, error) {
	var sums []agg.Summary
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return agg.Summary{}, nil, err
		}
		s, err := ReadNode(p, job)
		if err != nil {
			return agg.Summary{}, nil, err
		}
		sums = append(sums, s)
	}
	return agg.Merge(sums, job)
}

// ReadNode reads one node's summary from path: a .json file, a jobs dir,
// or a state dir (holding jobs/). In a directory it reads job's file, or,
// when job is "", the only summary there; several summaries there are an
// error listing their jobs.
func ReadNode(path, job string) (agg.Summary, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return agg.Summary{}, err
	}
	file := path
	if fi.IsDir() {
		dir := path
		if sub := jobstore.JobsDir(path); isDir(sub) {
			dir = sub
		}
		store := jobstore.Store{Dir: dir}
		if job != "" {
			file = store.Path(job)
			if _, err := os.Stat(file); err != nil {
				return agg.Summary{}, fmt.Errorf("%s: no summary of job %s (%s)", dir, text.Quote(job), filepath.Base(file))
			}
		} else {
			entries, err := store.List()
			if err != nil {
				return agg.Summary{}, err
			}
			switch len(entries) {
			case 0:
				return agg.Summary{}, fmt.Errorf("%s: no job summaries there", dir)
			case 1:
				file = entries[0].Path
			default:
				var ids []string
				for _, e := range entries {
					ids = append(ids, text.Quote(e.Job))
				}
				slices.Sort(ids)
				return agg.Summary{}, fmt.Errorf("%s holds %d job summaries (%s); give --job JOBID", dir, len(ids), strings.Join(ids, ", "))
			}
		}
	}
	sum, err := ReadFile(file)
	if err != nil {
		return agg.Summary{}, fmt.Errorf("%s: %w", file, err)
	}
	return sum, nil
}

// isDir reports whether path is a directory.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
