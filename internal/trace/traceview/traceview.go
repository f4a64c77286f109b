package traceview

import (
	"cmp"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/ranks"
	"github.com/mpiprobe/mpiprobe/internal/trace/loops"
	"github.com/mpiprobe/mpiprobe/internal/trace/tracefile"
)

// Detail is how much of a rank's structure is printed.
type Detail int

// The detail levels of Show.
const (
	// Low prints the calls and loops only.
	Low Detail = iota
	// High adds the compute bursts between calls, average times in
	// microseconds, and per call site the peers, counts and roots seen.
	High
)

// ParseDetail reads "low" or "high".
func ParseDetail(s string) (Detail, error) {
	switch s {
	case "low":
		return Low, nil
	case "high":
		return High, nil
	}
	return Low, fmt.Errorf("detail %q: give low or high", s)
}

// Options select what Show prints.
type Options struct {
	// Rank, when not empty, limits the per-rank part to the rank with this
	// MPI rank number (as the trace names it).
	Rank string
	// Detail is the level of detail.
	Detail Detail
}

// Stream is one thread's compressed call stream.
type Stream struct {
	// Rank indexes Trace.Ranks; TID is the thread.
	Rank int
	TID  int32
	// Calls is how many MPI calls the stream holds.
	Calls int
	// Nodes is the compressed symbol sequence.
	Nodes []*loops.Node
	// MPI and Compute are the total times inside MPI and between calls.
	MPI, Compute time.Duration
}

// Analysis is a trace cut into per-thread compressed streams, with call
// sites numbered in the order they first appear (ranks in rank order).
type Analysis struct {
	Trace   *tracefile.Trace
	Streams []Stream
	// SiteNum gives each site index of the trace its display number, -1 if unused.
	SiteNum []int
	syms    []symbol
}

// symbol is a leaf of the compressed sequences: a call at a site, or the
// compute burst before a call at a site.
type symbol struct {
	cpu  bool
	call int
	site int
}

// Analyze compresses every thread's stream of the trace.
func Analyze(t *tracefile.Trace) *Analysis {
	a := &Analysis{Trace: t, SiteNum: make([]int, len(t.Sites))}
	for i := range a.SiteNum {
		a.SiteNum[i] = -1
	}
	type tkey struct {
		rank int
		tid  int32
	}
	byThread := map[tkey][]tracefile.Event{}
	var keys []tkey
	for _, e := range t.Events {
		k := tkey{e.Rank, e.TID}
		if _, ok := byThread[k]; !ok {
			keys = append(keys, k)
		}
		byThread[k] = append(byThread[k], e)
	}
	order := rankOrder(t)
	slices.SortStableFunc(keys, func(x, y tkey) int {
		return cmp.Or(cmp.Compare(order[x.rank], order[y.rank]), cmp.Compare(x.tid, y.tid))
	})
	next := 0
	symIdx := map[symbol]int{}
	sym := func(s symbol) int {
		if i, ok := symIdx[s]; ok {
			return i
		}
		symIdx[s] = len(a.syms)
		a.syms = append(a.syms, s)
		return len(a.syms) - 1
	}
	for _, k := range keys {
		evs := byThread[k]
		slices.SortStableFunc(evs, func(x, y tracefile.Event) int { return cmp.Compare(x.Enter, y.Enter) })
		seq := make([]int, 0, 2*len(evs))
		w := make([]float64, 0, 2*len(evs))
		st := Stream{Rank: k.rank, TID: k.tid, Calls: len(evs)}
		for i, e := range evs {
			if a.SiteNum[e.Site] < 0 {
				a.SiteNum[e.Site] = next
				next++
			}
			// The burst before the first call is counted from the start
			// of the trace (for a started command: the process's startup).
			gap := e.Enter
			if i > 0 {
				gap = e.Enter - evs[i-1].Exit
			}
			gap = max(gap, 0)
			seq = append(seq, sym(symbol{cpu: true, site: e.Site}))
			w = append(w, float64(gap)/1e3)
			st.Compute += time.Duration(gap)
			seq = append(seq, sym(symbol{call: e.Call, site: e.Site}))
			d := max(e.Exit-e.Enter, 0)
			w = append(w, float64(d)/1e3)
			st.MPI += time.Duration(d)
		}
		st.Nodes = loops.Compress(seq, w)
		a.Streams = append(a.Streams, st)
	}
	return a
}

// rankOrder returns each rank index's position when ranks are sorted by
// their MPI rank number (unknown ranks last, by pid).
func rankOrder(t *tracefile.Trace) []int {
	idx := make([]int, len(t.Ranks))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(x, y int) int {
		rx, ex := strconv.Atoi(t.Ranks[x].Rank)
		ry, ey := strconv.Atoi(t.Ranks[y].Rank)
		switch {
		case ex == nil && ey == nil:
			return cmp.Or(cmp.Compare(rx, ry), cmp.Compare(t.Ranks[x].PID, t.Ranks[y].PID))
		case ex == nil:
			return -1
		case ey == nil:
			return 1
		}
		return cmp.Compare(t.Ranks[x].PID, t.Ranks[y].PID)
	})
	order := make([]int, len(t.Ranks))
	for pos, i := range idx {
		order[i] = pos
	}
	return order
}

// Name returns a symbol's display name: "Allreduce2", or "CPU2" for the
// compute burst before call site 2.
func (a *Analysis) Name(sym int) string {
	s := a.syms[sym]
	n := strconv.Itoa(a.SiteNum[s.site])
	if s.cpu {
		return "CPU" + n
	}
	return shortCall(a.Trace.Calls[s.call]) + n
}

func shortCall(c string) string { return strings.TrimPrefix(c, "MPI_") }

// IsCompute reports whether a symbol is a compute burst.
func (a *Analysis) IsCompute(sym int) bool { return a.syms[sym].cpu }

// Structure formats a stream at the given detail.
func (a *Analysis) Structure(s Stream, d Detail) string {
	opt := loops.FormatOptions{Times: d == High}
	if d == Low {
		opt.Hide = a.IsCompute
	}
	return loops.Format(s.Nodes, a.Name, opt)
}

// Show prints the trace: header, call sites, each rank's compressed
// structure, and the ranks grouped by identical structure.
func Show(w io.Writer, t *tracefile.Trace, opt Options) error {
	a := Analyze(t)
	p := &printer{w: w}
	p.header(a)
	if len(t.Events) == 0 && len(t.Ranks) == 0 {
		p.printf("no MPI call was recorded: no traced process called the MPI library mpiprobe attached to (%s)\n",
			"was the program started under mpiprobe trace, and is it linked against Open MPI or MPICH?")
		return p.err
	}
	p.sites(a, opt.Detail)
	p.ranks(a, opt)
	if opt.Rank == "" {
		p.groups(a)
	}
	return p.err
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *printer) header(a *Analysis) {
	t := a.Trace
	p.printf("trace of %s on %s, started %s: %d ranks, %d MPI calls\n",
		strings.Join(t.Header.Command, " "), t.Header.Host, t.Header.Start.Format("2006-01-02 15:04:05"),
		len(t.Ranks), len(t.Events))
	if !t.Complete {
		p.printf("warning: the trace is incomplete (see the error below); what was read is shown\n")
	}
}

// siteInfo gathers what a call site was seen doing.
type siteInfo struct {
	calls []string
	peers []int32
	roots []int32
	sizes []string
}

func (p *printer) sites(a *Analysis, d Detail) {
	t := a.Trace
	info := make([]siteInfo, len(t.Sites))
	add := func(list []int32, v int32) []int32 {
		if v == tracefile.NoValue || slices.Contains(list, v) || len(list) > 8 {
			return list
		}
		return append(list, v)
	}
	for _, e := range t.Events {
		in := &info[e.Site]
		if c := shortCall(t.Calls[e.Call]); !slices.Contains(in.calls, c) {
			in.calls = append(in.calls, c)
		}
		if d == High {
			in.peers = add(in.peers, e.Peer)
			in.roots = add(in.roots, e.Root)
			if e.Count != tracefile.NoValue {
				sz := strconv.FormatInt(e.Count, 10)
				if e.ElemSize > 0 {
					sz += " x " + strconv.Itoa(int(e.ElemSize)) + " B"
				}
				if !slices.Contains(in.sizes, sz) && len(in.sizes) <= 4 {
					in.sizes = append(in.sizes, sz)
				}
			}
		}
	}
	var order []int
	for i, n := range a.SiteNum {
		if n >= 0 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(x, y int) int { return cmp.Compare(a.SiteNum[x], a.SiteNum[y]) })
	if len(order) == 0 {
		return
	}
	p.printf("call sites:\n")
	for _, i := range order {
		s := t.Sites[i]
		where := path.Base(s.Object) + "+" + fmt.Sprintf("%#x", s.Offset)
		if s.Function != "" {
			where = fmt.Sprintf("%s+%#x", s.Function, s.FuncOffset)
		}
		if s.File != "" {
			where += fmt.Sprintf(" (%s:%d)", path.Base(s.File), s.Line)
		}
		p.printf("  %3d  %-20s %s", a.SiteNum[i], strings.Join(info[i].calls, ","), where)
		in := info[i]
		if len(in.peers) > 0 {
			p.printf("  peers %s", joinInts(in.peers))
		}
		if len(in.roots) > 0 {
			p.printf("  root %s", joinInts(in.roots))
		}
		if len(in.sizes) > 0 {
			p.printf("  count %s", strings.Join(in.sizes, ", "))
		}
		p.printf("\n")
	}
}

func joinInts(v []int32) string {
	v = slices.Clone(v)
	slices.Sort(v)
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(int(x))
	}
	return strings.Join(s, ",")
}

func (p *printer) ranks(a *Analysis, opt Options) {
	t := a.Trace
	ends := map[int]tracefile.RankEnd{}
	for _, e := range t.Ends {
		ends[e.Rank] = e
	}
	shown := 0
	threads := map[int]int{}
	for _, s := range a.Streams {
		threads[s.Rank]++
	}
	last := -1
	for _, s := range a.Streams {
		r := t.Ranks[s.Rank]
		if opt.Rank != "" && r.Rank != opt.Rank {
			continue
		}
		shown++
		if s.Rank != last {
			last = s.Rank
			end := ends[s.Rank]
			p.printf("rank %s (pid %d, host %s, job %s): %s", r.Rank, r.PID, r.Host, r.Job, path.Base(r.Exe))
			if end.End != "" {
				p.printf(", %s", end.End)
			}
			if end.Lost > 0 {
				p.printf(", LOST %d calls (ring buffer full; the structure misses them)", end.Lost)
			}
			p.printf("\n")
		}
		if threads[s.Rank] > 1 {
			p.printf("  thread %d:\n", s.TID)
		}
		p.printf("  %s\n", a.Structure(s, opt.Detail))
		if opt.Detail == High {
			p.printf("  %d calls; %s in MPI, %s computing\n", s.Calls, s.MPI.Round(time.Microsecond), s.Compute.Round(time.Microsecond))
		}
	}
	// Ranks that made no call at all (they exited or lost every call).
	for i, r := range t.Ranks {
		if threads[i] > 0 || (opt.Rank != "" && r.Rank != opt.Rank) {
			continue
		}
		shown++
		end := ends[i]
		p.printf("rank %s (pid %d, host %s, job %s): no MPI call recorded", r.Rank, r.PID, r.Host, r.Job)
		if end.End != "" {
			p.printf(", %s", end.End)
		}
		if end.Lost > 0 {
			p.printf(", LOST %d calls", end.Lost)
		}
		p.printf("\n")
	}
	if opt.Rank != "" && shown == 0 {
		p.printf("rank %s is not in this trace\n", opt.Rank)
	}
}

// groups prints the ranks grouped by identical structure (main threads only).
func (p *printer) groups(a *Analysis) {
	byRank := map[int]string{}
	seen := map[int]bool{}
	for _, s := range a.Streams {
		if seen[s.Rank] {
			continue // the first thread of a rank is its main thread
		}
		seen[s.Rank] = true
		n, err := strconv.Atoi(a.Trace.Ranks[s.Rank].Rank)
		if err != nil {
			continue
		}
		byRank[n] = a.Structure(s, Low)
	}
	if len(byRank) < 2 {
		return
	}
	groups := loops.GroupRanks(byRank)
	if len(groups) == 1 {
		p.printf("all %d ranks (%s) have the same structure (SPMD)\n", len(groups[0].Ranks), ranks.Format(groups[0].Ranks))
		return
	}
	p.printf("ranks by structure (%d roles):\n", len(groups))
	for _, g := range groups {
		p.printf("  ranks %s: %s\n", ranks.Format(g.Ranks), g.Structure)
	}
}
