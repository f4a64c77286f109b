package tracefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// chunkAt is one chunk of a written file, found by walking the frames.
type chunkAt struct {
	start, end int64 // bytes [start, end) of the chunk, frame included
	typ        byte
	events     int // events in an events chunk
	first      int // index of its first event in the file
}

// layout walks the frames of a well-formed file.
func layout(tb testing.TB, data []byte) []chunkAt {
	tb.Helper()
	var out []chunkAt
	off, nev := len(magic)+1, 0
	for off < len(data) {
		l, n := binary.Uvarint(data[off+1:])
		c := chunkAt{start: int64(off), end: int64(off + 1 + n + int(l) + 4), typ: data[off], first: nev}
		if c.typ == chunkEvents {
			k, _ := binary.Uvarint(data[off+1+n:])
			c.events = int(k)
			nev += c.events
		}
		out = append(out, c)
		off = int(c.end)
	}
	if off != len(data) {
		tb.Fatalf("frames end at byte %d of %d", off, len(data))
	}
	return out
}

// eventsBefore is how many events the whole chunks before byte n hold.
func eventsBefore(chunks []chunkAt, n int64) int {
	k := 0
	for _, c := range chunks {
		if c.end <= n {
			k += c.events
		}
	}
	return k
}

func countType(chunks []chunkAt, typ byte) int {
	k := 0
	for _, c := range chunks {
		if c.end > 0 && c.typ == typ {
			k++
		}
	}
	return k
}

// TestDamage damages a written trace at every chunk, in every way: cut at
// the chunk's start or inside it, four bytes flipped in its type, length,
// payload or checksum, and two chunks damaged at once. Every whole chunk
// before the damage must be read, a damaged events chunk followed by a whole
// chunk skipped, and the damage reported with its bytes and chunk number.
func TestDamage(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 21))
	want := randTrace(rng, 2500)
	data := encode(t, rng, want)
	chunks := layout(t, data)
	size := int64(len(data))
	if n := countType(chunks, chunkEvents); n < 8 {
		t.Fatalf("only %d events chunks", n)
	}

	type expect struct {
		nilTrace bool
		skip     []int // events chunks skipped
		stop     int   // chunk reading stops at (len(chunks): none)
		damage   []Damage
		unclosed bool
		written  int
	}
	type tcase struct {
		name string
		data []byte
		want expect
	}
	flip := func(off int64, n int) []byte {
		b := bytes.Clone(data)
		for i := range int64(n) {
			if off+i < size {
				b[off+i] ^= 0xa5
			}
		}
		return b
	}
	whole := func(k int, cause string) expect {
		if k == 0 {
			return expect{nilTrace: true}
		}
		if chunks[k].typ == chunkEvents && k+1 < len(chunks) {
			c := chunks[k]
			return expect{skip: []int{k}, stop: len(chunks), written: len(want.Events),
				damage: []Damage{{Start: c.start, End: c.end, Chunk: k, Cause: cause}}}
		}
		return expect{stop: k, written: -1, damage: []Damage{{Start: chunks[k].start, End: size, Chunk: k, Cause: cause}}}
	}
	var cases []tcase
	for k, c := range chunks {
		name := fmt.Sprintf("chunk %d %q", k, c.typ)
		if k > 0 {
			cases = append(cases, tcase{name + " cut at start", data[:c.start],
				expect{stop: k, unclosed: true, written: -1}})
		} else {
			cases = append(cases, tcase{name + " cut at start", data[:c.start], expect{nilTrace: true}})
		}
		mid := (c.start + c.end) / 2
		cut := expect{nilTrace: true}
		if k > 0 {
			cut = expect{stop: k, written: -1, damage: []Damage{{Start: c.start, End: mid, Chunk: k, Cause: "truncated"}}}
		}
		cases = append(cases, tcase{name + " cut inside", data[:mid], cut})
		cases = append(cases, tcase{name + " payload flipped", flip(mid-2, 4), whole(k, "crc mismatch")})
		cases = append(cases, tcase{name + " checksum flipped", flip(c.end-4, 4), whole(k, "crc mismatch")})
		// A damaged type: the checksum covers it, and an unknown type
		// could have been anything, so reading stops there.
		typ := expect{nilTrace: true}
		if k > 0 {
			typ = expect{stop: k, written: -1, damage: []Damage{{Start: c.start, End: size, Chunk: k, Cause: "crc mismatch"}}}
		}
		cases = append(cases, tcase{name + " type flipped", flip(c.start, 1), typ})
		// A damaged length misplaces the next chunk: reading stops.
		length := expect{nilTrace: true}
		if k > 0 {
			length = expect{stop: k, written: -1, damage: []Damage{{Start: c.start, End: size, Chunk: k}}}
		}
		b := bytes.Clone(data)
		b[c.start+1] ^= 1
		cases = append(cases, tcase{name + " length flipped", b, length})
	}
	// Two events chunks apart are both skipped; two in a row stop reading.
	var ev []int
	for k, c := range chunks {
		if c.typ == chunkEvents && k+1 < len(chunks) && chunks[k+1].typ == chunkEvents {
			ev = append(ev, k)
		}
	}
	a, b := ev[1], ev[len(ev)-2]
	two := flip((chunks[a].start+chunks[a].end)/2, 4)
	copy(two[chunks[b].start+4:], bytes.Repeat([]byte{0}, 4))
	cases = append(cases, tcase{"two events chunks apart", two, expect{skip: []int{a, b}, stop: len(chunks), written: len(want.Events),
		damage: []Damage{
			{Start: chunks[a].start, End: chunks[a].end, Chunk: a, Cause: "crc mismatch"},
			{Start: chunks[b].start, End: chunks[b].end, Chunk: b, Cause: "crc mismatch"}}}})
	adj := flip(chunks[a].end-2, 4) // the end of a's checksum and the start of a+1
	cases = append(cases, tcase{"two events chunks in a row", adj, expect{stop: a, written: -1,
		damage: []Damage{{Start: chunks[a].start, End: size, Chunk: a, Cause: "crc mismatch"}}}})

	for _, tc := range cases {
		tr, err := Read(bytes.NewReader(tc.data))
		w := tc.want
		if err == nil {
			t.Fatalf("%s: no error", tc.name)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: error of several lines: %q", tc.name, err)
		}
		if w.nilTrace {
			if tr != nil {
				t.Fatalf("%s: a Trace for a file without a header (%v)", tc.name, err)
			}
			continue
		}
		var de *DamageError
		if tr == nil || !errors.As(err, &de) {
			t.Fatalf("%s: trace %v, err %v", tc.name, tr != nil, err)
		}
		var evs []Event
		nchunks := 0
		for k, c := range chunks[:w.stop] {
			if c.typ == chunkEvents && !slices.Contains(w.skip, k) {
				evs = append(evs, want.Events[c.first:c.first+c.events]...)
				nchunks++
			}
		}
		if !slices.Equal(tr.Events, evs) {
			t.Fatalf("%s: read %d events, want %d", tc.name, len(tr.Events), len(evs))
		}
		if tr.Complete {
			t.Fatalf("%s: Complete", tc.name)
		}
		got := *de
		if w.damage != nil && w.damage[0].Cause == "" && len(got.Damage) == 1 {
			got.Damage[0].Cause = "" // any cause
		}
		wantErr := DamageError{Events: len(evs), Chunks: nchunks, Written: w.written, Size: int64(len(tc.data)), Damage: w.damage, Unclosed: w.unclosed}
		if fmt.Sprint(got) != fmt.Sprint(wantErr) {
			t.Fatalf("%s:\n got %+v\nwant %+v", tc.name, got, wantErr)
		}
	}
}

// TestDamageMessage is the one line trace show prints for a damaged file.
func TestDamageMessage(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	want := randTrace(rng, 3000)
	data := encode(t, rng, want)
	chunks := layout(t, data)
	var k int
	for i, c := range chunks {
		if c.typ == chunkEvents && c.first > 1000 {
			k = i
			break
		}
	}
	c := chunks[k]
	tr, err := Read(bytes.NewReader(data[:c.start+10]))
	wantErr := fmt.Sprintf("damaged trace: read %d calls in %d chunks; bytes %d-%d unreadable (chunk %d: truncated)",
		c.first, countType(chunks[:k], chunkEvents), c.start, c.start+10, k)
	if err == nil || err.Error() != wantErr {
		t.Fatalf("err = %v\nwant %s", err, wantErr)
	}
	if tr == nil || len(tr.Events) != c.first {
		t.Fatalf("trace %v", tr != nil)
	}

	bad := bytes.Clone(data)
	bad[c.start+20] ^= 0x10
	_, err = Read(bytes.NewReader(bad))
	wantErr = fmt.Sprintf("damaged trace: read %d of %d calls in %d chunks; bytes %d-%d unreadable (chunk %d: crc mismatch)",
		len(want.Events)-c.events, len(want.Events), countType(chunks, chunkEvents)-1, c.start, c.end, k)
	if err == nil || err.Error() != wantErr {
		t.Fatalf("err = %v\nwant %s", err, wantErr)
	}
}

// TestDamagedDefinitionIsNotSkipped: a call chunk whose type byte is
// damaged into 'E' (with a checksum to match) would be skipped as events,
// and every later call misnumbered; the closing record's counts catch it
// and nothing after the damage is shown.
func TestDamagedDefinitionIsNotSkipped(t *testing.T) {
	var hdr bytes.Buffer
	NewWriter(&hdr, Header{Host: "h"})
	data := bytes.Clone(hdr.Bytes())
	for _, c := range [][]byte{
		frame(chunkCall, appendString(nil, "MPI_Send")),
		frame(chunkSite, []byte{0, 0, 0, 0, 0, 0}),
		frame(chunkRank, []byte{2, 0, 0, 0, 0}),
		frame(chunkEvents, []byte{1, 0x80, 0, 0, 0, 10, 6}),    // MPI_Send
		frame(chunkEvents, appendString(nil, "MPI_Recv")),      // really call 1, damaged below
		frame(chunkCall, appendString(nil, "MPI_Bcast")),       // call 2
		frame(chunkEvents, []byte{1, 0x81, 0, 0, 0, 2, 10, 6}), // MPI_Bcast
		frame(chunkEnds, []byte{0}),
		frame(chunkClose, []byte{2, 3, 1, 1, 0}),
	} {
		data = append(data, c...)
	}
	off := layout(t, data)[5].start // the damaged chunk
	data[off+4] ^= 1                // a byte of "MPI_Recv"
	tr, err := Read(bytes.NewReader(data))
	var de *DamageError
	if !errors.As(err, &de) || len(de.Damage) != 1 || de.Damage[0].Start != off || de.Damage[0].End != int64(len(data)) ||
		!strings.Contains(de.Damage[0].Cause, "do not match the closing record") {
		t.Fatalf("err = %v", err)
	}
	if len(tr.Events) != 1 || len(tr.Calls) != 1 {
		t.Fatalf("read %d events, %d calls; want only what came before the damage", len(tr.Events), len(tr.Calls))
	}
}

// TestReadFunc: the streaming reader hands over, chunk by chunk, exactly
// the events Read returns, with the same error, whole or damaged.
func TestReadFunc(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 31))
	want := randTrace(rng, 3000)
	data := encode(t, rng, want)
	chunks := layout(t, data)
	flipped := bytes.Clone(data)
	for _, c := range chunks {
		if c.typ == chunkEvents && c.first > 1000 {
			flipped[c.start+30] ^= 0xff
			break
		}
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"whole", data}, {"cut", data[:len(data)*2/3]}, {"flipped", flipped},
	} {
		tr, err := Read(bytes.NewReader(tc.data))
		var got []Event
		calls := 0
		st, serr := ReadFunc(bytes.NewReader(tc.data), func(t *Trace, ev []Event) error {
			calls++
			for _, e := range ev {
				if e.Rank >= len(t.Ranks) || e.Call >= len(t.Calls) || e.Site >= len(t.Sites) {
					return fmt.Errorf("event %+v refers to something not yet defined", e)
				}
			}
			got = append(got, ev...)
			return nil
		})
		if fmt.Sprint(err) != fmt.Sprint(serr) || !slices.Equal(got, tr.Events) || len(st.Events) != 0 || calls < 5 {
			t.Errorf("%s: Read: %d events, %v; ReadFunc: %d events in %d calls, %v", tc.name, len(tr.Events), err, len(got), calls, serr)
		}
		st.Events = tr.Events
		if d := sameTrace(st, tr); d != "" {
			t.Errorf("%s: %s", tc.name, d)
		}
	}
	stop := errors.New("stop")
	if _, err := ReadFunc(bytes.NewReader(data), func(*Trace, []Event) error { return stop }); err != stop {
		t.Errorf("the callback's error: %v", err)
	}
}
