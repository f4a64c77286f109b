package report

import (
	"bytes"
	"context"
	"encoding/json"
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
	Job  string `json:"job"`
	File string `json:"file"`
	// State is "running", "finished", or "unreadable" (then Error says why).
	State string `json:"state"`
	// Ranks is how many ranks the summary holds.
	Ranks int `json:"ranks"`
	// Ended counts the ranks by how they ended (see Ended).
	Ended string `json:"ended"`
	// Events is the sum of all event counts.
	Events uint64 `json:"events"`
	// Start is when tracing started; LastUpdate when the file was written.
	Start      time.Time `json:"start,omitzero"`
	LastUpdate time.Time `json:"last_update"`
	// Error says why the summary could not be read.
	Error string `json:"error,omitempty"`
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

// Ended counts ranks by how they ended: "2 running, 3 exited, 1 exited
// with 1, 1 killed by SIGKILL, 1 status unknown", in that order of kinds,
// then by exit code or signal; "-" without ranks.
func Ended(ranks []agg.Rank) string {
	type group struct {
		kind  agg.EndKind
		value int // exit code or signal
		text  string
		n     int
	}
	var groups []*group
	for _, r := range ranks {
		g := group{kind: r.End.Kind}
		switch r.End.Kind {
		case agg.Running:
			g.text = "running"
		case agg.Exited:
			g.value, g.text = r.End.Code, "exited"
			if r.End.Code != 0 {
				g.text = "exited with " + strconv.Itoa(r.End.Code)
			}
		case agg.Signaled:
			g.value, g.text = r.End.Signal, r.End.String()
		default:
			g.kind, g.text = agg.Vanished, "status unknown"
		}
		i := slices.IndexFunc(groups, func(o *group) bool { return o.kind == g.kind && o.value == g.value })
		if i < 0 {
			groups = append(groups, &g)
			i = len(groups) - 1
		}
		groups[i].n++
	}
	if len(groups) == 0 {
		return "-"
	}
	slices.SortFunc(groups, func(a, b *group) int {
		if a.kind != b.kind {
			return int(a.kind) - int(b.kind)
		}
		return a.value - b.value
	})
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = strconv.Itoa(g.n) + " " + g.text
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

// WriteJobsJSON writes rows as one indented JSON list.
func WriteJobsJSON(w io.Writer, rows []JobRow) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rows); err != nil {
		return fmt.Errorf("report: write jobs: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("report: write jobs: %w", err)
	}
	return nil
}

// jobClock shows a time of the list, "-" when unknown.
func jobClock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(jobTime)
}

// LoadJob reads job's summary from store: the stored bytes as they are
// (a later agent's fields included) and the summary decoded. When the
// store has no such summary the error is a *jobstore.NotFoundError; a
// summary that cannot be decoded gives an error naming its file.
func LoadJob(store jobstore.Store, job string) ([]byte, agg.Summary, error) {
	data, err := store.Load(job)
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
