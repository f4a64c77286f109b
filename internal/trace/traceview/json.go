package traceview

import (
	"io"
	"strconv"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/text"
	"github.com/mpiprobe/mpiprobe/internal/trace/loops"
	"github.com/mpiprobe/mpiprobe/internal/trace/tracefile"
)

// SchemaVersion is the "schema_version" of ShowJSON's output, the one of
// every mpiprobe --json document (report.SchemaVersion, docs/json.md): it
// changes only when a key is removed, renamed or changes meaning; new keys
// may appear.
const SchemaVersion = 1

// Kind is the "kind" of ShowJSON's output.
const Kind = "trace_show"

// The JSON document of ShowJSON, in the style of docs/json.md: keys are
// snake_case, counts integers, durations "*_seconds" numbers.
type jsonShow struct {
	SchemaVersion int            `json:"schema_version"`
	Kind          string         `json:"kind"`
	Command       []string       `json:"command"`
	Host          string         `json:"host"`
	Start         time.Time      `json:"start"`
	FormatVersion int            `json:"format_version"`
	Complete      bool           `json:"complete"`
	Damage        *jsonDamage    `json:"damage"`
	Calls         int            `json:"call_count"`
	CallSites     []jsonSite     `json:"call_sites"`
	Structures    []jsonGroup    `json:"structures"`
	Ranks         []jsonRank     `json:"ranks"`
	Detail        string         `json:"detail"`
	RankDetail    []jsonRankFull `json:"rank_detail,omitempty"`
}

type jsonDamage struct {
	CallsRead    int         `json:"calls_read"`
	CallsWritten *int        `json:"calls_written"` // null when the closing record was not read
	EventChunks  int         `json:"event_chunks_read"`
	FileBytes    int64       `json:"file_bytes"`
	Unreadable   []jsonRange `json:"unreadable"`
	Unclosed     bool        `json:"unclosed"`
	Message      string      `json:"message"`
}

type jsonRange struct {
	Start int64  `json:"start_byte"`
	End   int64  `json:"end_byte"`
	Chunk int    `json:"chunk"`
	Cause string `json:"cause"`
}

type jsonSite struct {
	Site           int      `json:"site"`
	Calls          []string `json:"calls"`
	Count          int      `json:"count"`
	Object         string   `json:"object"`
	Offset         uint64   `json:"offset"`
	Function       string   `json:"function,omitempty"`
	FunctionOffset uint64   `json:"function_offset"`
	File           string   `json:"file,omitempty"`
	Line           int      `json:"line,omitempty"`
	Peers          []int32  `json:"peers,omitempty"`
	Roots          []int32  `json:"roots,omitempty"`
}

// jsonGroup is one distinct structure and the ranks that share it.
type jsonGroup struct {
	Ranks     []int        `json:"ranks"` // MPI rank numbers; ranks of unknown number only in pids
	PIDs      []int        `json:"pids"`
	RanksText string       `json:"ranks_text"`
	Threads   []jsonThread `json:"threads"`
}

type jsonThread struct {
	Text string     `json:"text"`
	Tree []jsonNode `json:"tree"`
}

// jsonNode is a call, a compute burst (high detail only) or a loop.
type jsonNode struct {
	Call         string     `json:"call,omitempty"`
	Compute      bool       `json:"compute,omitempty"`
	Site         *int       `json:"site,omitempty"`
	Iterations   int        `json:"iterations,omitempty"`
	Body         []jsonNode `json:"body,omitempty"`
	Executions   int        `json:"executions"`
	TotalSeconds *float64   `json:"total_seconds,omitempty"`
}

type jsonRank struct {
	Rank      *int    `json:"rank"` // null when unknown
	PID       int     `json:"pid"`
	Host      string  `json:"host"`
	Job       string  `json:"job"`
	Exe       string  `json:"exe"`
	End       string  `json:"end"`
	Lost      uint64  `json:"lost_call_count"`
	Calls     int     `json:"call_count"`
	Threads   int     `json:"thread_count"`
	MPI       float64 `json:"mpi_seconds"`
	Compute   float64 `json:"compute_seconds"`
	Structure *int    `json:"structure"` // index into structures, null if the rank made no call
}

// jsonRankFull is one rank's threads with times, for --rank and --per-rank.
type jsonRankFull struct {
	Rank    *int             `json:"rank"`
	PID     int              `json:"pid"`
	Threads []jsonThreadFull `json:"threads"`
}

type jsonThreadFull struct {
	TID     int32      `json:"tid"`
	Calls   int        `json:"call_count"`
	MPI     float64    `json:"mpi_seconds"`
	Compute float64    `json:"compute_seconds"`
	Text    string     `json:"text"`
	Tree    []jsonNode `json:"tree"`
}

// ShowJSON writes what Show prints as one JSON document: the call sites,
// each distinct structure as a tree with the ranks that share it, every
// rank's process, end and totals, and with opt.Rank or opt.PerRank each
// rank's threads with times at opt.Detail.
func ShowJSON(w io.Writer, t *tracefile.Trace, opt Options) error {
	a := Analyze(t)
	doc := jsonShow{
		SchemaVersion: SchemaVersion,
		Kind:          Kind,
		Command:       nonNil(t.Header.Command),
		Host:          t.Header.Host,
		Start:         t.Header.Start,
		FormatVersion: t.Version,
		Complete:      t.Complete,
		Calls:         len(t.Events),
		CallSites:     []jsonSite{},
		Structures:    []jsonGroup{},
		Ranks:         []jsonRank{},
		Detail:        map[Detail]string{Low: "low", High: "high"}[opt.Detail],
	}
	if d := opt.Damage; d != nil {
		jd := &jsonDamage{CallsRead: d.Events, EventChunks: d.Chunks, FileBytes: d.Size, Unclosed: d.Unclosed,
			Unreadable: []jsonRange{}, Message: d.Error()}
		if d.Written >= 0 {
			jd.CallsWritten = &d.Written
		}
		for _, r := range d.Damage {
			jd.Unreadable = append(jd.Unreadable, jsonRange{r.Start, r.End, r.Chunk, r.Cause})
		}
		doc.Damage = jd
	}
	info := siteInfos(t, true)
	for _, i := range a.siteOrder() {
		s, in := t.Sites[i], info[i]
		doc.CallSites = append(doc.CallSites, jsonSite{Site: a.SiteNum[i], Calls: in.calls, Count: in.n,
			Object: s.Object, Offset: s.Offset, Function: s.Function, FunctionOffset: s.FuncOffset, File: s.File, Line: s.Line,
			Peers: in.peers, Roots: in.roots})
	}
	structOf := map[int]int{}
	for gi, g := range a.groups() {
		jg := jsonGroup{RanksText: rankLabel(t, g.ranks), Ranks: []int{}}
		for _, r := range g.ranks {
			if n := rankNumber(t.Ranks[r]); n != nil {
				jg.Ranks = append(jg.Ranks, *n)
			}
			jg.PIDs = append(jg.PIDs, t.Ranks[r].PID)
			structOf[r] = gi
		}
		for _, si := range g.streams {
			jg.Threads = append(jg.Threads, jsonThread{Text: a.Structure(a.Streams[si], Low), Tree: a.tree(a.Streams[si].Nodes, Low)})
		}
		doc.Structures = append(doc.Structures, jg)
	}
	ends := map[int]tracefile.RankEnd{}
	for _, e := range t.Ends {
		ends[e.Rank] = e
	}
	// Indices, not pointers: a pointer into doc.Ranks or doc.RankDetail
	// would go stale when append grows the slice.
	perRank := map[int]int{}
	order := rankOrder(t)
	idx := make([]int, len(t.Ranks))
	for i, pos := range order {
		idx[pos] = i
	}
	for _, i := range idx {
		r := t.Ranks[i]
		var st *int
		if gi, ok := structOf[i]; ok {
			st = &gi
		}
		doc.Ranks = append(doc.Ranks, jsonRank{Rank: rankNumber(r), PID: r.PID, Host: r.Host, Job: r.Job, Exe: r.Exe,
			End: ends[i].End, Lost: ends[i].Lost, Structure: st})
		perRank[i] = len(doc.Ranks) - 1
	}
	full := map[int]int{}
	for _, s := range a.Streams {
		jr := &doc.Ranks[perRank[s.Rank]]
		jr.Calls += s.Calls
		jr.Threads++
		jr.MPI += s.MPI.Seconds()
		jr.Compute += s.Compute.Seconds()
		r := t.Ranks[s.Rank]
		if !opt.PerRank && (opt.Rank == "" || r.Rank != opt.Rank) {
			continue
		}
		fi, ok := full[s.Rank]
		if !ok {
			doc.RankDetail = append(doc.RankDetail, jsonRankFull{Rank: rankNumber(r), PID: r.PID})
			fi = len(doc.RankDetail) - 1
			full[s.Rank] = fi
		}
		f := &doc.RankDetail[fi]
		f.Threads = append(f.Threads, jsonThreadFull{TID: s.TID, Calls: s.Calls, MPI: s.MPI.Seconds(), Compute: s.Compute.Seconds(),
			Text: a.Structure(s, opt.Detail), Tree: a.tree(s.Nodes, opt.Detail)})
	}
	return text.EncodeJSON(w, doc)
}

// tree converts compressed nodes for JSON; at low detail without compute
// bursts or times.
func (a *Analysis) tree(nodes []*loops.Node, d Detail) []jsonNode {
	out := []jsonNode{}
	for _, nd := range nodes {
		var jn jsonNode
		if nd.Sym >= 0 {
			if d == Low && a.IsCompute(nd.Sym) {
				continue
			}
			s := a.syms[nd.Sym]
			site := a.SiteNum[s.site]
			jn.Site = &site
			if s.cpu {
				jn.Compute = true
			} else {
				jn.Call = a.Trace.Calls[s.call]
			}
		} else {
			jn.Iterations = nd.N
			jn.Body = a.tree(nd.Body, d)
			if len(jn.Body) == 0 {
				continue
			}
		}
		jn.Executions = nd.Execs
		if d == High {
			sec := nd.Total / 1e6 // weights are µs
			jn.TotalSeconds = &sec
		}
		out = append(out, jn)
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// rankNumber returns the rank's number, or nil if it is not known.
func rankNumber(r tracefile.Rank) *int {
	n, err := strconv.Atoi(r.Rank)
	if err != nil {
		return nil
	}
	return &n
}
