package tracefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// randTrace makes a random trace with n events: several ranks and threads,
// all fields including NoValue, negative and extreme values.
func randTrace(rng *rand.Rand, n int) *Trace {
	t := &Trace{
		Version: Version,
		Header: Header{
			Host:    "node" + fmt.Sprint(rng.IntN(100)),
			Start:   time.Unix(rng.Int64N(2e9), rng.Int64N(1e9)),
			Command: []string{"mpirun", "-np", "4", "./app", ""},
		},
		Complete: true,
	}
	for i := range 1 + rng.IntN(6) {
		t.Calls = append(t.Calls, fmt.Sprintf("MPI_Call%d", i))
	}
	for i := range 1 + rng.IntN(8) {
		s := Site{
			Object:     "/opt/app/bin/app",
			Offset:     rng.Uint64(),
			Function:   fmt.Sprintf("solver_%d", i),
			FuncOffset: rng.Uint64N(4096),
			File:       "solver.c",
			Line:       rng.IntN(5000) - 10,
		}
		if i%3 == 0 {
			s.Function, s.File, s.Line = "", "", 0
		}
		t.Sites = append(t.Sites, s)
	}
	for i := range 1 + rng.IntN(5) {
		t.Ranks = append(t.Ranks, Rank{PID: 1000 + i, Host: "node1", Job: "?", Rank: fmt.Sprint(i), Exe: "/opt/app/bin/app"})
	}
	pick32 := func() int32 {
		switch rng.IntN(6) {
		case 0:
			return NoValue
		case 1:
			return math.MaxInt32
		case 2:
			return -rng.Int32N(100)
		default:
			return rng.Int32N(64)
		}
	}
	tids := map[int][]int32{}
	for r := range t.Ranks {
		for range 1 + rng.IntN(3) {
			tids[r] = append(tids[r], rng.Int32N(1<<22)-1000)
		}
	}
	now := rng.Int64N(1e12) - 5e11
	for range n {
		r := rng.IntN(len(t.Ranks))
		e := Event{
			Rank:     r,
			TID:      tids[r][rng.IntN(len(tids[r]))],
			Call:     rng.IntN(len(t.Calls)),
			Site:     rng.IntN(len(t.Sites)),
			Peer:     pick32(),
			Root:     pick32(),
			ElemSize: pick32(),
			Ret:      pick32(),
		}
		switch rng.IntN(5) {
		case 0:
			e.Count = NoValue
		case 1:
			e.Count = math.MinInt64 + rng.Int64N(3)
		case 2:
			e.Count = math.MaxInt64 - rng.Int64N(3)
		default:
			e.Count = rng.Int64N(1 << 40)
		}
		now += rng.Int64N(5000)
		e.Enter = now
		e.Exit = now + rng.Int64N(100000) - 100 // sometimes before Enter
		if rng.IntN(50) == 0 {
			e.Enter, e.Exit = math.MinInt64+rng.Int64N(10), math.MaxInt64-rng.Int64N(10)
		}
		t.Events = append(t.Events, e)
	}
	for r := range t.Ranks {
		if rng.IntN(3) > 0 {
			t.Ends = append(t.Ends, RankEnd{Rank: r, Lost: rng.Uint64N(3) * rng.Uint64(), End: "exit 0"})
		}
	}
	return t
}

// encode writes t with a Writer, in random batches interleaved with the
// definitions the events need.
func encode(tb testing.TB, rng *rand.Rand, t *Trace) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, t.Header)
	if err != nil {
		tb.Fatal(err)
	}
	var nc, ns, nr int
	define := func(e Event) {
		for nc <= e.Call {
			i, err := w.AddCall(t.Calls[nc])
			if err != nil || i != nc {
				tb.Fatalf("AddCall = %d, %v; want %d", i, err, nc)
			}
			nc++
		}
		for ns <= e.Site {
			i, err := w.AddSite(t.Sites[ns])
			if err != nil || i != ns {
				tb.Fatalf("AddSite = %d, %v; want %d", i, err, ns)
			}
			ns++
		}
		for nr <= e.Rank {
			i, err := w.AddRank(t.Ranks[nr])
			if err != nil || i != nr {
				tb.Fatalf("AddRank = %d, %v; want %d", i, err, nr)
			}
			nr++
		}
	}
	ev := t.Events
	for len(ev) > 0 {
		k := min(len(ev), 1+rng.IntN(3000))
		for _, e := range ev[:k] {
			define(e)
		}
		if err := w.WriteEvents(ev[:k]); err != nil {
			tb.Fatal(err)
		}
		ev = ev[k:]
	}
	define(Event{Call: len(t.Calls) - 1, Site: len(t.Sites) - 1, Rank: len(t.Ranks) - 1})
	if err := w.Close(t.Ends); err != nil {
		tb.Fatal(err)
	}
	*t = *byFirstUse(t)
	return buf.Bytes()
}

// byFirstUse returns t with its calls as a file holds them: only those the
// events use, numbered in the order of their first use.
func byFirstUse(t *Trace) *Trace {
	u := *t
	u.Calls = nil
	u.Events = slices.Clone(t.Events)
	num := map[int]int{}
	for i, e := range u.Events {
		n, ok := num[e.Call]
		if !ok {
			n = len(u.Calls)
			num[e.Call] = n
			u.Calls = append(u.Calls, t.Calls[e.Call])
		}
		u.Events[i].Call = n
	}
	return &u
}

// sameTrace reports how got differs from want, or "".
func sameTrace(got, want *Trace) string {
	if !got.Header.Start.Equal(want.Header.Start) {
		return fmt.Sprintf("start %v, want %v", got.Header.Start, want.Header.Start)
	}
	g, w := *got, *want
	g.Header.Start, w.Header.Start = time.Time{}, time.Time{}
	if len(g.Header.Command) == 0 && len(w.Header.Command) == 0 {
		g.Header.Command, w.Header.Command = nil, nil
	}
	for _, p := range []*Trace{&g, &w} {
		if len(p.Events) == 0 {
			p.Events = nil
		}
		if len(p.Ends) == 0 {
			p.Ends = nil
		}
	}
	if len(g.Events) != len(w.Events) {
		return fmt.Sprintf("%d events, want %d", len(g.Events), len(w.Events))
	}
	for i := range g.Events {
		if g.Events[i] != w.Events[i] {
			return fmt.Sprintf("event %d = %+v, want %+v", i, g.Events[i], w.Events[i])
		}
	}
	if !reflect.DeepEqual(g, w) {
		return fmt.Sprintf("got %+v\nwant %+v", g, w)
	}
	return ""
}

func TestRoundTrip(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		n := []int{0, 1, 7, 4095, 4096, 4097, 10000, 20000}[seed%8]
		want := randTrace(rng, n)
		data := encode(t, rng, want)
		got, err := Read(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("seed %d: Read: %v", seed, err)
		}
		if d := sameTrace(got, want); d != "" {
			t.Fatalf("seed %d: %s", seed, d)
		}
	}
}

func TestZeroEvents(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Host: "h"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	tr, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Complete || len(tr.Events) != 0 || tr.Header.Host != "h" || tr.Version != Version {
		t.Fatalf("got %+v", tr)
	}
}

// checkPrefix fails unless got holds only a prefix of what want holds.
func checkPrefix(t *testing.T, what string, got, want *Trace) {
	t.Helper()
	if len(got.Events) > len(want.Events) || len(got.Calls) > len(want.Calls) ||
		len(got.Sites) > len(want.Sites) || len(got.Ranks) > len(want.Ranks) || len(got.Ends) > len(want.Ends) {
		t.Fatalf("%s: read more than was written", what)
	}
	for i, e := range got.Events {
		if e != want.Events[i] {
			t.Fatalf("%s: event %d = %+v, want %+v", what, i, e, want.Events[i])
		}
	}
	if !reflect.DeepEqual(got.Calls, want.Calls[:len(got.Calls)]) && len(got.Calls) > 0 ||
		!reflect.DeepEqual(got.Sites, want.Sites[:len(got.Sites)]) && len(got.Sites) > 0 ||
		!reflect.DeepEqual(got.Ranks, want.Ranks[:len(got.Ranks)]) && len(got.Ranks) > 0 {
		t.Fatalf("%s: definitions are not a prefix of those written", what)
	}
	for _, e := range got.Events {
		if e.Rank >= len(got.Ranks) || e.Call >= len(got.Calls) || e.Site >= len(got.Sites) {
			t.Fatalf("%s: event %+v refers to something not read", what, e)
		}
	}
}

func TestTruncateEveryByte(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	want := randTrace(rng, 60)
	data := encode(t, rng, want)
	for n := 0; n < len(data); n++ {
		tr, err := Read(bytes.NewReader(data[:n]))
		if err == nil {
			t.Fatalf("truncated to %d of %d bytes: no error", n, len(data))
		}
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("error is not one line: %q", err)
		}
		if tr == nil {
			if int64(n) >= layout(t, data)[0].end {
				t.Fatalf("truncated to %d bytes: nil Trace (%v)", n, err)
			}
			continue
		}
		if tr.Complete {
			t.Fatalf("truncated to %d bytes: Complete", n)
		}
		checkPrefix(t, fmt.Sprintf("truncated to %d bytes", n), tr, want)
	}
}

func TestTruncateManyChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	want := randTrace(rng, 3*eventsPerChunk+100)
	data := encode(t, rng, want)
	chunks := layout(t, data)
	seen := map[int]bool{}
	for n := 0; n < len(data); n += 1 + rng.IntN(800) {
		tr, err := Read(bytes.NewReader(data[:n]))
		if err == nil || (tr != nil && tr.Complete) {
			t.Fatalf("truncated to %d bytes: err %v", n, err)
		}
		if tr != nil {
			checkPrefix(t, fmt.Sprintf("truncated to %d bytes", n), tr, want)
			if want := eventsBefore(chunks, int64(n)); len(tr.Events) != want {
				t.Fatalf("truncated to %d bytes: %d events, want the %d of the whole chunks before", n, len(tr.Events), want)
			}
			seen[len(tr.Events)] = true
		}
	}
	if len(seen) < 4 {
		t.Fatalf("saw only prefixes of %v events", seen)
	}
}

func TestBitFlips(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	want := randTrace(rng, 100)
	data := encode(t, rng, want)
	chunks := layout(t, data)
	if countType(chunks, chunkEvents) < 3 {
		t.Fatalf("%d events chunks", countType(chunks, chunkEvents))
	}
	bad := make([]byte, len(data))
	for i := range len(data) * 8 {
		copy(bad, data)
		bad[i/8] ^= 1 << (i % 8)
		tr, err := Read(bytes.NewReader(bad))
		if err == nil {
			t.Fatalf("bit %d of byte %d flipped: no error", i%8, i/8)
		}
		if tr == nil {
			continue
		}
		// Whole chunks are read or skipped: the events are those of the
		// chunks read, all of one chunk or none.
		what := fmt.Sprintf("bit %d of byte %d flipped", i%8, i/8)
		var evs []Event
		var de *DamageError
		errors.As(err, &de)
		for k, c := range chunks {
			if c.typ != chunkEvents || (de != nil && slices.ContainsFunc(de.Damage, func(d Damage) bool { return d.Chunk <= k && c.end <= d.End })) {
				continue
			}
			evs = append(evs, want.Events[c.first:c.first+c.events]...)
		}
		if !slices.Equal(tr.Events, evs) {
			t.Fatalf("%s: read %d events, not those of the %d chunks outside the damage (%v)", what, len(tr.Events), len(evs), err)
		}
	}
}

func TestNoClosingRecord(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	want := randTrace(rng, eventsPerChunk+10)
	var buf bytes.Buffer
	w, err := NewWriter(&buf, want.Header)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range want.Calls {
		w.AddCall(c)
	}
	for _, s := range want.Sites {
		w.AddSite(s)
	}
	for _, r := range want.Ranks {
		w.AddRank(r)
	}
	if err := w.WriteEvents(want.Events); err != nil {
		t.Fatal(err)
	}
	want = byFirstUse(want)
	size := buf.Len()
	chunks := layout(t, buf.Bytes())
	tr, err := Read(&buf) // the writer is never closed
	n := eventsBefore(chunks, int64(size))
	wantErr := fmt.Sprintf("incomplete trace: read %d calls in %d chunks; the file ends at byte %d without its closing record (was mpiprobe trace interrupted?)",
		n, countType(chunks, chunkEvents), size)
	if err == nil || err.Error() != wantErr {
		t.Fatalf("err = %v, want %s", err, wantErr)
	}
	if tr.Complete || len(tr.Events) != n || n < eventsPerChunk/2 {
		t.Fatalf("Complete %v, %d events", tr.Complete, len(tr.Events))
	}
	checkPrefix(t, "unclosed", tr, want)
}

func TestBadFiles(t *testing.T) {
	var good bytes.Buffer
	w, _ := NewWriter(&good, Header{})
	w.Close(nil)
	rest := string(good.Bytes()[len(magic)+1:])
	// A bit of the header's payload (its host name's length) flipped.
	hdrFlip := []byte(good.String())
	hdrFlip[len(magic)+3] ^= 1

	for _, tc := range []struct {
		name, data, err string
	}{
		{"empty", "", "trace file is empty (0 bytes): mpiprobe trace stopped before writing anything, record the trace again"},
		{"bad magic", "#!/bin/sh\necho hello world\n", "not an mpiprobe trace file (bad magic): give a file written by mpiprobe trace -o"},
		{"short text", "hi", "not an mpiprobe trace file (bad magic): give a file written by mpiprobe trace -o"},
		{"magic cut", magic[:7], "trace file too short (7 bytes): it ends inside the file signature, record the trace again"},
		{"no version", magic, "trace file too short (15 bytes): it ends before the format version, record the trace again"},
		{"20 bytes", good.String()[:20], "trace file too short (20 bytes): it ends inside its header chunk, record the trace again"},
		{"header crc", string(hdrFlip),
			"trace file header damaged at byte 16 (crc mismatch): nothing to show, record the trace again"},
		{"no header", magic + "\x01" + string(frame(chunkCall, []byte{1, 'a'})) + rest,
			"trace file header damaged at byte 16 (first chunk has type 'C', not the header): nothing to show, record the trace again"},
		{"version 2", magic + "\x02" + rest, "trace file version 2 is newer than this mpiprobe reads (1): use a newer mpiprobe"},
		{"version 300", magic + "\xac\x02" + rest, "trace file version 300 is newer than this mpiprobe reads (1): use a newer mpiprobe"},
		{"version 0", magic + "\x00" + rest, "trace file damaged at byte 15 (format version 0 does not exist): nothing to show, record the trace again"},
	} {
		tr, err := Read(strings.NewReader(tc.data))
		if err == nil || err.Error() != tc.err {
			t.Errorf("%s: err = %v, want %s", tc.name, err, tc.err)
		}
		if tr != nil {
			t.Errorf("%s: non-nil Trace", tc.name)
		}
	}

	// Only the header, no closing record.
	var hdr bytes.Buffer
	NewWriter(&hdr, Header{})
	tr, err := Read(&hdr)
	if tr == nil || err == nil || !strings.Contains(err.Error(), "without its closing record") {
		t.Errorf("header only: %v, %v", tr, err)
	}

	// Data after the closing record.
	tr, err = Read(strings.NewReader(good.String() + "junk"))
	want := fmt.Sprintf("damaged trace: read 0 of 0 calls in 0 chunks; bytes %d-%d unreadable (chunk 3: data after the closing record, ignored)", good.Len(), good.Len()+4)
	if tr == nil || !tr.Complete || err == nil || err.Error() != want {
		t.Errorf("trailing junk: %v, %v", tr, err)
	}
}

// frame builds one chunk.
func frame(typ byte, payload []byte) []byte {
	b := []byte{typ}
	b = binary.AppendUvarint(b, uint64(len(payload)))
	b = append(b, payload...)
	return binary.LittleEndian.AppendUint32(b, chunkCRC(typ, payload))
}

func TestBadChunks(t *testing.T) {
	var hdr bytes.Buffer
	NewWriter(&hdr, Header{Host: "h"})
	base := hdr.Bytes()
	call := frame(chunkCall, appendString(nil, "MPI_Send"))
	rank := frame(chunkRank, []byte{2, 0, 0, 0, 0})
	site := frame(chunkSite, []byte{0, 0, 0, 0, 0, 0})
	event := func(e ...byte) []byte { return frame(chunkEvents, append([]byte{1}, e...)) }
	for _, tc := range []struct {
		name   string
		chunks [][]byte
		cause  string
	}{
		{"unknown type", [][]byte{frame('Q', nil)}, "unknown chunk type 'Q'"},
		{"second header", [][]byte{frame(chunkHeader, []byte{0, 0, 0, 0})}, "second header chunk"},
		{"stray bytes", [][]byte{frame(chunkCall, []byte{1, 'a', 'b'})}, "1 stray bytes at the end of a call chunk"},
		{"bad string", [][]byte{frame(chunkCall, []byte{5, 'a'})}, "undecodable call chunk"},
		{"rank out of range", [][]byte{call, site, event(0x80, 0, 0, 0, 0, 0)}, "rank index 0 out of range (0 ranks) in event 0 of events chunk"},
		{"call out of range", [][]byte{call, site, rank, event(0x81, 0, 0, 0, 1, 0, 0)}, "call index 1 out of range (1 calls) in event 0 of events chunk"},
		{"site out of range", [][]byte{call, rank, event(0x80, 0, 0, 0, 0, 0)}, "call 0 or site 0 out of range (1 calls, 0 sites) in event 0 of events chunk"},
		{"no stream", [][]byte{call, site, rank, event(0x00, 0, 0)}, "first event of events chunk names no stream"},
		{"end out of range", [][]byte{frame(chunkEnds, []byte{1, 3, 0, 0})}, "rank index 3 out of range (0 ranks) in rank ends"},
		{"closing count", [][]byte{frame(chunkClose, []byte{1, 0, 0, 0, 0})}, "closing record counts 1 events but the file holds 0"},
		{"huge chunk", [][]byte{{chunkCall, 0xff, 0xff, 0xff, 0xff, 0x0f}}, "chunk length 4294967295 over the limit of 16777216"},
	} {
		data := bytes.Clone(base)
		for _, c := range tc.chunks[:len(tc.chunks)-1] {
			data = append(data, c...)
		}
		off := len(data)
		data = append(data, tc.chunks[len(tc.chunks)-1]...)
		tr, err := Read(bytes.NewReader(data))
		want := fmt.Sprintf("damaged trace: read 0 calls in 0 chunks; bytes %d-%d unreadable (chunk %d: %s)", off, len(data), len(tc.chunks), tc.cause)
		if err == nil || err.Error() != want {
			t.Errorf("%s: err = %v\nwant %s", tc.name, err, want)
		}
		if tr == nil || tr.Complete || len(tr.Events) != 0 {
			t.Errorf("%s: trace %+v", tc.name, tr)
		}
	}

	// The valid version of the chunks above decodes.
	data := append(bytes.Clone(base), call...)
	data = append(data, site...)
	data = append(data, rank...)
	data = append(data, event(0x80, 0, 0, 0, 10, 6)...)
	tr, err := Read(bytes.NewReader(data))
	want := Event{Rank: 0, TID: 0, Call: 0, Site: 0, Enter: 5, Exit: 8, Peer: NoValue, Root: NoValue, Count: NoValue}
	if tr == nil || len(tr.Events) != 1 || tr.Events[0] != want || tr.Ranks[0].PID != 1 {
		t.Fatalf("%v: %+v", err, tr)
	}
}

func TestWriteEventsIndices(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Header{})
	w.AddCall("MPI_Send")
	w.AddSite(Site{Object: "a"})
	w.AddRank(Rank{PID: 1})
	ok := Event{Peer: 1, Root: NoValue, Count: 3, Enter: 1, Exit: 2}
	for _, tc := range []struct {
		e   Event
		err string
	}{
		{Event{Rank: 1}, "rank index 1 out of range (1 ranks added)"},
		{Event{Rank: -1}, "rank index -1 out of range"},
		{Event{Call: 1}, "call index 1 out of range (1 calls added)"},
		{Event{Call: -5}, "call index -5 out of range"},
		{Event{Site: 2}, "site index 2 out of range (1 sites added)"},
	} {
		err := w.WriteEvents([]Event{ok, ok, tc.e, ok})
		if err == nil || !strings.Contains(err.Error(), "event 2 of 4: "+tc.err) {
			t.Errorf("%+v: err = %v, want %s", tc.e, err, tc.err)
		}
	}
	if err := w.WriteEvents([]Event{ok}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close([]RankEnd{{Rank: 1}}); err == nil {
		t.Fatal("Close with an end of an unknown rank succeeded")
	}
	if err := w.Close([]RankEnd{{Rank: 0, Lost: 7, End: "killed by SIGKILL"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(nil); err == nil {
		t.Fatal("second Close succeeded")
	}
	if _, err := w.AddCall("x"); err == nil {
		t.Fatal("AddCall after Close succeeded")
	}
	if err := w.WriteEvents([]Event{ok}); err == nil {
		t.Fatal("WriteEvents after Close succeeded")
	}
	tr, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Events) != 1 || tr.Events[0] != ok {
		t.Fatalf("events %+v: the rejected batches were written", tr.Events)
	}
	if !reflect.DeepEqual(tr.Ends, []RankEnd{{Rank: 0, Lost: 7, End: "killed by SIGKILL"}}) {
		t.Fatalf("ends %+v", tr.Ends)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestWriteErrorSticks(t *testing.T) {
	if _, err := NewWriter(&failWriter{}, Header{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("NewWriter: %v", err)
	}
	w, err := NewWriter(&failWriter{n: 1}, Header{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddRank(Rank{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("AddRank after failure: %v", err)
	}
	if err := w.Close(nil); err == nil {
		t.Fatal("Close after failure succeeded")
	}
}

// loopEvents is a tight loop of one call at one site on one thread.
func loopEvents(rng *rand.Rand, n int) []Event {
	ev := make([]Event, n)
	now := int64(1e9)
	for i := range ev {
		now += 300 + rng.Int64N(1500)
		d := 500 + rng.Int64N(3000)
		ev[i] = Event{Rank: 0, TID: 4242, Call: 0, Site: 0, Enter: now, Exit: now + d, Peer: 1, Root: NoValue, Count: 1024, ElemSize: 8}
		now += d
	}
	return ev
}

func TestSize(t *testing.T) {
	const n = 100000
	rng := rand.New(rand.NewPCG(12, 12))
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Header{Host: "node1", Start: time.Now(), Command: []string{"mpirun", "./loop"}})
	w.AddCall("MPI_Send")
	w.AddSite(Site{Object: "/opt/loop", Offset: 0x401234, Function: "main", FuncOffset: 0x34, File: "loop.c", Line: 12})
	w.AddRank(Rank{PID: 100, Host: "node1", Job: "1", Rank: "0", Exe: "/opt/loop"})
	ev := loopEvents(rng, n)
	if err := w.WriteEvents(ev); err != nil {
		t.Fatal(err)
	}
	if err := w.Close([]RankEnd{{Rank: 0, End: "exit 0"}}); err != nil {
		t.Fatal(err)
	}
	per := float64(buf.Len()) / n
	t.Logf("%d events of a 1-call loop: %d bytes, %.2f bytes/event", n, buf.Len(), per)
	if per > 12 {
		t.Fatalf("%.2f bytes/event, want at most 12", per)
	}
	tr, err := Read(&buf)
	if err != nil || !reflect.DeepEqual(tr.Events, ev) {
		t.Fatalf("read back: %v", err)
	}
}

func TestLargeChunks(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Header{})
	big := strings.Repeat("x", 3<<20)
	if _, err := w.AddSite(Site{Object: big}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddCall(strings.Repeat("y", maxPayload)); err == nil || !strings.Contains(err.Error(), "more than the 16777216 a chunk holds") {
		t.Fatalf("oversized call: %v", err)
	}
	if _, err := w.AddCall("MPI_Send"); err != nil { // still usable
		t.Fatal(err)
	}
	w.AddRank(Rank{})
	if err := w.WriteEvents([]Event{{Call: 0}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	tr, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil || tr.Sites[0].Object != big || len(tr.Calls) != 1 || tr.Calls[0] != "MPI_Send" {
		t.Fatalf("read back: %v", err)
	}

	// A chunk that claims 10 MiB in a short file is cut off, not allocated.
	var hdr bytes.Buffer
	NewWriter(&hdr, Header{})
	data := append(bytes.Clone(hdr.Bytes()), chunkCall)
	data = binary.AppendUvarint(data, 10<<20)
	data = append(data, "short"...)
	_, err = Read(bytes.NewReader(data))
	want := fmt.Sprintf("damaged trace: read 0 calls in 0 chunks; bytes %d-%d unreadable (chunk 1: truncated)", hdr.Len(), len(data))
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

type failReader struct {
	data []byte
}

func (f *failReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, errors.New("input/output error")
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestReadError(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	want := randTrace(rng, 2*eventsPerChunk+5)
	data := encode(t, rng, want)
	for _, n := range []int{0, 10, len(magic), len(magic) + 1, len(data) / 2, len(data) - 3} {
		tr, err := Read(&failReader{data: data[:n]})
		if err == nil || !strings.Contains(err.Error(), "input/output error") || !strings.HasPrefix(err.Error(), "reading trace file at byte ") {
			t.Fatalf("failing after %d bytes: err = %v", n, err)
		}
		if tr != nil {
			checkPrefix(t, fmt.Sprintf("failing after %d bytes", n), tr, want)
		}
	}
}
