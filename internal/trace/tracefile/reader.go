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
// A nil error means the file was read through its closing record. A file cut
// short or damaged gives both the Trace read before the damage (Complete
// false) and an error naming the byte offset of the damage; callers that
// show traces should show that Trace along with the error. The Trace is nil
// only when there is nothing to show: the file is empty, is not a trace,
// ends inside its signature or version, or has a newer format version.
func Read(r io.Reader) (*Trace, error) {
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
		return nil, fmt.Errorf("trace file damaged at byte %d (it ends inside the file signature): nothing to show, record the trace again", s.off)
	case err != nil:
		return nil, fmt.Errorf("reading trace file at byte %d: %v: check the file and try again", s.off, err)
	}

	v, err := binary.ReadUvarint(s)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return nil, fmt.Errorf("trace file damaged at byte %d (it ends before the format version): nothing to show, record the trace again", s.off)
	case err != nil && s.ioErr != nil:
		return nil, fmt.Errorf("reading trace file at byte %d: %v: check the file and try again", s.off, err)
	case err != nil:
		return nil, fmt.Errorf("trace file damaged at byte %d (unreadable format version): nothing to show, record the trace again", len(magic))
	case v > Version:
		return nil, fmt.Errorf("trace file version %d is newer than this mpiprobe reads (%d): use a newer mpiprobe", v, Version)
	case v == 0:
		return nil, fmt.Errorf("trace file damaged at byte %d (format version 0 does not exist): nothing to show, record the trace again", len(magic))
	}

	t := &Trace{Version: int(v)}
	d := &decoder{t: t}
	for {
		start := s.off
		typ, err := s.ReadByte()
		if err == io.EOF {
			break
		}
		if err != nil {
			return t, d.ioError(start, err)
		}
		if t.Complete {
			return t, fmt.Errorf("trace file has unexpected data after its closing record, from byte %d (ignored): showing the %d events before it", start, len(t.Events))
		}
		length, err := binary.ReadUvarint(s)
		if err != nil {
			if s.ioErr != nil {
				return t, d.ioError(start, s.ioErr)
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return t, d.damaged(start, "cut off inside a chunk")
			}
			return t, d.damaged(start, "unreadable chunk length")
		}
		if length > maxPayload {
			return t, d.damaged(start, fmt.Sprintf("chunk length %d over the limit of %d", length, maxPayload))
		}
		d.buf, err = s.payload(d.buf, int(length))
		var sum [4]byte
		if err == nil {
			err = s.full(sum[:])
		}
		if err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return t, d.damaged(start, "cut off inside a chunk")
			}
			return t, d.ioError(start, err)
		}
		if binary.LittleEndian.Uint32(sum[:]) != chunkCRC(typ, d.buf) {
			return t, d.damaged(start, "crc mismatch")
		}
		if err := d.chunk(typ, d.buf); err != nil {
			return t, d.damaged(start, err.Error())
		}
	}
	if !t.Complete {
		return t, fmt.Errorf("trace file ends without its closing record (mpiprobe was interrupted?): showing the %d events read", len(t.Events))
	}
	return t, nil
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
}

func (d *decoder) damaged(off int64, cause string) error {
	return fmt.Errorf("trace file damaged at byte %d (%s): showing the %d events before it", off, cause, len(d.t.Events))
}

func (d *decoder) ioError(off int64, err error) error {
	return fmt.Errorf("reading trace file at byte %d: %v: showing the %d events before it", off, err, len(d.t.Events))
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
		have := [5]int{len(t.Events), len(t.Calls), len(t.Sites), len(t.Ranks), len(t.Ends)}
		names := [5]string{"events", "calls", "sites", "ranks", "rank ends"}
		for i := range got {
			if got[i] != uint64(have[i]) {
				return fmt.Errorf("closing record counts %d %s but the file holds %d", got[i], names[i], have[i])
			}
		}
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
