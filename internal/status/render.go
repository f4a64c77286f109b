package status

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/ranks"
	"github.com/mpiprobe/mpiprobe/internal/report"
	"github.com/mpiprobe/mpiprobe/internal/status/hang"
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
		if len(rk.Threads) == 0 && rk.Unreadable != "" {
			rows = append(rows, []string{rankText, pid, "unknown", "", "", "? (" + text.Line(rk.Unreadable) + ")"})
			continue
		}
		if len(rk.Threads) == 0 && rk.Stopped != "" {
			rows = append(rows, []string{rankText, pid, "stopped " + text.Line(rk.Stopped), "", "", ""})
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
			if rk.Stopped != "" {
				in = "stopped " + text.Line(rk.Stopped) + " in " + in
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

// jsonResult is `status --json`: the verdict's facts in snake_case.
type jsonResult struct {
	report.Envelope
	Host          string         `json:"host"`
	WindowSeconds float64        `json:"window_seconds"`
	History       []int          `json:"history_sessions,omitempty"`
	Verdict       string         `json:"verdict"`
	Ranks         []jsonRank     `json:"ranks"`
	Waiting       []int          `json:"waiting"`
	Odd           []int          `json:"odd"`
	Suspects      []int          `json:"suspects"`
	Lead          []int          `json:"lead"`
	Mismatches    []jsonMismatch `json:"mismatches"`
	Absent        []jsonAbsence  `json:"absent"`
	Cycles        [][]int        `json:"cycles"`
	Knot          jsonKnot       `json:"knot"`
	Divergent     []jsonDiv      `json:"divergent"`
	Notes         []string       `json:"notes,omitempty"`
	Nodes         []string       `json:"nodes,omitempty"`
	MissingNodes  []NodeFailure  `json:"missing_nodes,omitempty"`
}

type jsonRank struct {
	Rank         *int         `json:"rank"` // null when unknown (docs/json.md)
	PID          int          `json:"pid"`
	Host         string       `json:"host"`
	Job          string       `json:"job,omitempty"`
	Call         string       `json:"call"`
	Via          string       `json:"via,omitempty"`
	Comm         *agg.Comm    `json:"comm"`
	Members      []int        `json:"members,omitempty"`
	Seq          uint64       `json:"seq,omitempty"`
	Site         string       `json:"site"`
	SinceSeconds float64      `json:"since_seconds"`
	AtLeast      bool         `json:"at_least"`
	Moving       bool         `json:"moving,omitempty"`
	Ended        string       `json:"ended"`
	Stopped      string       `json:"stopped,omitempty"`
	Unreadable   string       `json:"unreadable,omitempty"`
	Peer         *int         `json:"peer,omitempty"`
	Tag          *int         `json:"tag,omitempty"`
	Threads      []jsonThread `json:"threads"`
	Counts       []CommCount  `json:"counts,omitempty"`
	Library      string       `json:"library,omitempty"`
	Note         string       `json:"note,omitempty"`
}

// jsonThread is a Thread as `status --json` writes it: its time inside
// in seconds, as every duration of mpiprobe's JSON (docs/json.md).
type jsonThread struct {
	Thread
	SinceSeconds float64 `json:"since_seconds"`
}

func jsonThreads(ts []Thread) []jsonThread {
	out := make([]jsonThread, len(ts))
	for i, t := range ts {
		out[i] = jsonThread{Thread: t, SinceSeconds: t.Since.Seconds()}
	}
	return out
}

type jsonSide struct {
	Ranks    []int  `json:"ranks"`
	Call     string `json:"call"`
	Seq      uint64 `json:"seq,omitempty"`
	Site     string `json:"site"`
	Root     *int   `json:"root,omitempty"`
	Count    *int64 `json:"count,omitempty"`
	Datatype string `json:"datatype,omitempty"`
}

type jsonMismatch struct {
	Comm  agg.Comm   `json:"comm"`
	Sides []jsonSide `json:"sides"`
}

type jsonAbsence struct {
	Rank    int      `json:"rank"`
	Call    string   `json:"call"`
	Comm    agg.Comm `json:"comm"`
	Waiting []int    `json:"waiting"`
	State   string   `json:"state"`
	In      string   `json:"in,omitempty"`
}

// jsonKnot is the ranks none of which can move (hang.Knot), with what
// each waits for.
type jsonKnot struct {
	Ranks []int          `json:"ranks"`
	Waits []jsonKnotWait `json:"waits"`
}

type jsonKnotWait struct {
	Rank       int    `json:"rank"`
	Call       string `json:"call"`
	Site       string `json:"site"`
	Any        bool   `json:"any"`
	Of         []int  `json:"of"`
	Collective bool   `json:"collective"`
	Known      bool   `json:"known"`
}

type jsonDiv struct {
	Rank   int      `json:"rank"`
	Comm   agg.Comm `json:"comm"`
	Call   string   `json:"call"`
	Count  uint64   `json:"count"`
	Others uint64   `json:"others"`
}

// waitsTag is the tag all of ws wait with, if they agree.
func waitsTag(ws []hang.Wait) (int, bool) {
	for _, w := range ws[1:] {
		if w.Tag != ws[0].Tag {
			return 0, false
		}
	}
	return ws[0].Tag, true
}

// knownRank is rank, or nil when it is unknown (negative).
func knownRank(rank int) *int {
	if rank < 0 {
		return nil
	}
	return &rank
}

// orEmpty makes a nil slice an empty JSON array.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// WriteJSON writes the result as one JSON document (schema_version 1):
// the verdict and its facts, and per rank the call that stands for it
// (the thread the verdict uses) with all its threads.
func WriteJSON(w io.Writer, r Result) error {
	rep := r.Report
	out := jsonResult{
		Envelope: report.NewEnvelope(report.KindStatus), Host: r.Host, WindowSeconds: r.Window.Seconds(), History: r.History,
		Verdict: rep.Verdict, Waiting: orEmpty(rep.Waiting), Odd: orEmpty(rep.Odd), Suspects: orEmpty(rep.Suspects),
		Lead: orEmpty(rep.Lead), Cycles: [][]int{}, Notes: r.Notes, Nodes: r.Nodes, MissingNodes: r.Missing,
		Knot:  jsonKnot{Ranks: orEmpty(rep.Knot.Ranks), Waits: []jsonKnotWait{}},
		Ranks: []jsonRank{}, Mismatches: []jsonMismatch{}, Absent: []jsonAbsence{}, Divergent: []jsonDiv{},
	}
	for _, rk := range r.Ranks {
		jr := jsonRank{Rank: knownRank(rk.Rank), PID: rk.PID, Host: rk.Host, Job: rk.Job, Ended: rk.Ended, Stopped: rk.Stopped, Unreadable: rk.Unreadable,
			Threads: jsonThreads(rk.Threads), Counts: rk.Counts, Library: rk.Library, Note: rk.Note}
		var best *Thread
		for i := range rk.Threads {
			if best == nil || betterThread(&rk.Threads[i], best) {
				best = &rk.Threads[i]
			}
		}
		if best != nil && rk.Ended == "" {
			jr.Call, jr.Via, jr.Comm, jr.Seq, jr.Site, jr.Members = best.Call, best.Via, best.Comm, best.Seq, best.Site, best.Members
			jr.SinceSeconds, jr.AtLeast, jr.Moving = best.Since.Seconds(), best.AtLeast, best.Moving
			if len(best.Waits) > 0 {
				peer := waitsPeer(best.Waits)
				jr.Peer = &peer
				if tag, ok := waitsTag(best.Waits); ok {
					jr.Tag = &tag
				}
			}
		}
		out.Ranks = append(out.Ranks, jr)
	}
	for _, c := range rep.Cycles {
		out.Cycles = append(out.Cycles, hang.CycleRanks(c))
	}
	for _, w := range rep.Knot.Waits {
		out.Knot.Waits = append(out.Knot.Waits, jsonKnotWait{Rank: w.Rank, Call: w.Call, Site: w.Site, Any: w.Any, Of: w.Of, Collective: w.Coll, Known: w.Known})
	}
	for _, m := range rep.Mismatches {
		jm := jsonMismatch{Comm: m.Comm}
		for _, sd := range m.Sides {
			js := jsonSide{Ranks: sd.Ranks, Call: sd.Call, Seq: sd.Seq, Site: sd.Site}
			if sd.Args != nil {
				root, count := sd.Args.Root, sd.Args.Count
				js.Root, js.Count, js.Datatype = &root, &count, sd.Args.Datatype
			}
			jm.Sides = append(jm.Sides, js)
		}
		out.Mismatches = append(out.Mismatches, jm)
	}
	for _, a := range rep.Absent {
		out.Absent = append(out.Absent, jsonAbsence{Rank: a.Rank, Call: a.Call, Comm: a.Comm, Waiting: a.Waiting, State: a.State, In: a.In})
	}
	for _, v := range rep.Divergent {
		out.Divergent = append(out.Divergent, jsonDiv{Rank: v.Rank, Comm: v.Comm, Call: v.Call, Count: v.Count, Others: v.Others})
	}
	return text.EncodeJSON(w, out)
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
