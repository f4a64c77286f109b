package mpiabi

import "encoding/binary"

// MPICH without UCX (ch3, MPICH 3.x and its derivatives): a request keeps
// what it matches in dev.match, a union of {int32 tag, int16 rank, uint16
// context id} with a word, and a posted receive its mask in dev.mask
// right after it ({~0 or 0 for MPI_ANY_TAG, ~0 or 0 for MPI_ANY_SOURCE,
// ~0}). Where dev lies after the common request header depends on the
// build, so the match is found by that signature in a receive and its
// offset learnt for the build (CH3Match), then read in sends, which have
// no mask.

// CH3Match is the offset of dev.match that receives showed for one
// build, shared by the processes of a status run; 0 until learnt.
type CH3Match struct{ off uint32 }

// The bounds of the search for dev.match: past the header and status
// (MPIR_Request.u follows at 0x48), within the request.
const (
	ch3SearchFrom = 0x48
	ch3SearchTo   = 0x400
)

// ch3Fields is one candidate match and mask.
type ch3Fields struct {
	tag, mtag     int32
	rank, mrank   int16
	ctx, mctx     uint16
	anyTag, anySr bool
}

func ch3At(b []byte, off int) ch3Fields {
	f := ch3Fields{
		tag: int32(binary.LittleEndian.Uint32(b[off:])), rank: int16(binary.LittleEndian.Uint16(b[off+4:])),
		ctx:  binary.LittleEndian.Uint16(b[off+6:]),
		mtag: int32(binary.LittleEndian.Uint32(b[off+8:])), mrank: int16(binary.LittleEndian.Uint16(b[off+12:])),
		mctx: binary.LittleEndian.Uint16(b[off+14:]),
	}
	f.anyTag, f.anySr = f.mtag == 0, f.mrank == 0
	return f
}

// postedReceive reports whether f is a posted receive's match and mask:
// a context id mask of all ones, a rank and tag mask of all ones, or 0
// for MPI_ANY_SOURCE and MPI_ANY_TAG (the tag's with the error bits
// cleared).
func (f ch3Fields) postedReceive(anySource, anyTag int32) bool {
	switch {
	case f.mctx != 0xffff:
		return false
	case f.mrank != -1 && f.mrank != 0, f.anySr != (int32(f.rank) == anySource), !f.anySr && f.rank < 0:
		return false
	case f.mtag != -1 && f.mtag != 0 && f.mtag&0x3fffffff != 0x3fffffff:
		return false
	case f.anyTag != (f.tag == anyTag), !f.anyTag && f.tag < 0:
		return false
	}
	return true
}

// ch3Request reads the match of a ch3 request at addr (its header checked
// by the caller): the peer and tag of a receive, the destination and tag
// of a send. The match's offset is learnt from the first receive of the
// build: the lowest place after the header that holds a posted receive's
// match and mask (dev.match is dev's first field, on any communicator,
// collective contexts included). comms are the candidate communicators
// (the stack's, WORLD); the match's context id must be one's.
func (r RequestReader) ch3Request(addr uint64, send bool, comms []uint64) (Request, bool) {
	buf := make([]byte, ch3SearchTo+16)
	if r.Mem(addr, buf) != nil || r.CH3 == nil {
		return Request{}, false
	}
	l := r.Req
	if r.CH3.off == 0 && !send {
		for off := ch3SearchFrom; off+16 <= len(buf); off += 8 {
			if ch3At(buf, off).postedReceive(l.AnySource, l.AnyTag) {
				r.CH3.off = uint32(off)
				break
			}
		}
	}
	if r.CH3.off == 0 {
		// A send before any receive showed the match.
		if send {
			return r.otherOfTwo(comms)
		}
		return Request{}, false
	}
	f := ch3At(buf, int(r.CH3.off))
	if !send && !f.postedReceive(l.AnySource, l.AnyTag) || send && f.rank < 0 {
		return Request{}, false
	}
	for _, cm := range comms {
		if cm == 0 {
			continue
		}
		cid, ok := r.u32(cm + uint64(r.Comms.Layout.CIDOff))
		if !ok || f.ctx != uint16(cid&r.Comms.Layout.CIDMask) {
			continue
		}
		c, _, ok := r.Comms.Comm(cm)
		if !ok || (c.Size > 0 && int(f.rank) >= c.Size) {
			continue
		}
		w := Request{Send: send, Peer: PeerUnknown, CommPeer: -1, Tag: int(f.tag), Comm: &c, Known: true}
		if !send && f.anyTag {
			w.Tag = AnyTag
		}
		switch {
		case !send && f.anySr:
			w.Peer = AnySource
		case c.Name == "WORLD":
			w.Peer = int(f.rank)
		default:
			w.CommPeer = int(f.rank)
		}
		return w, true
	}
	return Request{}, false
}

// ch3Members returns the WORLD ranks of an MPICH ch3 communicator's
// members from its connection table (dev.vcrt: a size, then one
// MPIDI_VC_t pointer per rank, each connection holding its rank in its
// process group). nil when a member's rank is not a plausible WORLD rank
// (a spawned or connected process group) or above MaxMembers.
func (r CommReader) ch3Members(comm uint64) []int {
	l := r.Layout
	var b [8]byte
	if r.Mem(comm+uint64(l.VCRTOff), b[:]) != nil {
		return nil
	}
	vcrt := binary.LittleEndian.Uint64(b[:])
	if vcrt == 0 || r.Mem(vcrt+uint64(l.VCRTSizeOff), b[:4]) != nil {
		return nil
	}
	n := int(int32(binary.LittleEndian.Uint32(b[:4])))
	if n <= 0 || n > MaxMembers {
		return nil
	}
	raw := make([]byte, 8*n)
	if r.Mem(vcrt+uint64(l.VCRTEntriesOff), raw) != nil {
		return nil
	}
	out := make([]int, n)
	for i := range out {
		vc := binary.LittleEndian.Uint64(raw[8*i:])
		if vc == 0 || r.Mem(vc+uint64(l.VCRankOff), b[:4]) != nil {
			return nil
		}
		if out[i] = int(int32(binary.LittleEndian.Uint32(b[:4]))); out[i] < 0 || out[i] >= MaxRank {
			return nil
		}
	}
	return out
}
