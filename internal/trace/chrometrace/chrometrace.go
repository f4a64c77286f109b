package chrometrace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strconv"

	"github.com/mpiprobe/mpiprobe/internal/trace/tracefile"
)

// Write writes t to w as a Trace Event Format JSON object.
//
// A rank is the process pid = its MPI rank number, named "rank N (pid P,
// host H)"; a rank whose number is unknown, or repeats that of another rank
// (two jobs in one trace), gets a pid of its own above every rank number. A
// thread is the track tid = its thread id. Every call is an "X" event: name
// the MPI call, ts and dur in microseconds (to the nanosecond) since the
// start of the trace, and args holding the call site ("site" as file:line
// when known, "function" and "object") and the recorded arguments (peer,
// root, count, elem_size, ret) that apply. A call whose exit was recorded
// before its entry gets dur 0.
func Write(w io.Writer, t *tracefile.Trace) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	e := &encoder{w: bw}
	e.str(`{"displayTimeUnit":"ns","otherData":{"generator":"mpiprobe trace export","host":`)
	e.json(t.Header.Host)
	e.str(`,"command":`)
	e.json(t.Header.Command)
	e.str(`,"start":`)
	e.json(t.Header.Start)
	e.str("},\n\"traceEvents\":[")

	pids := assignPIDs(t)
	ends := map[int]tracefile.RankEnd{}
	for _, x := range t.Ends {
		ends[x.Rank] = x
	}
	for i, r := range t.Ranks {
		name := fmt.Sprintf("rank %s (pid %d, host %s)", r.Rank, r.PID, r.Host)
		e.meta("process_name", pids[i], nil, map[string]any{"name": name})
		e.meta("process_sort_index", pids[i], nil, map[string]any{"sort_index": pids[i]})
		labels := map[string]any{"name": fmt.Sprintf("job %s, %s", r.Job, path.Base(r.Exe))}
		if end := ends[i]; end.End != "" || end.Lost > 0 {
			labels["name"] = fmt.Sprintf("job %s, %s, %s, %d calls lost", r.Job, path.Base(r.Exe), end.End, end.Lost)
		}
		e.meta("process_labels", pids[i], nil, map[string]any{"labels": labels["name"]})
	}

	names := make([][]byte, len(t.Calls))
	for i, c := range t.Calls {
		names[i] = e.marshal(c)
	}
	sites := make([][]byte, len(t.Sites))
	for i, s := range t.Sites {
		sites[i] = siteArgs(e, s)
	}
	type track struct {
		pid int
		tid int32
	}
	seen := map[track]bool{}
	for _, ev := range t.Events {
		pid := pids[ev.Rank]
		if k := (track{pid, ev.TID}); !seen[k] {
			seen[k] = true
			tid := ev.TID
			e.meta("thread_name", pid, &tid, map[string]any{"name": "thread " + strconv.Itoa(int(ev.TID))})
		}
		e.sep()
		b := e.buf[:0]
		b = append(b, `{"ph":"X","cat":"mpi","name":`...)
		b = append(b, names[ev.Call]...)
		b = append(b, `,"pid":`...)
		b = strconv.AppendInt(b, int64(pid), 10)
		b = append(b, `,"tid":`...)
		b = strconv.AppendInt(b, int64(ev.TID), 10)
		b = append(b, `,"ts":`...)
		b = appendMicros(b, ev.Enter)
		b = append(b, `,"dur":`...)
		b = appendMicros(b, max(ev.Exit-ev.Enter, 0))
		b = append(b, `,"args":{`...)
		b = append(b, sites[ev.Site]...)
		b = appendArg(b, "peer", int64(ev.Peer), ev.Peer != tracefile.NoValue)
		b = appendArg(b, "root", int64(ev.Root), ev.Root != tracefile.NoValue)
		b = appendArg(b, "count", ev.Count, ev.Count != tracefile.NoValue)
		b = appendArg(b, "elem_size", int64(ev.ElemSize), ev.ElemSize != 0)
		b = appendArg(b, "ret", int64(ev.Ret), true)
		b = append(b, "}}"...)
		e.buf = b
		e.write(b)
	}
	e.str("\n]}\n")
	if e.err != nil {
		return e.err
	}
	return bw.Flush()
}

// assignPIDs gives each rank its process id in the timeline: its rank
// number if that is known and unique, else a number above all of them.
func assignPIDs(t *tracefile.Trace) []int {
	pids := make([]int, len(t.Ranks))
	count := map[int]int{}
	top := -1
	for _, r := range t.Ranks {
		if n, err := strconv.Atoi(r.Rank); err == nil && n >= 0 {
			count[n]++
			top = max(top, n)
		}
	}
	next := top + 1
	for i, r := range t.Ranks {
		if n, err := strconv.Atoi(r.Rank); err == nil && n >= 0 && count[n] == 1 {
			pids[i] = n
			continue
		}
		pids[i] = next
		next++
	}
	return pids
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
	return b
}

func (e *encoder) json(v any) { e.write(e.marshal(v)) }

// meta writes a metadata ("M") event.
func (e *encoder) meta(name string, pid int, tid *int32, args map[string]any) {
	ev := map[string]any{"ph": "M", "name": name, "pid": pid, "args": args}
	if tid != nil {
		ev["tid"] = *tid
	} else {
		ev["tid"] = 0
	}
	e.sep()
	e.json(ev)
}
