package ps

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"syscall"

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
// be known which processes mpiprobe traces, a line saying why.
func Write(w io.Writer, l List) error {
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
	if err := text.Table(w, []string{"JOB", "SIZE", "RANK", "PID", "USER", "MPI", "TRACED BY", "COMMAND"}, rows, 1, 2, 3); err != nil {
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

// WriteJSON writes the list as one JSON object.
func WriteJSON(w io.Writer, l List) error {
	if l.Jobs == nil {
		l.Jobs = []Job{}
	}
	for i := range l.Jobs {
		for k := range l.Jobs[i].Procs {
			if l.Jobs[i].Procs[k].TracedBy == nil {
				l.Jobs[i].Procs[k].TracedBy = []Tracer{}
			}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(l)
}
