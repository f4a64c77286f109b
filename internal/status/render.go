package status

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/ranks"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// Write prints the result for people: one line per rank (one per thread
// inside an MPI call), the collective counts per communicator when history
// is known, the notes, and the verdict last.
func Write(w io.Writer, r Result, verbose bool) error {
	job := "?"
	if len(r.Ranks) > 0 {
		job = r.Ranks[0].Job
	}
	src := fmt.Sprintf("no history: each thread watched for %s", seconds(r.Window))
	if len(r.History) > 0 {
		src = fmt.Sprintf("history from mpiprobe --collectives (pid %s)", joinInts(r.History))
	}
	fmt.Fprintf(w, "Job %s on %s — %d %s; %s\n\n", text.Quote(job), text.Quote(r.Host), len(r.Ranks), plural(len(r.Ranks), "rank", "ranks"), src)
	var rows [][]string
	for _, rk := range r.Ranks {
		rankText := strconv.Itoa(rk.Rank)
		if rk.Rank < 0 {
			rankText = "?"
		}
		pid := strconv.Itoa(rk.PID)
		if rk.Ended != "" {
			rows = append(rows, []string{rankText, pid, "(" + text.Line(rk.Ended) + ")", "", "", ""})
			continue
		}
		if len(rk.Threads) == 0 {
			rows = append(rows, []string{rankText, pid, "computing", "", "", ""})
			continue
		}
		for i, t := range rk.Threads {
			rank, pid := rankText, pid
			if i > 0 {
				rank, pid = "", ""
			}
			in := t.Call
			if t.Seq > 0 {
				in += fmt.Sprintf(" #%d", t.Seq)
			}
			if t.Via != "" {
				in += " in " + t.Via
			}
			if len(t.Waits) > 0 {
				in += " " + waitsText(t.Call, t.Waits)
			}
			if len(rk.Threads) > 1 {
				in += fmt.Sprintf(" (thread %d)", t.TID)
			}
			comm := "?"
			if t.Comm != nil {
				comm = t.Comm.String()
			}
			if t.CommName != "" {
				comm += " " + text.Quote(t.CommName)
			}
			dur := seconds(t.Since)
			switch {
			case t.Moving:
				dur = "(progressing)"
			case t.AtLeast:
				dur = "≥ " + dur
			}
			site := text.Line(t.Site)
			if site == "" {
				site = "?"
				if t.Note != "" {
					site += " (" + text.Line(t.Note) + ")"
				}
			}
			rows = append(rows, []string{rank, pid, in, comm, dur, site})
		}
	}
	if err := text.Table(w, []string{"RANK", "PID", "IN", "COMMUNICATOR", "FOR", "CALL SITE"}, rows, 4); err != nil {
		return err
	}
	writeCounts(w, r)
	if verbose {
		for _, rk := range r.Ranks {
			for _, t := range rk.Threads {
				fmt.Fprintf(w, "\nrank %d thread %d:\n", rk.Rank, t.TID)
				for _, f := range t.Stack {
					fmt.Fprintf(w, "  %s\n", text.Line(f))
				}
			}
		}
	}
	for _, rk := range r.Ranks {
		if rk.Note != "" {
			fmt.Fprintf(w, "\nnote: rank %d: %s", rk.Rank, text.Line(rk.Note))
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "\nnote: %s", text.Line(n))
	}
	_, err := fmt.Fprintf(w, "\n\nVerdict: %s\n", r.Report.Verdict)
	return err
}

// writeCounts prints, per communicator and collective, the ranks with each
// count.
func writeCounts(w io.Writer, r Result) {
	type key struct {
		comm agg.Comm
		pid  int // local handles belong to one process
	}
	byComm := map[key]map[string]map[uint64][]int{}
	var order []key
	for _, rk := range r.Ranks {
		for _, c := range rk.Counts {
			k := key{comm: c.Comm}
			if c.Comm.Local {
				k.pid = rk.PID
			}
			if byComm[k] == nil {
				byComm[k] = map[string]map[uint64][]int{}
				order = append(order, k)
			}
			for n, v := range c.Calls {
				if byComm[k][n] == nil {
					byComm[k][n] = map[uint64][]int{}
				}
				byComm[k][n][v] = append(byComm[k][n][v], rk.Rank)
			}
		}
	}
	if len(order) == 0 {
		return
	}
	fmt.Fprintf(w, "\nCollective calls so far:\n")
	for _, k := range order {
		fmt.Fprintf(w, "  %s\n", k.comm.String())
		names := make([]string, 0, len(byComm[k]))
		for n := range byComm[k] {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			var parts []string
			counts := make([]uint64, 0)
			for c := range byComm[k][n] {
				counts = append(counts, c)
			}
			slices.Sort(counts)
			for _, c := range counts {
				rs := byComm[k][n][c]
				parts = append(parts, fmt.Sprintf("%s %s: %d", plural(len(rs), "rank", "ranks"), ranks.Format(rs), c))
			}
			line := "    " + n + "  " + strings.Join(parts, "; ")
			if len(counts) > 1 {
				line += "   COUNTS DIFFER"
			}
			fmt.Fprintln(w, line)
		}
	}
}

// WriteJSON writes the result as one JSON document.
func WriteJSON(w io.Writer, r Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func joinInts(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, fmt.Sprint(x))
	}
	return strings.Join(s, ", ")
}
