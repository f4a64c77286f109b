package mpiabi

import "encoding/binary"

// MPICH ch4 (with UCX): a communicator's members from its rank map; a
// point-to-point request from MPIR_Request and the UCX request behind it
// (the UCX tag holds the context id, the source rank and the tag).

// The modes of MPICH ch4's rank map (enum MPIDI_rank_map_mode), in
// pairs: each plain mode names an address table, its _INTRA twin is
// table 0 (WORLD's processes).
const (
	mapDirect      = 0
	mapOffset      = 2
	mapStride      = 4
	mapStrideBlock = 6
	mapLUT         = 8
)

// MPICHMembers returns the WORLD ranks of an MPICH ch4 communicator's
// members, in its rank order, from its rank map (an MPIDI_rank_map_t at
// MapOff: mode, address table, size, then offset, stride and block size,
// then the lookup table's two pointers). It returns nil when the map's
// place is unknown, when the map names another address table than
// WORLD's (spawned or connected processes), for the multi-table and
// empty modes, and above MaxMembers. Under ch3, which has no rank map,
// they come from the connection table (ch3Members).
func (r CommReader) MPICHMembers(comm uint64) []int {
	l := r.Layout
	if l.Kind == LayoutMPICH && l.MapOff == 0 && l.VCRTOff != 0 {
		return r.ch3Members(comm)
	}
	if l.Kind != LayoutMPICH || l.MapOff == 0 {
		return nil
	}
	var b [40]byte
	if r.Mem(comm+uint64(l.MapOff), b[:]) != nil {
		return nil
	}
	i32 := func(off int) int { return int(int32(binary.LittleEndian.Uint32(b[off:]))) }
	mode, table, n := i32(0), i32(4), i32(8)
	offset, stride, block := i32(12), i32(16), i32(20)
	if table != 0 || n <= 0 || n > MaxMembers || mode < 0 {
		return nil
	}
	out := make([]int, n)
	switch mode &^ 1 {
	case mapDirect:
		for i := range out {
			out[i] = i
		}
	case mapOffset:
		for i := range out {
			out[i] = i + offset
		}
	case mapStride:
		for i := range out {
			out[i] = i*stride + offset
		}
	case mapStrideBlock:
		if block <= 0 {
			return nil
		}
		for i := range out {
			out[i] = i/block*(stride-block) + i + offset
		}
	case mapLUT:
		lpids := binary.LittleEndian.Uint64(b[32:])
		raw := make([]byte, 4*n)
		if lpids == 0 || r.Mem(lpids, raw) != nil {
			return nil
		}
		for i := range out {
			out[i] = int(int32(binary.LittleEndian.Uint32(raw[4*i:])))
		}
	default:
		return nil
	}
	for _, w := range out {
		if w < 0 || w >= MaxRank {
			return nil
		}
	}
	return out
}

// MPICHRequest reads an MPICH request at addr that is still in flight.
// comm is the communicator object the stack shows (0 if none): when its
// context id is the request's, it names the request's communicator.
func (r RequestReader) MPICHRequest(addr, comm uint64) (Request, bool) {
	l, u := r.Req, r.UCP
	if addr%8 != 0 {
		return Request{}, false
	}
	h, ok := r.u32(addr)
	if !ok || (h>>26)&0xf != l.HandleKind || h>>30 == 0 {
		return Request{}, false
	}
	kind, ok1 := r.u32(addr + uint64(l.KindOff))
	ccp, ok2 := r.u64(addr + uint64(l.CCPtrOff))
	if !ok1 || !ok2 {
		return Request{}, false
	}
	if cc, ok := r.u32(ccp); !ok || cc == 0 {
		return Request{}, false // complete
	}
	if kind != l.KindSend && kind != l.KindRecv {
		// A started persistent request (MPI_Recv_init, MPI_Send_init,
		// then MPI_Start) completes with the request MPI_Start made:
		// its completion counter pointer points to that one's counter.
		if real, ok := r.behind(addr, ccp); ok {
			return r.MPICHRequest(real, comm)
		}
		return Request{}, false
	}
	send := kind == l.KindSend
	if r.CH3 != nil {
		return r.ch3Request(addr, send, r.stackAndWorld(comm))
	}
	if lr := r.UCPLearn; lr != nil {
		if send && !lr.send || !send && !lr.recv {
			var cs []ucpComm
			for _, cm := range r.stackAndWorld(comm) {
				cid, ok := r.u32(cm + uint64(r.Comms.Layout.CIDOff))
				if _, me, ok2 := r.Comms.Comm(cm); cm != 0 && ok && ok2 {
					cs = append(cs, ucpComm{uint16(cid & r.Comms.Layout.CIDMask), me})
				}
			}
			r.learnUCP(addr, send, cs)
		}
		switch {
		case send && !lr.send:
			return r.otherOfTwo(r.stackAndWorld(comm))
		case !send && !lr.recv:
			return Request{}, false
		}
		u = lr.l
	}
	userOff, tagOff := u.RecvUserOff, u.RecvTagOff
	if send {
		userOff, tagOff = u.SendUserOff, u.SendTagOff
	}
	ureq, ok := r.ucpRequest(addr, l.UCPReqOff, userOff)
	if !ok {
		return Request{}, false
	}
	tag, ok := r.u64(ureq + uint64(int64(tagOff)))
	if !ok {
		return Request{}, false
	}
	mask := ^uint64(0)
	if !send {
		var ok bool
		if mask, ok = r.u64(ureq + uint64(int64(u.RecvMaskOff))); !ok {
			return Request{}, false
		}
	}
	tagMask := uint64(1)<<l.TagBits - 1
	w := Request{Send: send, Peer: PeerUnknown, CommPeer: -1, Tag: int(tag & tagMask), Known: true}
	if ucpAnyTag(mask, l.TagBits) {
		w.Tag = AnyTag
	}
	ctx := uint32(tag >> 48)
	src := int(tag >> 32 & 0xffff)
	var c Comm
	var commObj uint64
	haveComm, world, myRank := false, false, -1
	// The communicator: the stack's, else WORLD, when its context id is
	// the request's.
	cands := []uint64{comm}
	if wc, ok := r.Comms.MPICHObject(MPICHWorld); ok {
		cands = append(cands, wc)
	}
	for _, cm := range cands {
		if cm == 0 || haveComm {
			continue
		}
		if cid, ok := r.u32(cm + uint64(r.Comms.Layout.CIDOff)); ok && cid&r.Comms.Layout.CIDMask == ctx {
			if c, myRank, ok = r.Comms.Comm(cm); ok {
				haveComm, world, commObj = true, c.Name == "WORLD", cm
				w.Comm = &c
			}
		}
	}
	switch {
	case send:
		// A send's tag holds the sender's own rank: it checks the
		// reading; the destination is UCX's endpoint, not read here.
		if haveComm && myRank >= 0 && src != myRank {
			return Request{}, false
		}
		// Inferred: on WORLD of two ranks, the other one (a blocked
		// send to itself is the rare exception).
		w.Known = false
		if world && c.Size == 2 && (myRank == 0 || myRank == 1) {
			w.Peer = 1 - myRank
		}
	case mask>>32&0xffff == 0:
		w.Peer = AnySource
	case haveComm && c.Size > 0 && src >= c.Size:
		return Request{}, false
	case world:
		w.Peer = src
	default:
		// Another communicator: its rank map names the source's WORLD
		// rank (an intercommunicator's map is its remote group, which
		// a receive's source counts in).
		w.CommPeer = src
		if m := r.Comms.MPICHMembers(commObj); haveComm && src < len(m) {
			w.Peer, w.CommPeer = m[src], -1
		}
	}
	return w, true
}

// ccSearch bounds how far before its completion counter a request's
// header may start (0x18 in Debian's 4.0.2: handle, ref_count, kind,
// cc_ptr, then cc).
const ccSearch = 0x40

// behind returns the request whose completion counter, at ccp, the
// request at addr shares: a point-to-point request other than addr whose
// own counter pointer is ccp. Nothing else is taken for it.
func (r RequestReader) behind(addr, ccp uint64) (uint64, bool) {
	l := r.Req
	for d := uint64(8); d <= ccSearch && d <= ccp; d += 8 {
		real := ccp - d
		if real == addr {
			continue
		}
		h, ok := r.u32(real)
		if !ok || (h>>26)&0xf != l.HandleKind || h>>30 == 0 {
			continue
		}
		kind, ok1 := r.u32(real + uint64(l.KindOff))
		own, ok2 := r.u64(real + uint64(l.CCPtrOff))
		if ok1 && ok2 && own == ccp && (kind == l.KindSend || kind == l.KindRecv) {
			return real, true
		}
	}
	return 0, false
}

// ucpSearch bounds where an MPICH request of a build the table does not
// hold may keep its UCX request pointer (0xb0 in Debian's 4.0.2).
const ucpSearch = 0x400

// ucpRequest returns the UCX request of the MPICH request at addr: the
// pointer at off, or, when off is 0 (a build the table does not hold),
// the first pointer in the request whose UCX request points back to it at
// userOff. A pointer that does not point back is not the request's.
func (r RequestReader) ucpRequest(addr uint64, off uint32, userOff int32) (uint64, bool) {
	backTo := func(ureq uint64) bool {
		back, ok := r.u64(ureq + uint64(int64(userOff)))
		return ok && ureq != 0 && ureq%8 == 0 && back == addr
	}
	if off != 0 {
		ureq, ok := r.u64(addr + uint64(off))
		return ureq, ok && backTo(ureq)
	}
	buf := make([]byte, ucpSearch)
	if r.Mem(addr, buf) != nil {
		return 0, false
	}
	// Past the header: handle, ref_count, kind, cc_ptr and cc.
	for o := 0x20; o+8 <= len(buf); o += 8 {
		if ureq := binary.LittleEndian.Uint64(buf[o:]); backTo(ureq) {
			return ureq, true
		}
	}
	return 0, false
}

// stackAndWorld returns the communicators a request may be on: the
// stack's and WORLD.
func (r RequestReader) stackAndWorld(comm uint64) []uint64 {
	out := []uint64{comm}
	if wc, ok := r.Comms.MPICHObject(MPICHWorld); ok && wc != comm {
		out = append(out, wc)
	}
	return out
}

// otherOfTwo is a send whose destination and tag cannot be read: as under
// UCX, on WORLD of two ranks (one of comms) the destination is inferred
// as the other rank.
func (r RequestReader) otherOfTwo(comms []uint64) (Request, bool) {
	for _, cm := range comms {
		if c, me, ok := r.Comms.Comm(cm); ok && cm != 0 && c.Name == "WORLD" && c.Size == 2 && (me == 0 || me == 1) {
			return Request{Send: true, Peer: 1 - me, CommPeer: -1, Tag: TagUnknown, Comm: &c}, true
		}
	}
	return Request{}, false
}
