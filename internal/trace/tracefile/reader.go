package tracefile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// Read reads a whole trace file.
//
// A nil error means the file was read through its closing record. A file
// that is damaged or cut short gives both the Trace read around the damage
// (Complete false) and a *DamageError saying how many calls were read and
// which bytes and chunks could not be; callers that show traces should show
// that Trace along with the error. An events chunk that is damaged while the
// chunk after it is whole is skipped and reading goes on; any other damage
// ends the reading there. The Trace is nil only when there is nothing to
// show: the file is empty, is not a trace, has a newer format version, or
// its signature, version or header chunk is cut off or damaged.
func Read(r io.Reader) (*Trace, error) {
	return read(r, nil)
}

// ReadFunc reads a trace file like Read, but hands the events to fn one
// events chunk at a time, with the Trace as read so far (every call, site
// and rank the events refer to is defined in it), instead of keeping them:
// the returned Trace has no Events, and memory stays small however long the
// trace. An error from fn stops the reading and is returned. Damage is
// handled and reported as by Read, except that events fn has seen cannot be
// taken back: when the closing record shows that a skipped chunk was a
// definition, the DamageError says so, but fn has already seen the events
// after it.
func ReadFunc(r io.Reader, fn func(t *Trace, events []Event) error) (*Trace, error) {
	return read(r, fn)
}

func read(r io.Reader, emit func(*Trace, []Event) error) (*Trace, error) {
	s := &source{br: bufio.NewReader(r)}

	var m [len(magic)]byte
	n, err := io.ReadFull(s.br, m[:])
	s.off = int64(n)
	if string(m[:n]) != magic[:n] {
		return nil, errors.New("not an mpiprobe trace file (bad magic): give a file written by mpiprobe trace -o")
	}
	switch {
	case err == io.EOF:
		return nil, errors.New("trace file is empty (0 bytes): mpiprobe trace stopped before writing anything, record the trace again")
	case err == io.ErrUnexpectedEOF:
		return nil, fmt.Errorf("trace file too short (%d bytes): it ends inside the file signature, record the trace again", s.off)
	case err != nil:
		return nil, fmt.Errorf("reading trace file at byte %d: %w", s.off, err)
	}

	v, err := binary.ReadUvarint(s)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return nil, fmt.Errorf("trace file too short (%d bytes): it ends before the format version, record the trace again", s.off)
	case err != nil && s.ioErr != nil:
		return nil, fmt.Errorf("reading trace file at byte %d: %w", s.off, s.ioErr)
	case err != nil:
		return nil, fmt.Errorf("trace file damaged at byte %d (unreadable format version): nothing to show, record the trace again", len(magic))
	case v > Version:
		return nil, fmt.Errorf("trace file version %d is newer than this mpiprobe reads (%d): use a newer mpiprobe", v, Version)
	case v == 0:
		return nil, fmt.Errorf("trace file damaged at byte %d (format version 0 does not exist): nothing to show, record the trace again", len(magic))
	}

	t := &Trace{Version: int(v)}
	d := &decoder{t: t, written: -1, emit: emit}

	// The header chunk: without it there is nothing to show.
	start := s.off
	typ, st, cause := s.next(d)
	switch {
	case st == frameIOError:
		return nil, fmt.Errorf("reading trace file at byte %d: %w", s.off, s.ioErr)
	case st == frameEOF || st == frameCut:
		return nil, fmt.Errorf("trace file too short (%d bytes): it ends inside its header chunk, record the trace again", s.drain())
	case st == frameOK:
		if err := d.chunk(typ, d.buf); err != nil {
			cause = err.Error()
		}
	}
	if !d.sawHeader {
		return nil, fmt.Errorf("trace file header damaged at byte %d (%s): nothing to show, record the trace again", start, cause)
	}

	de := &DamageError{Written: -1}
	chunkNo := 0       // of the chunk being read; the header was chunk 0
	var pend *Damage   // a damaged events chunk, skipped unless its successor is damaged too
	var snap *snapshot // what had been read before the first damage
	stop := func(dm Damage) {
		if pend != nil {
			dm.Start, dm.Chunk = pend.Start, pend.Chunk
			dm.Cause = pend.Cause
		}
		dm.End = s.drain()
		de.Size = dm.End
		de.Damage = append(de.Damage, dm)
	}
	for {
		chunkNo++
		start := s.off
		typ, st, cause := s.next(d)
		if st == frameIOError {
			return t, d.finish(de, fmt.Errorf("reading trace file at byte %d: %w", s.off, s.ioErr))
		}
		if st == frameEOF {
			if pend != nil {
				stop(Damage{})
			} else {
				de.Unclosed = !d.closed
				de.Size = s.off
			}
			break
		}
		if d.closed {
			stop(Damage{Start: start, Chunk: chunkNo, Cause: "data after the closing record, ignored"})
			break
		}
		if st == frameOK {
			before := d.snapshot()
			err := d.chunk(typ, d.buf)
			if d.emitErr != nil {
				return t, d.emitErr
			}
			if err == nil {
				if pend != nil {
					pend.End = start
					de.Damage = append(de.Damage, *pend)
					pend = nil
				}
				continue
			}
			before.restore(d)
			st, cause = frameBad, err.Error()
		}
		// The chunk is damaged. An events chunk whose frame holds together
		// is skipped if the next chunk reads: events chunks decode on
		// their own and define nothing later chunks refer to.
		if st == frameBad && typ == chunkEvents && pend == nil {
			if snap == nil {
				snap = d.snapshot()
			}
			d.damaged = true
			pend = &Damage{Start: start, End: s.off, Chunk: chunkNo, Cause: cause}
			continue
		}
		stop(Damage{Start: start, Chunk: chunkNo, Cause: cause})
		break
	}
	// A skipped chunk whose type byte was damaged into 'E' may have defined
	// a call, site or rank, so that every later one would be misnumbered:
	// the closing record's counts tell, and if they disagree, nothing after
	// the first damage can be trusted.
	if snap != nil && d.defsLost {
		snap.restore(d)
		first := de.Damage[0]
		first.End = de.Size
		first.Cause += "; later definitions do not match the closing record"
		de.Damage = []Damage{first}
	}
	return t, d.finish(de, nil)
}

// frame statuses of source.next.
const (
	frameOK      = iota // a whole chunk with a matching checksum
	frameEOF            // the file ends cleanly before the chunk
	frameBad            // a whole chunk by its length, with a checksum mismatch
	frameCut            // the file ends inside the chunk, or its length is unreadable
	frameIOError        // reading failed; see source.ioErr
)

// next reads one chunk into d.buf and returns its type, status and, unless
// it is OK, the cause of the damage.
func (s *source) next(d *decoder) (typ byte, status int, cause string) {
	typ, err := s.ReadByte()
	if err == io.EOF {
		return 0, frameEOF, ""
	}
	if err != nil {
		return 0, frameIOError, ""
	}
	length, err := binary.ReadUvarint(s)
	switch {
	case err != nil && s.ioErr != nil:
		return typ, frameIOError, ""
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return typ, frameCut, "truncated"
	case err != nil:
		return typ, frameCut, "unreadable chunk length"
	case length > maxPayload:
		return typ, frameCut, fmt.Sprintf("chunk length %d over the limit of %d", length, maxPayload)
	}
	d.buf, err = s.payload(d.buf, int(length))
	var sum [4]byte
	if err == nil {
		err = s.full(sum[:])
	}
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return typ, frameCut, "truncated"
	case err != nil:
		s.ioErr = err
		return typ, frameIOError, ""
	case binary.LittleEndian.Uint32(sum[:]) != chunkCRC(typ, d.buf):
		return typ, frameBad, "crc mismatch"
	}
	return typ, frameOK, ""
}

// drain reads the rest of the file and returns its size.
func (s *source) drain() int64 {
	n, _ := io.Copy(io.Discard, s.br)
	s.off += n
	return s.off
}

// snapshot is how much of a Trace had been read at some point.
type snapshot struct {
	events, calls, sites, ranks, ends int
	header                            bool
}

func (d *decoder) snapshot() *snapshot {
	t := d.t
	return &snapshot{d.nevents, len(t.Calls), len(t.Sites), len(t.Ranks), len(t.Ends), d.sawHeader}
}

// restore cuts t back to the snapshot.
func (sn *snapshot) restore(d *decoder) {
	t := d.t
	d.nevents = sn.events
	t.Events = t.Events[:min(sn.events, len(t.Events))]
	t.Calls = t.Calls[:sn.calls]
	t.Sites = t.Sites[:sn.sites]
	t.Ranks = t.Ranks[:sn.ranks]
	t.Ends = t.Ends[:sn.ends]
}

// finish completes the DamageError of a read: nil if the file was read
// whole, or ioErr if reading failed.
func (d *decoder) finish(de *DamageError, ioErr error) error {
	de.Events = d.nevents
	de.Chunks = d.eventChunks
	de.Written = d.written
	if ioErr != nil {
		return fmt.Errorf("%w: showing the %d calls read before it", ioErr, de.Events)
	}
	if len(de.Damage) == 0 && !de.Unclosed {
		return nil
	}
	return de
}

// source reads the file and counts the bytes consumed.
type source struct {
	br    *bufio.Reader
	off   int64
	ioErr error // last error other than EOF, for telling I/O from damage
}

// ReadByte lets binary.ReadUvarint read from s.
func (s *source) ReadByte() (byte, error) {
	b, err := s.br.ReadByte()
	if err == nil {
		s.off++
	} else if err != io.EOF {
		s.ioErr = err
	}
	return b, err
}

// full fills p, returning io.EOF or io.ErrUnexpectedEOF if the file ends.
func (s *source) full(p []byte) error {
	n, err := io.ReadFull(s.br, p)
	s.off += int64(n)
	return err
}

// payload reads n bytes, reusing buf if it is big enough. Large payloads are
// read a piece at a time so that a damaged length in a short file does not
// allocate the whole length up front.
func (s *source) payload(buf []byte, n int) ([]byte, error) {
	const step = 1 << 20
	if n <= cap(buf) {
		buf = buf[:n]
		return buf, s.full(buf)
	}
	if n <= step {
		buf = make([]byte, n)
		return buf, s.full(buf)
	}
	buf = buf[:0]
	for len(buf) < n {
		k := len(buf)
		m := min(n-k, step)
		buf = slices.Grow(buf, m)[:k+m]
		if err := s.full(buf[k:]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return buf, err
		}
	}
	return buf, nil
}

// decoder applies chunks to a Trace. Every chunk is applied entirely or not
// at all.
type decoder struct {
	t         *Trace
	sawHeader bool
	buf       []byte  // payload scratch
	streams   []Event // events chunk scratch

	eventChunks int  // events chunks read
	written     int  // events the closing record counts, -1 before it is read
	damaged     bool // a damaged chunk was skipped: the closing record cannot match
	defsLost    bool // the closing record counts more definitions than were read
	closed      bool // the closing record was read
	nevents     int  // events read (Trace.Events holds them unless emit takes them)

	emit    func(*Trace, []Event) error // ReadFunc's callback, or nil
	emitErr error                       // what emit returned
}

// chunk applies one chunk whose checksum matched.
func (d *decoder) chunk(typ byte, p []byte) error {
	if !d.sawHeader && typ != chunkHeader {
		return fmt.Errorf("first chunk has type %s, not the header", typeName(typ))
	}
	c := cursor{b: p}
	t := d.t
	switch typ {
	case chunkHeader:
		if d.sawHeader {
			return errors.New("second header chunk")
		}
		var h Header
		h.Host = c.str()
		sec := c.varint()
		nsec := c.uvarint()
		if nsec >= 1e9 {
			return errors.New("header start time has more than 1e9 nanoseconds")
		}
		h.Start = time.Unix(sec, int64(nsec))
		n := c.count(1)
		for range n {
			h.Command = append(h.Command, c.str())
		}
		if err := c.done("header"); err != nil {
			return err
		}
		t.Header = h
		d.sawHeader = true

	case chunkCall:
		name := c.str()
		if err := c.done("call"); err != nil {
			return err
		}
		t.Calls = append(t.Calls, name)

	case chunkSite:
		var s Site
		s.Object = c.str()
		s.Offset = c.uvarint()
		s.Function = c.str()
		s.FuncOffset = c.uvarint()
		s.File = c.str()
		s.Line = c.int()
		if err := c.done("site"); err != nil {
			return err
		}
		t.Sites = append(t.Sites, s)

	case chunkRank:
		var r Rank
		r.PID = c.int()
		r.Host = c.str()
		r.Job = c.str()
		r.Rank = c.str()
		r.Exe = c.str()
		if err := c.done("rank"); err != nil {
			return err
		}
		t.Ranks = append(t.Ranks, r)

	case chunkEvents:
		return d.events(&c)

	case chunkEnds:
		n := c.count(3)
		ends := make([]RankEnd, 0, n)
		for range n {
			var e RankEnd
			r := c.uvarint()
			if r >= uint64(len(t.Ranks)) && !c.bad {
				return fmt.Errorf("rank index %d out of range (%d ranks) in rank ends", r, len(t.Ranks))
			}
			e.Rank = int(r)
			e.Lost = c.uvarint()
			e.End = c.str()
			ends = append(ends, e)
		}
		if err := c.done("rank ends"); err != nil {
			return err
		}
		t.Ends = append(t.Ends, ends...)

	case chunkClose:
		var got [5]uint64
		for i := range got {
			got[i] = c.uvarint()
		}
		if err := c.done("closing"); err != nil {
			return err
		}
		have := [5]int{d.nevents, len(t.Calls), len(t.Sites), len(t.Ranks), len(t.Ends)}
		names := [5]string{"events", "calls", "sites", "ranks", "rank ends"}
		if got[0] > math.MaxInt32 {
			return fmt.Errorf("closing record counts %d events, more than a file holds", got[0])
		}
		d.closed = true
		if d.damaged {
			// Events were skipped; the definitions must all be there.
			d.written = int(got[0])
			d.defsLost = got[1] != uint64(have[1]) || got[2] != uint64(have[2]) || got[3] != uint64(have[3])
			return nil
		}
		for i := range got {
			if got[i] != uint64(have[i]) {
				return fmt.Errorf("closing record counts %d %s but the file holds %d", got[i], names[i], have[i])
			}
		}
		d.written = int(got[0])
		t.Complete = true

	default:
		return fmt.Errorf("unknown chunk type %s", typeName(typ))
	}
	return nil
}

// events decodes an events chunk; see the package documentation.
func (d *decoder) events(c *cursor) error {
	t := d.t
	n := c.uvarint()
	if c.bad || n > eventsPerChunk || n > uint64(len(c.b))/3 {
		return errors.New("bad event count in events chunk")
	}
	base := len(t.Events)
	evs := t.Events
	if cap(evs)-len(evs) < int(n) {
		// Double rather than let append grow by a quarter: traces run to
		// millions of events.
		evs = make([]Event, len(evs), max(2*cap(evs), len(evs)+int(n)))
		copy(evs, t.Events)
	}
	streams := d.streams[:0]
	cur := -1
	last := initialState()
	ncalls, nsites, nranks := uint64(len(t.Calls)), uint64(len(t.Sites)), uint64(len(t.Ranks))

	fail := func(format string, a ...any) error {
		t.Events = evs[:base]
		d.streams = streams[:0]
		return fmt.Errorf(format, a...)
	}
	for i := range int(n) {
		flags := c.byte()
		if flags&flagStream != 0 {
			sid := c.uvarint()
			switch {
			case sid == uint64(len(streams)):
				rank := c.uvarint()
				tid := c.varint()
				if rank >= nranks && !c.bad {
					return fail("rank index %d out of range (%d ranks) in event %d of events chunk", rank, nranks, i)
				}
				if tid != int64(int32(tid)) {
					return fail("thread id %d out of range in event %d of events chunk", tid, i)
				}
				st := last
				st.Rank, st.TID = int(rank), int32(tid)
				streams = append(streams, st)
			case sid > uint64(len(streams)):
				return fail("stream %d not opened before event %d of events chunk", sid, i)
			}
			cur = int(sid)
		} else if cur < 0 {
			return fail("first event of events chunk names no stream")
		}
		if c.bad {
			break
		}
		e := streams[cur]
		if flags&flagCall != 0 {
			v := c.uvarint()
			if v >= ncalls && !c.bad {
				return fail("call index %d out of range (%d calls) in event %d of events chunk", v, ncalls, i)
			}
			e.Call = int(v)
		}
		if flags&flagSite != 0 {
			v := c.uvarint()
			if v >= nsites && !c.bad {
				return fail("site index %d out of range (%d sites) in event %d of events chunk", v, nsites, i)
			}
			e.Site = int(v)
		}
		ok := true
		if flags&flagPeer != 0 {
			e.Peer, ok = addInt32(e.Peer, c.varint())
		}
		if flags&flagRoot != 0 && ok {
			e.Root, ok = addInt32(e.Root, c.varint())
		}
		if flags&flagCount != 0 {
			e.Count += c.varint()
		}
		if flags&flagElemSize != 0 && ok {
			e.ElemSize, ok = addInt32(e.ElemSize, c.varint())
		}
		if flags&flagRet != 0 && ok {
			e.Ret, ok = addInt32(e.Ret, c.varint())
		}
		if !ok {
			return fail("32-bit field out of range in event %d of events chunk", i)
		}
		if (uint64(e.Call) >= ncalls || uint64(e.Site) >= nsites) && !c.bad {
			// Call 0 and Site 0 are where a chunk starts from, so they
			// need checking even when not written.
			return fail("call %d or site %d out of range (%d calls, %d sites) in event %d of events chunk", e.Call, e.Site, ncalls, nsites, i)
		}
		e.Enter = e.Exit + c.varint()
		e.Exit = e.Enter + c.varint()
		if c.bad {
			break
		}
		streams[cur] = e
		last = e
		evs = append(evs, e)
	}
	if err := c.done("events"); err != nil {
		return fail("%v", err)
	}
	t.Events = evs
	d.streams = streams[:0]
	d.eventChunks++
	d.nevents += int(n)
	if d.emit != nil {
		d.emitErr = d.emit(t, evs[base:])
		t.Events = evs[:0]
	}
	return nil
}

// addInt32 adds a decoded difference to an int32 field, reporting whether
// the result is an int32.
func addInt32(v int32, delta int64) (int32, bool) {
	s := int64(v) + delta
	return int32(s), s == int64(int32(s))
}

func typeName(typ byte) string {
	if typ >= 'A' && typ <= 'Z' {
		return fmt.Sprintf("%q", typ)
	}
	return fmt.Sprintf("0x%02x", typ)
}

// cursor decodes a payload. Once a read fails, bad is set and every further
// read returns zero.
type cursor struct {
	b   []byte
	bad bool
}

func (c *cursor) fail() {
	c.bad = true
	c.b = nil
}

func (c *cursor) byte() byte {
	if len(c.b) == 0 {
		c.fail()
		return 0
	}
	v := c.b[0]
	c.b = c.b[1:]
	return v
}

func (c *cursor) uvarint() uint64 {
	if len(c.b) > 0 && c.b[0] < 0x80 {
		v := c.b[0]
		c.b = c.b[1:]
		return uint64(v)
	}
	v, n := binary.Uvarint(c.b)
	if n <= 0 {
		c.fail()
		return 0
	}
	c.b = c.b[n:]
	return v
}

func (c *cursor) varint() int64 {
	u := c.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// int reads a varint that must fit in an int.
func (c *cursor) int() int {
	v := c.varint()
	if v < math.MinInt || v > math.MaxInt {
		c.fail()
		return 0
	}
	return int(v)
}

// count reads a number of items that take at least size bytes each, and
// checks that the payload can hold them.
func (c *cursor) count(size int) int {
	n := c.uvarint()
	if n > uint64(len(c.b)/size) {
		c.fail()
		return 0
	}
	return int(n)
}

func (c *cursor) str() string {
	n := c.uvarint()
	if n > uint64(len(c.b)) {
		c.fail()
		return ""
	}
	s := string(c.b[:n])
	c.b = c.b[n:]
	return s
}

// done checks that the payload of a what chunk decoded exactly.
func (c *cursor) done(what string) error {
	switch {
	case c.bad:
		return fmt.Errorf("undecodable %s chunk", what)
	case len(c.b) > 0:
		return fmt.Errorf("%d stray bytes at the end of a %s chunk", len(c.b), what)
	}
	return nil
}
