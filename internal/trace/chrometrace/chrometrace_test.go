package chrometrace

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/trace/chrometrace/chromecheck"
	"github.com/mpiprobe/mpiprobe/internal/trace/tracefile"
)

func testTrace() *tracefile.Trace {
	t := &tracefile.Trace{
		Header: tracefile.Header{Host: "n1", Start: time.Unix(1_700_000_000, 0), Command: []string{"mpirun", "./app \"x\""}},
		Calls:  []string{"MPI_Send", "MPI_Bcast"},
		Sites: []tracefile.Site{
			{Object: "/bin/app", Offset: 0x1234, Function: "main", FuncOffset: 0x34, File: "/src/app.c", Line: 12},
			{Object: "/bin/app", Offset: 0x2000},
		},
		Ranks: []tracefile.Rank{
			{PID: 100, Host: "n1", Job: "j", Rank: "1", Exe: "/bin/app"},
			{PID: 101, Host: "n1", Job: "j", Rank: "0", Exe: "/bin/app"},
			{PID: 102, Host: "n2", Job: "k", Rank: "?", Exe: "/bin/app"},
		},
		Ends:     []tracefile.RankEnd{{Rank: 0, End: "exit 0", Lost: 2}},
		Complete: true,
	}
	nv := int32(tracefile.NoValue)
	t.Events = []tracefile.Event{
		{Rank: 0, TID: 100, Call: 0, Site: 0, Enter: 1500, Exit: 2750, Peer: 1, Root: nv, Count: 4, ElemSize: 8},
		{Rank: 0, TID: 100, Call: 1, Site: 1, Enter: 3000, Exit: 3000, Peer: nv, Root: 0, Count: tracefile.NoValue},
		{Rank: 1, TID: 101, Call: 1, Site: 1, Enter: 2000, Exit: 5000, Peer: nv, Root: 0, Count: 1, ElemSize: 4, Ret: 13},
		{Rank: 2, TID: 102, Call: 0, Site: 0, Enter: 10, Exit: 5, Peer: 0, Root: nv, Count: 1}, // exit before entry
		{Rank: 2, TID: 103, Call: 0, Site: 0, Enter: math.MaxInt64 - 5, Exit: math.MaxInt64, Peer: 0, Root: nv, Count: 1},
	}
	return t
}

func TestWrite(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, testTrace()); err != nil {
		t.Fatal(err)
	}
	st, err := chromecheck.Check(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if st.Complete != 5 || st.Processes != 3 || st.Tracks != 4 || st.Names["MPI_Send"] != 3 {
		t.Errorf("stats %+v", st)
	}
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	dec := json.NewDecoder(&buf)
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range doc.TraceEvents {
		b, _ := json.Marshal(ev)
		got = append(got, string(b))
	}
	all := strings.Join(got, "\n")
	for _, w := range []string{
		`{"args":{"name":"rank 1 (pid 100, host n1)"},"cat":"__metadata","name":"process_name","ph":"M","pid":2,"tid":0,"ts":0}`,
		`{"args":{"sort_index":1},"cat":"__metadata","name":"process_sort_index","ph":"M","pid":2,"tid":0,"ts":0}`,
		`{"args":{"name":"rank 0 (pid 101, host n1)"},"cat":"__metadata","name":"process_name","ph":"M","pid":1,"tid":0,"ts":0}`,
		`{"args":{"sort_index":0},"cat":"__metadata","name":"process_sort_index","ph":"M","pid":1,"tid":0,"ts":0}`,
		`{"args":{"name":"rank ? (pid 102, host n2)"},"cat":"__metadata","name":"process_name","ph":"M","pid":1000003,"tid":0,"ts":0}`,
		`{"args":{"count":4,"elem_size":8,"function":"main+0x34","object":"/bin/app","peer":1,"ret":0,"site":"/src/app.c:12"},"cat":"mpi","dur":1.250,"name":"MPI_Send","ph":"X","pid":2,"tid":100,"ts":1.500}`,
		`{"args":{"object":"/bin/app","ret":0,"root":0,"site":"app+0x2000"},"cat":"mpi","dur":0,"name":"MPI_Bcast","ph":"X","pid":2,"tid":100,"ts":3}`,
		`"dur":0,"name":"MPI_Send","ph":"X","pid":1000003,"tid":102,"ts":0.010}`,
		`"ts":9223372036854775.802}`,
		`{"args":{"name":"thread 103"},"cat":"__metadata","name":"thread_name","ph":"M","pid":1000003,"tid":103,"ts":0}`,
		`{"args":{"labels":"job j, app, exit 0, 2 calls lost"},"cat":"__metadata","name":"process_labels","ph":"M","pid":2,"tid":0,"ts":0}`,
	} {
		if !strings.Contains(all, w) {
			t.Errorf("no %s in\n%s", w, all)
		}
	}
}

func TestAppendMicros(t *testing.T) {
	for ns, want := range map[int64]string{0: "0", 1: "0.001", 999: "0.999", 1000: "1", 1234567: "1234.567", -1500: "-1.500",
		math.MinInt64: "-9223372036854775.808", math.MaxInt64: "9223372036854775.807"} {
		if got := string(appendMicros(nil, ns)); got != want {
			t.Errorf("appendMicros(%d) = %s, want %s", ns, got, want)
		}
	}
}

// TestStreamed: events given a few at a time make the same timeline.
func TestStreamed(t *testing.T) {
	tr := testTrace()
	var whole, streamed bytes.Buffer
	if err := Write(&whole, tr); err != nil {
		t.Fatal(err)
	}
	x := NewWriter(&streamed, tr.Header)
	for i := range tr.Events {
		x.WriteEvents(tr, tr.Events[i:i+1])
	}
	if err := x.Close(tr); err != nil {
		t.Fatal(err)
	}
	if whole.String() != streamed.String() {
		t.Errorf("streamed:\n%s\nwhole:\n%s", streamed.String(), whole.String())
	}
}

// TestNodesTogether: the timeline of a job merged from two nodes' traces,
// ranks 0 and 2 on n1 and 1 and 3 on n2, validates, keeps pid = rank+1
// with the host in each process name, and sorts each node's ranks
// together: n1's 0 and 2, then n2's 1 and 3.
func TestNodesTogether(t *testing.T) {
	node := func(host string, ranks ...string) tracefile.Part {
		tr := &tracefile.Trace{Header: tracefile.Header{Host: host, Start: time.Unix(1_700_000_000, 0)}, Calls: []string{"MPI_Barrier"},
			Sites: []tracefile.Site{{Object: "/bin/app", Offset: 0x10}}, Complete: true}
		for i, r := range ranks {
			tr.Ranks = append(tr.Ranks, tracefile.Rank{PID: 100 + i, Host: host, Job: "j", Rank: r, Exe: "/bin/app"})
			tr.Events = append(tr.Events, tracefile.Event{Rank: i, TID: int32(100 + i), Enter: 10, Exit: 20,
				Peer: tracefile.NoValue, Root: tracefile.NoValue, Count: tracefile.NoValue})
		}
		return tracefile.Part{Name: host + ".trace", Trace: tr}
	}
	m, err := tracefile.Merge([]tracefile.Part{node("n1", "0", "2"), node("n2", "1", "3")})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, m); err != nil {
		t.Fatal(err)
	}
	st, err := chromecheck.Check(bytes.NewReader(buf.Bytes()))
	if err != nil || st.Processes != 4 {
		t.Fatalf("%v %+v\n%s", err, st, buf.String())
	}
	out := buf.String()
	for _, w := range []string{
		`{"args":{"name":"rank 1 (pid 100, host n2)"},"cat":"__metadata","name":"process_name","ph":"M","pid":2,`,
		`{"args":{"name":"rank 2 (pid 101, host n1)"},"cat":"__metadata","name":"process_name","ph":"M","pid":3,`,
		`{"args":{"sort_index":0},"cat":"__metadata","name":"process_sort_index","ph":"M","pid":1,`,
		`{"args":{"sort_index":1},"cat":"__metadata","name":"process_sort_index","ph":"M","pid":3,`,
		`{"args":{"sort_index":2},"cat":"__metadata","name":"process_sort_index","ph":"M","pid":2,`,
		`{"args":{"sort_index":3},"cat":"__metadata","name":"process_sort_index","ph":"M","pid":4,`,
	} {
		if !strings.Contains(out, w) {
			t.Errorf("no %s in\n%s", w, out)
		}
	}
}
