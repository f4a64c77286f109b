package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/jobstore"
	"github.com/mpiprobe/mpiprobe/internal/report"
)

// jobsTime is how START and LAST UPDATE are shown, in local time.
const jobsTime = "2006-01-02 15:04:05"

// jobsMain runs `mpiprobe jobs`: the job summaries the agent wrote to the
// state directory, newest first. It returns the exit code: 0, 1 on
// failure, 2 on bad usage. A summary that cannot be read is listed with its
// problem; it does not make the command fail.
func jobsMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		stateDir string
		asJSON   bool
	)
	fs := flag.NewFlagSet("mpiprobe jobs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&stateDir, "state-dir", jobstore.DefaultStateDir, "the agent's state `DIR`; the summaries are in DIR/jobs")
	fs.BoolVar(&asJSON, "json", false, "print the list as JSON")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mpiprobe jobs [flags]\n\n"+
			"Lists the jobs whose summaries `mpiprobe agent` wrote, newest first; `mpiprobe report JOBID`\n"+
			"shows one.\n\nflags:\n")
		fs.PrintDefaults()
	}
	pos, err := jobsParse(fs, args)
	if err != nil {
		return jobsFlagCode(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "mpiprobe jobs: unexpected argument %q (mpiprobe report JOBID shows one job)\n", pos[0])
		return 2
	}
	store := jobstore.Store{Dir: jobstore.JobsDir(stateDir)}
	entries, err := store.List()
	if err != nil {
		fmt.Fprintf(stderr, "mpiprobe jobs: %v\n", err)
		return 1
	}
	rows := make([]jobsRow, 0, len(entries))
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			fmt.Fprintf(stderr, "mpiprobe jobs: %v\n", err)
			return 1
		}
		rows = append(rows, jobsRowOf(e))
	}
	if len(rows) == 0 {
		none := fmt.Sprintf("no job summaries yet in %s (is mpiprobe agent running? systemctl status mpiprobe)", store.Dir)
		if asJSON {
			fmt.Fprintf(stderr, "mpiprobe jobs: %s\n", none)
			fmt.Fprintf(stdout, "[]\n")
			return 0
		}
		fmt.Fprintf(stdout, "No job summaries yet in %s (is mpiprobe agent running? systemctl status mpiprobe)\n", store.Dir)
		return 0
	}
	if asJSON {
		err = jobsWriteJSON(stdout, rows)
	} else {
		err = jobsWriteTable(stdout, rows)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mpiprobe jobs: write: %v\n", err)
		return 1
	}
	return 0
}

// jobsRow is one line of `mpiprobe jobs`.
type jobsRow struct {
	Job  string `json:"job"`
	File string `json:"file"`
	// State is "running", "finished", or "unreadable" (then Error says why).
	State string `json:"state"`
	Ranks int    `json:"ranks"`
	// Ended counts the ranks by how they ended: "3 exited, 1 killed by SIGKILL".
	Ended      string    `json:"ended"`
	Events     uint64    `json:"events"`
	Start      time.Time `json:"start,omitzero"`
	LastUpdate time.Time `json:"last_update"`
	Error      string    `json:"error,omitempty"`
}

// jobsRowOf reads one stored summary into a row.
func jobsRowOf(e jobstore.Entry) jobsRow {
	row := jobsRow{Job: e.Job, File: e.Path, LastUpdate: e.Modified}
	sum, err := jobsRead(e.Path)
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
	row.Ended = jobsEnded(ranks)
	return row
}

// jobsRead reads and decodes a summary file.
func jobsRead(path string) (agg.Summary, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return agg.Summary{}, err
	}
	return report.ReadJSON(bytes.NewReader(data))
}

// jobsEnded counts ranks by how they ended: "2 running, 3 exited, 1 exited
// with 1, 1 killed by SIGKILL, 1 status unknown", "-" without ranks.
func jobsEnded(ranks []agg.Rank) string {
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

func jobsWriteTable(w io.Writer, rows []jobsRow) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "JOB\tSTATE\tRANKS\tENDED\tEVENTS\tSTART\tLAST UPDATE\n")
	var problems []string
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t%s\n", jobsShow(r.Job), r.State, jobsClock(r.LastUpdate))
			problems = append(problems, fmt.Sprintf("%s: %s: %s", jobsShow(r.Job), r.File, r.Error))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", jobsShow(r.Job), r.State, r.Ranks, r.Ended,
			report.Thousands(r.Events), jobsClock(r.Start), jobsClock(r.LastUpdate))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(problems) > 0 {
		buf.WriteString("\nUnreadable summaries:\n")
		for _, p := range problems {
			buf.WriteString("  " + p + "\n")
		}
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func jobsWriteJSON(w io.Writer, rows []jobsRow) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rows); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// jobsClock shows a time of the listing, "-" when unknown.
func jobsClock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(jobsTime)
}

// jobsShow is a job id for the terminal: as it is when it is plain
// printable text, Go-quoted otherwise (users choose job ids).
func jobsShow(s string) string {
	if s == "" || !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if r == ' ' || r == '"' || r == '\\' || !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// reportMain runs `mpiprobe report`: one stored job summary, or the
// summaries of one job from several nodes merged into one. It returns the
// exit code: 0, 1 on failure, 2 on bad usage.
func reportMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		stateDir string
		job      string
		merge    bool
		asJSON   bool
	)
	fs := flag.NewFlagSet("mpiprobe report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&stateDir, "state-dir", jobstore.DefaultStateDir, "the agent's state `DIR`; the summaries are in DIR/jobs")
	fs.BoolVar(&merge, "merge", false, "merge one job's summaries from the given state dirs, jobs dirs or .json files (one per node)")
	fs.StringVar(&job, "job", "", "with --merge: the job `JOBID` to merge (needed when a DIR holds several)")
	fs.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mpiprobe report [flags] JOBID\n       mpiprobe report --merge [--job JOBID] [--json] DIR|FILE...\n\n"+
			"Shows the summary `mpiprobe agent` wrote for a job (`mpiprobe jobs` lists them). With --merge, reads\n"+
			"the job's summary from each node's state dir, jobs dir or copied .json file and shows them as one.\n\nflags:\n")
		fs.PrintDefaults()
	}
	pos, err := jobsParse(fs, args)
	if err != nil {
		return jobsFlagCode(err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	var sum agg.Summary
	if merge {
		if set["state-dir"] {
			fmt.Fprintf(stderr, "mpiprobe report: --state-dir does not go with --merge (give the directories to merge as arguments)\n")
			return 2
		}
		if len(pos) == 0 {
			fmt.Fprintf(stderr, "mpiprobe report: --merge needs the nodes' state dirs, jobs dirs or .json files\n")
			return 2
		}
		var sums []agg.Summary
		for _, p := range pos {
			if err := ctx.Err(); err != nil {
				fmt.Fprintf(stderr, "mpiprobe report: %v\n", err)
				return 1
			}
			s, err := reportReadNode(p, job)
			if err != nil {
				fmt.Fprintf(stderr, "mpiprobe report: %v\n", err)
				return 1
			}
			sums = append(sums, s)
		}
		merged, notes, err := agg.Merge(sums, job)
		if err != nil {
			fmt.Fprintf(stderr, "mpiprobe report: %v\n", err)
			return 1
		}
		for _, n := range notes {
			fmt.Fprintf(stderr, "mpiprobe report: note: %s\n", n)
		}
		sum = merged
	} else {
		switch {
		case len(pos) > 1:
			fmt.Fprintf(stderr, "mpiprobe report: give one JOBID, not %d (to merge nodes' summaries: --merge)\n", len(pos))
			return 2
		case len(pos) == 1 && job != "" && job != pos[0]:
			fmt.Fprintf(stderr, "mpiprobe report: two jobs given: %s and --job %s\n", jobsShow(pos[0]), jobsShow(job))
			return 2
		case len(pos) == 1:
			job = pos[0]
		case job == "":
			fmt.Fprintf(stderr, "mpiprobe report: no job: give JOBID (mpiprobe jobs lists them)\n")
			return 2
		}
		store := jobstore.Store{Dir: jobstore.JobsDir(stateDir)}
		data, err := store.Load(job)
		var nf *jobstore.NotFoundError
		if errors.As(err, &nf) {
			hint := "mpiprobe jobs"
			if set["state-dir"] {
				hint += " --state-dir " + stateDir
			}
			fmt.Fprintf(stderr, "mpiprobe report: no summary of job %s in %s (%s lists the jobs there)\n", jobsShow(job), store.Dir, hint)
			return 1
		}
		if err != nil {
			fmt.Fprintf(stderr, "mpiprobe report: %v\n", err)
			return 1
		}
		sum, err = report.ReadJSON(bytes.NewReader(data))
		if err != nil {
			fmt.Fprintf(stderr, "mpiprobe report: %s: %v\n", store.Path(job), err)
			return 1
		}
		if asJSON { // as stored: a later agent's fields included
			if _, err := stdout.Write(data); err != nil {
				fmt.Fprintf(stderr, "mpiprobe report: write: %v\n", err)
				return 1
			}
			return 0
		}
	}
	if asJSON {
		err = report.WriteJSON(stdout, sum)
	} else {
		err = report.WriteTable(stdout, sum)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mpiprobe report: write: %v\n", err)
		return 1
	}
	return 0
}

// reportReadNode reads one node's summary for --merge from path: a .json
// file, a jobs dir, or a state dir (holding jobs/). In a directory it reads
// job's file, or, when job is "", the only summary there.
func reportReadNode(path, job string) (agg.Summary, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return agg.Summary{}, err
	}
	file := path
	if fi.IsDir() {
		dir := path
		if sub := jobstore.JobsDir(path); jobsIsDir(sub) {
			dir = sub
		}
		store := jobstore.Store{Dir: dir}
		if job != "" {
			file = store.Path(job)
			if _, err := os.Stat(file); err != nil {
				return agg.Summary{}, fmt.Errorf("%s: no summary of job %s (%s)", dir, jobsShow(job), filepath.Base(file))
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
					ids = append(ids, jobsShow(e.Job))
				}
				slices.Sort(ids)
				return agg.Summary{}, fmt.Errorf("%s holds %d job summaries (%s); give --job JOBID", dir, len(ids), strings.Join(ids, ", "))
			}
		}
	}
	sum, err := jobsRead(file)
	if err != nil {
		return agg.Summary{}, fmt.Errorf("%s: %w", file, err)
	}
	return sum, nil
}

// jobsIsDir reports whether path is a directory.
func jobsIsDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// jobsParse parses args with flags and arguments mixed ("report 12 --json"),
// as far as a "--": it returns the arguments.
func jobsParse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// jobsFlagCode is the exit code after a flag error: 0 for -h, else 2 (the
// flag package has said what was wrong).
func jobsFlagCode(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}
