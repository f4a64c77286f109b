package ps

import (
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"syscall"

	"github.com/mpiprobe/mpiprobe/internal/report"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// uidOf returns the owner of a file.
func uidOf(fi fs.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid
	}
	return 0
}

// Write draws the list as one table, a job's processes together by rank,
// the job's id, launcher and size on its first row; then, when it cannot
// be known which processes mpiprobe traces, a line saying why. The table
// is at most width columns wide (text.FitTable; 0: as wide as its cells).
func Write(w io.Writer, l List, width int) error {
	if len(l.Jobs) == 0 {
		fmt.Fprintf(w, "No MPI process found on %s (a rank shows once it has mapped libmpi or libmpich; processes of other users need root).\n", text.Line(l.Host))
		return nil
	}
	var rows [][]string
	for _, j := range l.Jobs {
		for i, p := range j.Procs {
			job, size := "", ""
			if i == 0 {
				job, size = text.Quote(j.ID), j.Size
				if j.Launcher != "" {
					job += " (" + j.Launcher + ")"
				}
			}
			traced := "-"
			switch {
			case !l.TracedKnown:
				traced = "unknown"
			case len(p.TracedBy) > 0:
				var ts []string
				for _, t := range p.TracedBy {
					ts = append(ts, t.String())
				}
				traced = strings.Join(ts, ", ")
			}
			rows = append(rows, []string{job, size, text.Quote(p.Rank), strconv.Itoa(p.PID), text.Quote(p.User),
				p.MPI + " " + text.Quote(p.Library), traced, text.Line(shorten(p.Command, 60))})
		}
	}
	if err := text.FitTable(w, width, []string{"JOB", "SIZE", "RANK", "PID", "USER", "MPI", "TRACED BY", "COMMAND"}, rows, 1, 2, 3); err != nil {
		return err
	}
	if !l.TracedKnown {
		_, err := fmt.Fprintf(w, "TRACED BY: %s\n", text.Line(l.TracedNote))
		return err
	}
	return nil
}

// shorten cuts s to n runes, marking the cut with "…".
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// The ps document (kind "ps", docs/json.md).
type (
	jsonList struct {
		report.Envelope
		Host        string    `json:"host"`
		Jobs        []jsonJob `json:"jobs"`
		TracedKnown bool      `json:"traced_known"`
		TracedNote  string    `json:"traced_note,omitempty"`
	}
	jsonJob struct {
		Job      string        `json:"job"`
		Launcher string        `json:"launcher"`
		Size     *int          `json:"size"`
		Procs    []jsonProcess `json:"processes"`
	}
	jsonProcess struct {
		PID      int          `json:"pid"`
		Rank     *int         `json:"rank"`
		Host     string       `json:"host"`
		User     string       `json:"user"`
		Command  string       `json:"command"`
		MPI      string       `json:"mpi"`
		Library  string       `json:"library"`
		TracedBy []jsonTracer `json:"traced_by"`
	}
	jsonTracer struct {
		Kind string `json:"kind"`
		PID  *int   `json:"pid"`
	}
)

// WriteJSON writes the list as one JSON document of kind "ps": host, jobs
// (job, launcher, size, processes: pid, rank, user, command, mpi, library,
// traced_by: kind, pid), traced_known and traced_note. An unknown rank or
// size is null, as is the pid of pinned probes.
func WriteJSON(w io.Writer, l List) error {
	doc := jsonList{Envelope: report.NewEnvelope(report.KindPS), Host: l.Host, Jobs: make([]jsonJob, 0, len(l.Jobs)),
		TracedKnown: l.TracedKnown, TracedNote: l.TracedNote}
	for _, j := range l.Jobs {
		jj := jsonJob{Job: j.ID, Launcher: j.Launcher, Size: report.RankNumber(j.Size), Procs: make([]jsonProcess, 0, len(j.Procs))}
		for _, p := range j.Procs {
			jp := jsonProcess{PID: p.PID, Rank: report.RankNumber(p.Rank), Host: p.Host, User: p.User, Command: p.Command,
				MPI: p.MPI, Library: p.Library, TracedBy: make([]jsonTracer, 0, len(p.TracedBy))}
			for _, t := range p.TracedBy {
				jt := jsonTracer{Kind: t.Kind}
				if t.Kind != KindPinned {
					pid := t.PID
					jt.PID = &pid
				}
				jp.TracedBy = append(jp.TracedBy, jt)
			}
			jj.Procs = append(jj.Procs, jp)
		}
		doc.Jobs = append(doc.Jobs, jj)
	}
	return report.EncodeJSON(w, doc, "ps")
}
