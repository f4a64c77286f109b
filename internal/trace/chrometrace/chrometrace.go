package chrometrace

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"

	"github.com/mpiprobe/mpiprobe/internal/text"
	"github.com/mpiprobe/mpiprobe/internal/trace/tracefile"
)

// Write writes t to w as a Trace Event Format JSON object: NewWriter,
// WriteEvents with every event, and Close.
func Write(w io.Writer, t *tracefile.Trace) error {
	x := NewWriter(w, t.Header)
	x.WriteEvents(t, t.Events)
	return x.Close(t)
}

// Writer streams a timeline: the events go out as they are given, so that
// neither the trace nor the JSON need be in memory whole (see
// tracefile.ReadFunc).
//
// A rank is the process pid = its MPI rank number + 1 (pid 0 is the
// kernel's to Perfetto, which sets it apart), named "rank N (pid P, host
// H)" with N the rank and P its real pid, and sorted by host (the hosts in
// the order of their first rank in the trace: one trace of several nodes,
// tracefile.Merge, shows each node's ranks together) and then by rank; a rank whose
// number is unknown, or repeats that of a rank seen before (two jobs in one
// trace), gets pid 1000001 + its index in the trace. A thread is the track
// tid = its thread id. Every event has a "cat": "__metadata" for the
// metadata ("M") events, which carry ts 0 as Chrome's and Perfetto's own
// exports do, and "mpi" for the calls. Every call is an "X"
// event: name the MPI call, ts and dur in microseconds (to the nanosecond)
// since the start of the trace, and args holding the call site ("site" as
// file:line when known, "function" and "object") and the recorded arguments
// (peer, root, count, elem_size, ret) that apply. A call whose exit was
// recorded before its entry gets dur 0.
type Writer struct {
	e     *encoder
	pids  []int // by rank index, -1 until the rank's first event
	used  map[int]bool
	names [][]byte // encoded call names by index
	sites [][]byte // encoded site args by index
	seen  map[track]bool
}

type track struct {
	pid int
	tid int32
}

// NewWriter starts a timeline of the trace with header h on w.
func NewWriter(w io.Writer, h tracefile.Header) *Writer {
	e := &encoder{w: bufio.NewWriterSize(w, 1<<20)}
	e.str(`{"displayTimeUnit":"ns","otherData":{"generator":"mpiprobe trace export","host":`)
	e.json(h.Host)
	e.str(`,"command":`)
	e.json(h.Command)
	e.str(`,"start":`)
	e.json(h.Start)
	e.str("},\n\"traceEvents\":[")
	return &Writer{e: e, used: map[int]bool{}, seen: map[track]bool{}}
}

// WriteEvents writes events of t, whose calls, sites and ranks t defines.
// Errors are returned by Close.
func (x *Writer) WriteEvents(t *tracefile.Trace, events []tracefile.Event) {
	e := x.e
	for len(x.names) < len(t.Calls) {
		x.names = append(x.names, e.marshal(t.Calls[len(x.names)]))
	}
	for len(x.sites) < len(t.Sites) {
		x.sites = append(x.sites, siteArgs(e, t.Sites[len(x.sites)]))
	}
	for len(x.pids) < len(t.Ranks) {
		x.pids = append(x.pids, -1)
	}
	for _, ev := range events {
		pid := x.pid(t, ev.Rank)
		if k := (track{pid, ev.TID}); !x.seen[k] {
			x.seen[k] = true
			tid := ev.TID
			e.meta("thread_name", pid, &tid, map[string]any{"name": "thread " + strconv.Itoa(int(ev.TID))})
		}
		e.sep()
		b := e.buf[:0]
		b = append(b, `{"ph":"X","cat":"mpi","name":`...)
		b = append(b, x.names[ev.Call]...)
		b = append(b, `,"pid":`...)
		b = strconv.AppendInt(b, int64(pid), 10)
		b = append(b, `,"tid":`...)
		b = strconv.AppendInt(b, int64(ev.TID), 10)
		b = append(b, `,"ts":`...)
		b = appendMicros(b, ev.Enter)
		b = append(b, `,"dur":`...)
		b = appendMicros(b, max(ev.Exit-ev.Enter, 0))
		b = append(b, `,"args":{`...)
		b = append(b, x.sites[ev.Site]...)
		b = appendArg(b, "peer", int64(ev.Peer), ev.Peer != tracefile.NoValue)
		b = appendArg(b, "root", int64(ev.Root), ev.Root != tracefile.NoValue)
		b = appendArg(b, "count", ev.Count, ev.Count != tracefile.NoValue)
		b = appendArg(b, "elem_size", int64(ev.ElemSize), ev.ElemSize != 0)
		b = appendArg(b, "ret", int64(ev.Ret), true)
		b = append(b, "}}"...)
		e.buf = b
		e.write(b)
	}
}

// pid returns the timeline's process id of rank index i, naming the
// process at its first event.
func (x *Writer) pid(t *tracefile.Trace, i int) int {
	if x.pids[i] >= 0 {
		return x.pids[i]
	}
	r := t.Ranks[i]
	pid := 1_000_001 + i
	if n, err := strconv.Atoi(r.Rank); err == nil && n >= 0 && n < 1_000_000 && !x.used[n+1] {
		pid = n + 1
	}
	x.used[pid] = true
	x.pids[i] = pid
	x.e.meta("process_name", pid, nil, map[string]any{"name": fmt.Sprintf("rank %s (pid %d, host %s)", r.Rank, r.PID, r.Host)})
	return pid
}

// Close labels each process with its job, program and how it ended (from
// t.Ends), ends the JSON and flushes it. It returns the first error met.
func (x *Writer) Close(t *tracefile.Trace) error {
	x.sortByHost(t)
	ends := map[int]tracefile.RankEnd{}
	for _, end := range t.Ends {
		ends[end.Rank] = end
	}
	for i, pid := range x.pids {
		if pid < 0 {
			continue // no events, no process
		}
		r := t.Ranks[i]
		label := fmt.Sprintf("job %s, %s", r.Job, path.Base(r.Exe))
		if end := ends[i]; end.End != "" {
			label += ", " + end.End
		}
		if end := ends[i]; end.Lost > 0 {
			label += fmt.Sprintf(", %d calls lost", end.Lost)
		}
		x.e.meta("process_labels", pid, nil, map[string]any{"labels": label})
	}
	x.e.str("\n]}\n")
	if x.e.err != nil {
		return x.e.err
	}
	return x.e.w.Flush()
}

// sortByHost gives every process its sort index: the processes of one host
// together, hosts in the order of their first rank in t, and by pid (rank
// order) within a host.
func (x *Writer) sortByHost(t *tracefile.Trace) {
	hostOrder := map[string]int{}
	var idx []int
	for i, r := range t.Ranks {
		if _, ok := hostOrder[r.Host]; !ok {
			hostOrder[r.Host] = len(hostOrder)
		}
		if i < len(x.pids) && x.pids[i] >= 0 {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(hostOrder[t.Ranks[a].Host], hostOrder[t.Ranks[b].Host]), cmp.Compare(x.pids[a], x.pids[b]))
	})
	for pos, i := range idx {
		x.e.meta("process_sort_index", x.pids[i], nil, map[string]any{"sort_index": pos})
	}
}

// siteArgs is the encoded args of a call site, without the braces.
func siteArgs(e *encoder, s tracefile.Site) []byte {
	site := fmt.Sprintf("%s+%#x", path.Base(s.Object), s.Offset)
	if s.File != "" && s.Line > 0 {
		site = fmt.Sprintf("%s:%d", s.File, s.Line)
	}
	b := append([]byte(`"site":`), e.marshal(site)...)
	if s.Function != "" {
		b = append(b, `,"function":`...)
		b = append(b, e.marshal(fmt.Sprintf("%s+%#x", s.Function, s.FuncOffset))...)
	}
	b = append(b, `,"object":`...)
	return append(b, e.marshal(s.Object)...)
}

func appendArg(b []byte, name string, v int64, ok bool) []byte {
	if !ok {
		return b
	}
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	return strconv.AppendInt(b, v, 10)
}

// appendMicros appends ns nanoseconds as microseconds with up to three
// decimals.
func appendMicros(b []byte, ns int64) []byte {
	u := uint64(ns)
	if ns < 0 {
		b = append(b, '-')
		u = -u
	}
	b = strconv.AppendUint(b, u/1000, 10)
	if frac := u % 1000; frac != 0 {
		b = append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	}
	return b
}

// encoder writes the events array, remembering the first error.
type encoder struct {
	w     *bufio.Writer
	err   error
	first bool // an event was written: the next needs a comma
	buf   []byte
}

func (e *encoder) write(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *encoder) str(s string) {
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}

// sep writes what goes before an event of the array.
func (e *encoder) sep() {
	if e.first {
		e.str(",\n")
	} else {
		e.str("\n")
	}
	e.first = true
}

func (e *encoder) marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil && e.err == nil {
		e.err = fmt.Errorf("encode %v: %w", v, err)
	}
	return text.EscapeJSON(b) // names from the program, shown by viewers
}

func (e *encoder) json(v any) { e.write(e.marshal(v)) }

// meta writes a metadata ("M") event.
func (e *encoder) meta(name string, pid int, tid *int32, args map[string]any) {
	ev := map[string]any{"ph": "M", "cat": "__metadata", "name": name, "pid": pid, "ts": 0, "args": args}
	if tid != nil {
		ev["tid"] = *tid
	} else {
		ev["tid"] = 0
	}
	e.sep()
	e.json(ev)
}
