package traceview

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/ranks"
	"github.com/mpiprobe/mpiprobe/internal/text"
	"github.com/mpiprobe/mpiprobe/internal/trace/loops"
	"github.com/mpiprobe/mpiprobe/internal/trace/tracefile"
)

// Detail is how much of a rank's structure is printed.
type Detail int

// The detail levels of Show.
const (
	// Low prints the calls and loops only.
	Low Detail = iota
	// High adds the compute bursts between calls, average times with
	// their units, and per call site the peers, counts and roots seen.
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

// Options select what Show and ShowJSON print.
type Options struct {
	// Rank, when not empty, prints only the rank with this MPI rank number
	// (as the trace names it), in detail. CheckRank tells whether it is in
	// the trace.
	Rank string
	// PerRank prints every rank in detail instead of each distinct
	// structure once with the ranks that share it.
	PerRank bool
	// Detail is the level of detail.
	Detail Detail
	// Damage, when the file was damaged, says what could not be read.
	Damage *tracefile.DamageError
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
	place := a.placer()
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
		st.Nodes = loops.Rephase(loops.Compress(seq, w), w, place)
		a.Streams = append(a.Streams, st)
	}
	return a
}

// placer returns where each symbol's call site is: its function (the ELF
// object where the site has no symbol) and its address there, a compute
// burst just before the call it precedes. loops.Rephase starts a loop
// whose rotation the calls around it leave open at the first call site
// of the function that holds most of the loop, as the source loop does.
func (a *Analysis) placer() loops.Place {
	fns := map[[2]string]int{}
	fnOf := make([]int, len(a.Trace.Sites))
	for i, s := range a.Trace.Sites {
		k := [2]string{s.Object, s.Function}
		id, ok := fns[k]
		if !ok {
			id = len(fns)
			fns[k] = id
		}
		fnOf[i] = id
	}
	return func(sym int) (int, uint64) {
		s := a.syms[sym]
		at := a.Trace.Sites[s.site].Offset * 2
		if !s.cpu {
			at++
		}
		return fnOf[s.site], at
	}
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
	opt := loops.FormatOptions{Times: d == High, Value: Micros}
	if d == Low {
		opt.Hide = a.IsCompute
	}
	return loops.Format(s.Nodes, a.Name, opt)
}

// Micros formats a time in microseconds, the unit of the structures'
// weights, with a unit and three significant digits or so: "850 ns",
// "12.3 µs", "4.1 ms", "2.0 s".
func Micros(us float64) string {
	switch a := math.Abs(us); {
	case a < 1:
		return strconv.FormatFloat(us*1e3, 'f', 0, 64) + " ns"
	case a < 1e3:
		return strconv.FormatFloat(us, 'f', 1, 64) + " µs"
	case a < 1e6:
		return strconv.FormatFloat(us/1e3, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(us/1e6, 'f', 1, 64) + " s"
}

// duration formats d like Micros.
func duration(d time.Duration) string { return Micros(float64(d) / 1e3) }

// CheckRank returns an error unless the trace holds the MPI rank named
// rank; the error names the ranks it holds.
func CheckRank(t *tracefile.Trace, rank string) error {
	var nums []int
	var other []string
	for _, r := range t.Ranks {
		if r.Rank == rank {
			return nil
		}
		if n, err := strconv.Atoi(r.Rank); err == nil {
			nums = append(nums, n)
		} else {
			other = append(other, r.Rank)
		}
	}
	if len(t.Ranks) == 0 {
		return fmt.Errorf("rank %s is not in this trace: it holds no rank", rank)
	}
	valid := ranks.Format(nums)
	if len(other) > 0 {
		valid = strings.Join(append([]string{valid}, other...), ",")
	}
	return fmt.Errorf("rank %s is not in this trace: give a rank in %s", rank, strings.TrimPrefix(valid, ","))
}

// rankGroup is ranks whose threads have identical structures at low detail.
type rankGroup struct {
	ranks   []int // indexes into Trace.Ranks, in rank order
	streams []int // the first rank's streams, indexes into Analysis.Streams
}

// rankLabel names a set of ranks: "rank 0", "ranks 1-3", "ranks 0,2".
func rankLabel(t *tracefile.Trace, idx []int) string {
	var nums []int
	var other []string
	for _, i := range idx {
		if n, err := strconv.Atoi(t.Ranks[i].Rank); err == nil {
			nums = append(nums, n)
		} else {
			other = append(other, fmt.Sprintf("%s (pid %d)", t.Ranks[i].Rank, t.Ranks[i].PID))
		}
	}
	list := ranks.Format(nums)
	if len(other) > 0 {
		list = strings.TrimPrefix(list+","+strings.Join(other, ","), ",")
	}
	if len(idx) == 1 {
		return "rank " + list
	}
	return "ranks " + list
}

// groups groups the ranks that made calls by their structure: every
// thread's low-detail structure, in thread order. Groups come in the order
// of their first rank.
func (a *Analysis) groups() []rankGroup {
	byRank := map[int][]int{}
	var order []int
	for i, s := range a.Streams {
		if _, ok := byRank[s.Rank]; !ok {
			order = append(order, s.Rank)
		}
		byRank[s.Rank] = append(byRank[s.Rank], i)
	}
	index := map[string]int{}
	var out []rankGroup
	for _, r := range order {
		var key strings.Builder
		for _, si := range byRank[r] {
			key.WriteString(a.Structure(a.Streams[si], Low))
			key.WriteByte('\n')
		}
		g, ok := index[key.String()]
		if !ok {
			g = len(out)
			index[key.String()] = g
			out = append(out, rankGroup{streams: byRank[r]})
		}
		out[g].ranks = append(out[g].ranks, r)
	}
	return out
}

// Show prints the trace: header, call sites, and each distinct structure
// once with the ranks that share it, then how the ranks ended; with
// opt.PerRank or opt.Rank, each rank in detail instead.
func Show(w io.Writer, t *tracefile.Trace, opt Options) error {
	a := Analyze(t)
	p := &printer{w: w}
	p.header(a, opt)
	if len(t.Events) == 0 && len(t.Ranks) == 0 {
		if opt.Damage != nil {
			p.printf("no MPI call could be read before the damage\n")
		} else {
			p.printf("no MPI call was recorded: no traced process called the MPI library mpiprobe attached to (%s)\n",
				"was the program started under mpiprobe trace, and is it linked against Open MPI or MPICH?")
		}
		return p.err
	}
	p.sites(a, opt.Detail)
	if opt.PerRank || opt.Rank != "" {
		p.ranks(a, opt)
	} else {
		p.groups(a, opt.Detail)
		p.ends(a)
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

func (p *printer) header(a *Analysis, opt Options) {
	t := a.Trace
	calls := strconv.Itoa(len(t.Events))
	if opt.Damage != nil && opt.Damage.Written >= 0 {
		calls += " of " + strconv.Itoa(opt.Damage.Written)
	}
	p.printf("trace of %s on %s, started %s: %d ranks, %s MPI calls\n",
		text.Line(strings.Join(t.Header.Command, " ")), text.Line(t.Header.Host), t.Header.Start.Format("2006-01-02 15:04:05"),
		len(t.Ranks), calls)
}

// siteInfo gathers what a call site was seen doing.
type siteInfo struct {
	calls []string
	n     int
	peers []int32
	roots []int32
	sizes []string
}

// siteInfos gathers every site's calls and, at high detail, arguments.
func siteInfos(t *tracefile.Trace, args bool) []siteInfo {
	info := make([]siteInfo, len(t.Sites))
	add := func(list []int32, v int32) []int32 {
		if v == tracefile.NoValue || slices.Contains(list, v) || len(list) > 8 {
			return list
		}
		return append(list, v)
	}
	for _, e := range t.Events {
		in := &info[e.Site]
		in.n++
		if c := t.Calls[e.Call]; !slices.Contains(in.calls, c) {
			in.calls = append(in.calls, c)
		}
		if args {
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
	return info
}

// siteOrder returns the site indexes in display order.
func (a *Analysis) siteOrder() []int {
	var order []int
	for i, n := range a.SiteNum {
		if n >= 0 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(x, y int) int { return cmp.Compare(a.SiteNum[x], a.SiteNum[y]) })
	return order
}

func (p *printer) sites(a *Analysis, d Detail) {
	t := a.Trace
	info := siteInfos(t, d == High)
	order := a.siteOrder()
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
		in := info[i]
		short := make([]string, len(in.calls))
		for k, c := range in.calls {
			short[k] = shortCall(c)
		}
		p.printf("  %3d  %-20s %s", a.SiteNum[i], strings.Join(short, ","), text.Line(where))
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

// groups prints each distinct structure once, with the ranks sharing it.
// At high detail the times are those of the group's first rank.
func (p *printer) groups(a *Analysis, d Detail) {
	t := a.Trace
	gs := a.groups()
	for _, g := range gs {
		label := rankLabel(t, g.ranks)
		switch {
		case len(gs) == 1 && len(g.ranks) > 1:
			label += ", all with the same structure (SPMD)"
		case d == High && len(g.ranks) > 1:
			label += fmt.Sprintf(", times of %s", rankLabel(t, g.ranks[:1]))
		}
		p.printf("%s:\n", label)
		for k, si := range g.streams {
			s := a.Streams[si]
			if len(g.streams) > 1 {
				p.printf("  thread %d of %d:\n", k+1, len(g.streams))
			}
			p.printf("  %s\n", a.Structure(s, d))
		}
	}
}

// ends prints how the ranks ended, the calls they lost and the ranks that
// made no call, each kind on one line.
func (p *printer) ends(a *Analysis) {
	t := a.Trace
	called := map[int]bool{}
	for _, s := range a.Streams {
		called[s.Rank] = true
	}
	order := rankOrder(t)
	idx := make([]int, len(t.Ranks))
	for i, pos := range order {
		idx[pos] = i
	}
	byEnd := map[string][]int{}
	var endOrder []string
	lost := map[int]uint64{}
	for _, e := range t.Ends {
		lost[e.Rank] += e.Lost
		if e.End == "" {
			continue
		}
		if _, ok := byEnd[e.End]; !ok {
			endOrder = append(endOrder, e.End)
		}
		byEnd[e.End] = append(byEnd[e.End], e.Rank)
	}
	if len(endOrder) > 0 {
		slices.SortFunc(endOrder, func(x, y string) int { return cmp.Compare(order[byEnd[x][0]], order[byEnd[y][0]]) })
		parts := make([]string, len(endOrder))
		for i, e := range endOrder {
			parts[i] = text.Line(e) + " (" + rankLabel(t, sortedByRank(byEnd[e], order)) + ")"
		}
		p.printf("ended: %s\n", strings.Join(parts, "; "))
	}
	var lostParts []string
	var silent []int
	for _, i := range idx {
		if lost[i] > 0 {
			lostParts = append(lostParts, fmt.Sprintf("%s LOST %d calls", rankLabel(t, []int{i}), lost[i]))
		}
		if !called[i] {
			silent = append(silent, i)
		}
	}
	if len(lostParts) > 0 {
		p.printf("%s (ring buffer full; the structures miss them)\n", strings.Join(lostParts, ", "))
	}
	if len(silent) > 0 {
		p.printf("no MPI call recorded: %s\n", rankLabel(t, silent))
	}
}

// sortedByRank sorts rank indexes by rank order.
func sortedByRank(idx []int, order []int) []int {
	idx = slices.Clone(idx)
	slices.SortFunc(idx, func(x, y int) int { return cmp.Compare(order[x], order[y]) })
	return idx
}

// ranks prints each rank in detail (only opt.Rank if set): its process,
// how it ended, and every thread's structure.
func (p *printer) ranks(a *Analysis, opt Options) {
	t := a.Trace
	ends := map[int]tracefile.RankEnd{}
	for _, e := range t.Ends {
		ends[e.Rank] = e
	}
	threads := map[int]int{}
	for _, s := range a.Streams {
		threads[s.Rank]++
	}
	head := func(i int, what string) {
		r := t.Ranks[i]
		end := ends[i]
		p.printf("rank %s (pid %d, host %s, job %s): %s", text.Line(r.Rank), r.PID, text.Line(r.Host), text.Line(r.Job), what)
		if end.End != "" {
			p.printf(", %s", text.Line(end.End))
		}
		if end.Lost > 0 {
			p.printf(", LOST %d calls (ring buffer full; the structure misses them)", end.Lost)
		}
		p.printf("\n")
	}
	last := -1
	for _, s := range a.Streams {
		if opt.Rank != "" && t.Ranks[s.Rank].Rank != opt.Rank {
			continue
		}
		if s.Rank != last {
			last = s.Rank
			head(s.Rank, text.Line(path.Base(t.Ranks[s.Rank].Exe)))
		}
		if threads[s.Rank] > 1 {
			p.printf("  thread %d:\n", s.TID)
		}
		p.printf("  %s\n", a.Structure(s, opt.Detail))
		if opt.Detail == High {
			p.printf("  %d calls; %s in MPI, %s computing\n", s.Calls, duration(s.MPI), duration(s.Compute))
		}
	}
	// Ranks that made no call at all (they exited or lost every call).
	for i, r := range t.Ranks {
		if threads[i] > 0 || (opt.Rank != "" && r.Rank != opt.Rank) {
			continue
		}
		head(i, "no MPI call recorded")
	}
}
