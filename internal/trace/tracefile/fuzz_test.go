package tracefile

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func FuzzRead(f *testing.F) {
	// Small seeds: the fuzzer minimizes every new input it finds, and
	// large inputs make that eat the fuzzing time.
	tiny := tinyTrace(f)
	f.Add(tiny)
	f.Add(tiny[:len(tiny)/2])
	rng := rand.New(rand.NewPCG(1, 2))
	f.Add(encode(f, rng, randTrace(rng, 0)))
	f.Add([]byte{})
	f.Add([]byte(magic))
	f.Add([]byte(magic + "\x02"))

	// Chunk bodies for the reframed reading below: a header, a call, a
	// site, a rank and an events chunk with one event.
	f.Add([]byte("H\x04\x00\x00\x00\x00C\x02\x01aS\x06\x00\x00\x00\x00\x00\x00R\x05\x02\x00\x00\x00\x00E\x07\x01\x80\x00\x00\x00\x0a\x06"))

	f.Fuzz(func(t *testing.T, data []byte) {
		// As a file, and as chunk bodies framed with good checksums so that
		// the fuzzer gets past the CRC to the decoders.
		checkRead(t, data)
		checkRead(t, reframe(data))
	})
}

// tinyTrace is a small trace with most features: two ranks, two threads,
// point-to-point and collective calls, and rank ends.
func tinyTrace(tb testing.TB) []byte {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Host: "n", Command: []string{"a"}})
	if err != nil {
		tb.Fatal(err)
	}
	w.AddCall("S")
	w.AddCall("B")
	w.AddSite(Site{Object: "o", Offset: 9, Function: "f", FuncOffset: 1, File: "c", Line: 3})
	w.AddRank(Rank{PID: 1, Host: "n", Job: "j", Rank: "0", Exe: "e"})
	w.AddRank(Rank{PID: 2, Host: "n", Job: "j", Rank: "1", Exe: "e"})
	err = w.WriteEvents([]Event{
		{Rank: 0, TID: 1, Call: 0, Enter: 10, Exit: 20, Peer: 1, Root: NoValue, Count: 4, ElemSize: 8},
		{Rank: 1, TID: 2, Call: 0, Enter: 12, Exit: 25, Peer: 0, Root: NoValue, Count: 4, ElemSize: 8},
		{Rank: 1, TID: 3, Call: 1, Enter: 30, Exit: 35, Peer: NoValue, Root: 0, Count: NoValue, Ret: -1},
		{Rank: 0, TID: 1, Call: 1, Enter: 31, Exit: 36, Peer: NoValue, Root: 0, Count: 1, ElemSize: 4},
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := w.Close([]RankEnd{{Rank: 1, Lost: 2, End: "exit 0"}}); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// reframe makes a file of data read as a sequence of chunk type, payload
// length (one byte) and payload.
func reframe(data []byte) []byte {
	b := []byte(magic + "\x01")
	for len(data) >= 2 {
		typ, n := data[0], min(int(data[1]), len(data)-2)
		b = append(b, frame(typ, data[2:2+n])...)
		data = data[2+n:]
	}
	return b
}

// checkRead reads data and checks what Read promises.
// checkMerge merges what was read with itself as another node's trace (the
// ranks on other hosts, their numbers unknown): either one line refusing
// it, or a trace of both whose every index is in range.
func checkMerge(t *testing.T, tr *Trace) {
	other := *tr
	other.Ranks = slices.Clone(tr.Ranks)
	for i := range other.Ranks {
		other.Ranks[i].Host, other.Ranks[i].Rank = "other "+other.Ranks[i].Host, "?"
	}
	m, err := Merge([]Part{{"a", tr}, {"b", &other}})
	if err != nil {
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("merge refused in more than one line: %q", err)
		}
		return
	}
	if len(m.Events) != 2*len(tr.Events) || len(m.Ranks) != 2*len(tr.Ranks) || len(m.Calls) > len(tr.Calls) || len(m.Sites) > len(tr.Sites) {
		t.Fatalf("merged %d events, %d ranks, %d calls, %d sites of twice %d, %d, %d, %d",
			len(m.Events), len(m.Ranks), len(m.Calls), len(m.Sites), len(tr.Events), len(tr.Ranks), len(tr.Calls), len(tr.Sites))
	}
	for i, e := range m.Events {
		if e.Rank < 0 || e.Rank >= len(m.Ranks) || e.Call < 0 || e.Call >= len(m.Calls) || e.Site < 0 || e.Site >= len(m.Sites) {
			t.Fatalf("merged event %d %+v out of range", i, e)
		}
	}
}

func checkRead(t *testing.T, data []byte) {
	{
		tr, err := Read(bytes.NewReader(data))
		if tr == nil {
			if err == nil {
				t.Fatal("nil Trace and nil error")
			}
			return
		}
		if err == nil && !tr.Complete {
			t.Fatal("no error but not Complete")
		}
		for i, e := range tr.Events {
			if e.Rank < 0 || e.Rank >= len(tr.Ranks) || e.Call < 0 || e.Call >= len(tr.Calls) || e.Site < 0 || e.Site >= len(tr.Sites) {
				t.Fatalf("event %d %+v out of range (%d ranks, %d calls, %d sites)", i, e, len(tr.Ranks), len(tr.Calls), len(tr.Sites))
			}
		}
		for i, e := range tr.Ends {
			if e.Rank < 0 || e.Rank >= len(tr.Ranks) {
				t.Fatalf("end %d %+v out of range (%d ranks)", i, e, len(tr.Ranks))
			}
		}
		checkMerge(t, tr)

		// Whatever was read writes back and reads back the same.
		var buf bytes.Buffer
		w, werr := NewWriter(&buf, tr.Header)
		if werr != nil {
			t.Fatal(werr)
		}
		for _, c := range tr.Calls {
			if _, werr := w.AddCall(c); werr != nil {
				t.Fatal(werr)
			}
		}
		for _, s := range tr.Sites {
			if _, werr := w.AddSite(s); werr != nil {
				t.Fatal(werr)
			}
		}
		for _, r := range tr.Ranks {
			if _, werr := w.AddRank(r); werr != nil {
				t.Fatal(werr)
			}
		}
		if werr := w.WriteEvents(tr.Events); werr != nil {
			t.Fatal(werr)
		}
		if werr := w.Close(tr.Ends); werr != nil {
			t.Fatal(werr)
		}
		again, rerr := Read(&buf)
		if rerr != nil {
			t.Fatalf("rewritten trace: %v", rerr)
		}
		want := *byFirstUse(tr) // the writer writes only the calls used
		want.Complete = true
		if d := sameTrace(again, &want); d != "" {
			t.Fatalf("rewritten trace differs: %s", d)
		}
	}
}

// FuzzDamage damages a real written trace, cutting it at cut (if below its
// size) and xoring the bytes of flips in at the offsets they name: flips is
// read as pairs of a little-endian uint16 offset and an xor byte. Read must
// not panic, and must return only events that were written, in the order
// they were written, no more than were written.
func FuzzDamage(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	want := randTrace(rng, 1500)
	data := encode(f, rng, want)
	f.Add(uint32(len(data)), []byte{})
	f.Add(uint32(len(data)/2), []byte{})
	f.Add(uint32(len(data)), []byte{0x00, 0x10, 0xff, 0x00, 0x30, 0x01})
	f.Add(uint32(20), []byte{})
	f.Fuzz(func(t *testing.T, cut uint32, flips []byte) {
		b := bytes.Clone(data)
		for ; len(flips) >= 3; flips = flips[3:] {
			off := int(flips[0]) | int(flips[1])<<8
			off = off * len(b) / 65536
			b[off] ^= flips[2]
		}
		if int(cut) < len(b) {
			b = b[:cut]
		}
		tr, err := Read(bytes.NewReader(b))
		if tr == nil {
			if err == nil {
				t.Fatal("nil Trace and nil error")
			}
			return
		}
		if len(tr.Events) > len(want.Events) {
			t.Fatalf("read %d events of %d written", len(tr.Events), len(want.Events))
		}
		i := 0
		for _, e := range tr.Events {
			for i < len(want.Events) && want.Events[i] != e {
				i++
			}
			if i == len(want.Events) {
				t.Fatalf("read an event that was not written, or out of order: %+v", e)
			}
			i++
		}
		var de *DamageError
		if errors.As(err, &de) && de.Events != len(tr.Events) {
			t.Fatalf("error counts %d events, the Trace holds %d", de.Events, len(tr.Events))
		}
		checkRead(t, b)
	})
}
