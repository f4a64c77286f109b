package tracefile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Writer appends a trace to an io.Writer, one self-contained chunk at a time.
// Each chunk goes to the underlying writer in a single Write call. After an
// error from the underlying writer every method returns that error. A Writer
// is not safe for concurrent use.
type Writer struct {
	w      io.Writer
	err    error // sticky
	closed bool

	ncalls, nsites, nranks int    // definitions written
	nevents                uint64 // events written in chunks
	evBytes                int    // their encoded bytes

	// Call names are written at their first use, so that a recorder that
	// adds every function it probes (hundreds) does not fill the start of
	// the file with names no event uses: the file numbers calls in the
	// order they are written, and callFile maps AddCall's index to it.
	calls    []string
	callFile []int // -1 until written

	// The events chunk being built.
	ev      []byte // encoded events, without the count in front
	evn     int    // events in ev
	streams map[streamKey]int
	states  []Event // last event of each stream
	cur     int     // stream of the previous event, -1 before the first

	chunk []byte // scratch for framing a chunk
}

// NewWriter writes the signature, the format version and the header chunk
// to w and returns a Writer that appends the rest of the trace.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	tw := &Writer{w: w, streams: make(map[streamKey]int), cur: -1}
	var p []byte
	p = appendString(p, h.Host)
	p = binary.AppendVarint(p, h.Start.Unix())
	p = binary.AppendUvarint(p, uint64(h.Start.Nanosecond()))
	p = binary.AppendUvarint(p, uint64(len(h.Command)))
	for _, a := range h.Command {
		p = appendString(p, a)
	}
	if len(p) > maxPayload {
		return nil, fmt.Errorf("tracefile: header is %d bytes, more than the %d a chunk holds: shorten the command line", len(p), maxPayload)
	}
	tw.chunk = append(tw.chunk, magic...)
	tw.chunk = binary.AppendUvarint(tw.chunk, Version)
	if err := tw.writeChunk(chunkHeader, p); err != nil {
		return nil, err
	}
	return tw, nil
}

// AddCall defines the MPI function called name and returns its index for
// Event.Call. The name is written when an event first uses it; a call no
// event uses is not in the file. Calls are numbered in the file in the
// order they are first used, so a Trace read back numbers them so too.
func (w *Writer) AddCall(name string) (int, error) {
	if err := w.usable(); err != nil {
		return 0, err
	}
	if n := len(appendString(nil, name)); n > maxPayload {
		return 0, fmt.Errorf("tracefile: call name is %d bytes, more than the %d a chunk holds: shorten its strings", n, maxPayload)
	}
	w.calls = append(w.calls, name)
	w.callFile = append(w.callFile, -1)
	return len(w.calls) - 1, nil
}

// AddSite defines a call site and returns its index for Event.Site. It
// writes a chunk.
func (w *Writer) AddSite(s Site) (int, error) {
	if err := w.usable(); err != nil {
		return 0, err
	}
	var p []byte
	p = appendString(p, s.Object)
	p = binary.AppendUvarint(p, s.Offset)
	p = appendString(p, s.Function)
	p = binary.AppendUvarint(p, s.FuncOffset)
	p = appendString(p, s.File)
	p = binary.AppendVarint(p, int64(s.Line))
	return w.define(chunkSite, p, "site", &w.nsites)
}

// AddRank defines a traced process and returns its index for Event.Rank and
// RankEnd.Rank. It writes a chunk.
func (w *Writer) AddRank(r Rank) (int, error) {
	if err := w.usable(); err != nil {
		return 0, err
	}
	var p []byte
	p = binary.AppendVarint(p, int64(r.PID))
	p = appendString(p, r.Host)
	p = appendString(p, r.Job)
	p = appendString(p, r.Rank)
	p = appendString(p, r.Exe)
	return w.define(chunkRank, p, "rank", &w.nranks)
}

// WriteEvents appends events. They are buffered and written as an events
// chunk every 4 KiB or 4096 events, whichever comes first (smaller chunks,
// from 512 bytes, while the file is small), so that damage to a file loses
// little; Close writes the rest. Every event's Rank, Call
// and Site must refer to a rank, call and site already added; if one does
// not, WriteEvents writes none of ev and returns an error.
func (w *Writer) WriteEvents(ev []Event) error {
	if err := w.usable(); err != nil {
		return err
	}
	for i := range ev {
		if err := w.check(&ev[i]); err != nil {
			return fmt.Errorf("tracefile: event %d of %d: %v", i, len(ev), err)
		}
	}
	for i := range ev {
		e := &ev[i]
		call := w.callFile[e.Call]
		if call < 0 {
			c, err := w.define(chunkCall, appendString(nil, w.calls[e.Call]), "call name", &w.ncalls)
			if err != nil {
				return err
			}
			w.callFile[e.Call], call = c, c
		}
		w.encode(e, call)
		if w.evn == eventsPerChunk || len(w.ev) >= min(chunkBytes, max(minChunkBytes, w.evBytes/8)) {
			if err := w.flushEvents(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close writes the buffered events, how the ranks ended (ends, in any order,
// possibly empty) and the closing chunk. It does not close the underlying
// writer. The Writer cannot be used afterwards.
func (w *Writer) Close(ends []RankEnd) error {
	if err := w.usable(); err != nil {
		return err
	}
	for i, e := range ends {
		if e.Rank < 0 || e.Rank >= w.nranks {
			return fmt.Errorf("tracefile: end %d of %d: rank index %d out of range (%d ranks added): add the rank with AddRank first", i, len(ends), e.Rank, w.nranks)
		}
	}
	if err := w.flushEvents(); err != nil {
		return err
	}
	var p []byte
	p = binary.AppendUvarint(p, uint64(len(ends)))
	for _, e := range ends {
		p = binary.AppendUvarint(p, uint64(e.Rank))
		p = binary.AppendUvarint(p, e.Lost)
		p = appendString(p, e.End)
	}
	if len(p) > maxPayload {
		return fmt.Errorf("tracefile: rank ends take %d bytes, more than the %d a chunk holds: shorten the End strings", len(p), maxPayload)
	}
	if err := w.writeChunk(chunkEnds, p); err != nil {
		return err
	}
	p = p[:0]
	p = binary.AppendUvarint(p, w.nevents)
	p = binary.AppendUvarint(p, uint64(w.ncalls))
	p = binary.AppendUvarint(p, uint64(w.nsites))
	p = binary.AppendUvarint(p, uint64(w.nranks))
	p = binary.AppendUvarint(p, uint64(len(ends)))
	if err := w.writeChunk(chunkClose, p); err != nil {
		return err
	}
	w.closed = true
	return nil
}

var errClosed = errors.New("tracefile: writer already closed: nothing more can be added to the trace")

// usable returns why the Writer cannot take more, or nil.
func (w *Writer) usable() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errClosed
	}
	return nil
}

// check reports whether e refers only to what has been added.
func (w *Writer) check(e *Event) error {
	switch {
	case e.Rank < 0 || e.Rank >= w.nranks:
		return fmt.Errorf("rank index %d out of range (%d ranks added): add the rank with AddRank first", e.Rank, w.nranks)
	case e.Call < 0 || e.Call >= len(w.calls):
		return fmt.Errorf("call index %d out of range (%d calls added): add the call with AddCall first", e.Call, len(w.calls))
	case e.Site < 0 || e.Site >= w.nsites:
		return fmt.Errorf("site index %d out of range (%d sites added): add the site with AddSite first", e.Site, w.nsites)
	}
	return nil
}

// scanStreams is how many streams a chunk may hold before encode looks
// them up in the map instead of comparing them all: a chunk of a job's
// node mostly holds a few, and a scan of those is cheaper than a map
// lookup at every switch between ranks.
const scanStreams = 16

// encode appends e, its call numbered call in the file, to the events
// chunk being built.
func (w *Writer) encode(e *Event, call int) {
	k := streamKey{e.Rank, e.TID}
	sid, newStream := w.cur, false
	if sid < 0 || w.states[sid].Rank != e.Rank || w.states[sid].TID != e.TID {
		ok := false
		if len(w.states) <= scanStreams {
			for i := range w.states {
				if w.states[i].Rank == e.Rank && w.states[i].TID == e.TID {
					sid, ok = i, true
					break
				}
			}
		} else {
			sid, ok = w.streams[k]
		}
		if !ok {
			sid, newStream = len(w.states), true
			w.streams[k] = sid
			st := initialState()
			if w.cur >= 0 {
				st = w.states[w.cur] // the chunk's previous event
			}
			st.Rank, st.TID = e.Rank, e.TID
			w.states = append(w.states, st)
		}
	}
	prev := &w.states[sid]

	var flags byte
	if sid != w.cur {
		flags |= flagStream
	}
	if call != prev.Call {
		flags |= flagCall
	}
	if e.Site != prev.Site {
		flags |= flagSite
	}
	if e.Peer != prev.Peer {
		flags |= flagPeer
	}
	if e.Root != prev.Root {
		flags |= flagRoot
	}
	if e.Count != prev.Count {
		flags |= flagCount
	}
	if e.ElemSize != prev.ElemSize {
		flags |= flagElemSize
	}
	if e.Ret != prev.Ret {
		flags |= flagRet
	}

	b := append(w.ev, flags)
	if flags&flagStream != 0 {
		b = binary.AppendUvarint(b, uint64(sid))
		if newStream {
			b = binary.AppendUvarint(b, uint64(e.Rank))
			b = binary.AppendVarint(b, int64(e.TID))
		}
	}
	if flags&flagCall != 0 {
		b = binary.AppendUvarint(b, uint64(call))
	}
	if flags&flagSite != 0 {
		b = binary.AppendUvarint(b, uint64(e.Site))
	}
	if flags&flagPeer != 0 {
		b = binary.AppendVarint(b, int64(e.Peer)-int64(prev.Peer))
	}
	if flags&flagRoot != 0 {
		b = binary.AppendVarint(b, int64(e.Root)-int64(prev.Root))
	}
	if flags&flagCount != 0 {
		b = binary.AppendVarint(b, e.Count-prev.Count) // wraps; the reader wraps back
	}
	if flags&flagElemSize != 0 {
		b = binary.AppendVarint(b, int64(e.ElemSize)-int64(prev.ElemSize))
	}
	if flags&flagRet != 0 {
		b = binary.AppendVarint(b, int64(e.Ret)-int64(prev.Ret))
	}
	b = binary.AppendVarint(b, e.Enter-prev.Exit)
	b = binary.AppendVarint(b, e.Exit-e.Enter)
	w.ev = b

	*prev = *e
	prev.Call = call
	w.cur = sid
	w.evn++
}

// flushEvents writes the events chunk being built, if it holds any events.
func (w *Writer) flushEvents() error {
	if w.evn == 0 {
		return nil
	}
	// The count goes in front: frame it by hand rather than copying ev.
	var cnt [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(cnt[:], uint64(w.evn))
	plen := n + len(w.ev)
	crc := chunkCRC(chunkEvents, cnt[:n])
	crc = crcUpdate(crc, w.ev)
	c := append(w.chunk[:0], chunkEvents)
	c = binary.AppendUvarint(c, uint64(plen))
	c = append(c, cnt[:n]...)
	c = append(c, w.ev...)
	c = binary.LittleEndian.AppendUint32(c, crc)
	w.chunk = c[:0]
	if err := w.write(c); err != nil {
		return err
	}
	w.nevents += uint64(w.evn)
	w.evBytes += len(w.ev)
	w.ev = w.ev[:0]
	w.evn = 0
	clear(w.streams)
	w.states = w.states[:0]
	w.cur = -1
	return nil
}

// define writes the definition chunk of type typ with payload p, after
// checking its size, and on success counts it in *n and returns its index,
// the value *n had before. what names the definition in the size error.
func (w *Writer) define(typ byte, p []byte, what string, n *int) (int, error) {
	if len(p) > maxPayload {
		return 0, fmt.Errorf("tracefile: %s is %d bytes, more than the %d a chunk holds: shorten its strings", what, len(p), maxPayload)
	}
	if err := w.writeChunk(typ, p); err != nil {
		return 0, err
	}
	*n++
	return *n - 1, nil
}

// writeChunk frames payload as a chunk of type typ and writes it, after
// whatever w.chunk already holds.
func (w *Writer) writeChunk(typ byte, payload []byte) error {
	c := append(w.chunk, typ)
	c = binary.AppendUvarint(c, uint64(len(payload)))
	c = append(c, payload...)
	c = binary.LittleEndian.AppendUint32(c, chunkCRC(typ, payload))
	err := w.write(c)
	w.chunk = c[:0]
	return err
}

// write writes b in one call and makes any failure sticky.
func (w *Writer) write(b []byte) error {
	n, err := w.w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = fmt.Errorf("tracefile: writing trace: %w", err)
		return w.err
	}
	return nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
