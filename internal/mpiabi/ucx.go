package mpiabi

import (
	"encoding/binary"
	"slices"
)

// UCPLearnt is the request layout of a libucp build the table does not
// hold (another UCX release or configure line), learnt from the first
// requests read and shared by the processes of the build: a receive gives
// the receive fields, a send the send fields.
type UCPLearnt struct {
	recv, send bool
	l          UCPReqLayout
}

// The bounds of the search in a UCX request: the user data pointer and
// the tag precede the user's part (ucp_request_t comes first) or start
// it.
const (
	ucpFieldsFrom = -0x200
	ucpFieldsTo   = 0x40
)

// ucpWindow is what a learner reads around a UCX request: the bytes from
// ureq+ucpFieldsFrom to ureq+ucpFieldsTo.
type ucpWindow struct {
	ureq uint64
	b    []byte
}

func (w ucpWindow) at(off int) uint64 {
	return binary.LittleEndian.Uint64(w.b[off-ucpFieldsFrom:])
}

// ucpWindows returns, for the MPICH request at addr, the UCX requests it
// may point to (a pointer at or past 0x20 in it, as ucpRequest searches)
// with their surroundings.
func (r RequestReader) ucpWindows(addr uint64) []ucpWindow {
	buf := make([]byte, ucpSearch)
	if r.Mem(addr, buf) != nil {
		return nil
	}
	var out []ucpWindow
	for o := 0x20; o+8 <= len(buf); o += 8 {
		ureq := binary.LittleEndian.Uint64(buf[o:])
		if ureq == 0 || ureq%8 != 0 || ureq < -ucpFieldsFrom {
			continue
		}
		w := ucpWindow{ureq: ureq, b: make([]byte, ucpFieldsTo-ucpFieldsFrom)}
		if r.Mem(ureq-uint64(-ucpFieldsFrom), w.b) == nil {
			out = append(out, w)
		}
	}
	return out
}

// ucpMask reports whether m is a tag mask MPICH gives an expected
// receive: the context id always matched, the source all or nothing
// (MPI_ANY_SOURCE), the user's tag bits all or nothing (MPI_ANY_TAG).
func ucpMask(m uint64, tagBits uint32) bool {
	src := m >> 32 & 0xffff
	user := ucpUserTagBits(tagBits)
	return m>>48 == 0xffff && (src == 0xffff || src == 0) && (m&user == user || ucpAnyTag(m, tagBits))
}

// ucpUserTagBits are the bits of a tag the user's tag is in: below
// MPICH's own error bit, the highest of the tagBits.
func ucpUserTagBits(tagBits uint32) uint64 { return uint64(1)<<(tagBits-1) - 1 }

// ucpAnyTag reports whether the receive mask m matches any tag. MPICH
// clears the user's tag bits for MPI_ANY_TAG but keeps its own bits above
// them (MPICH 4.0.2 with UCX: 0x90000000 in the low word, so the tag was
// read as 0 when every one of the tagBits was taken for the user's).
func ucpAnyTag(m uint64, tagBits uint32) bool { return m&ucpUserTagBits(tagBits) == 0 }

// ucpComm is a communicator a request may be on: its context id and the
// process's rank in it.
type ucpComm struct {
	cid uint16
	me  int
}

// learnUCP learns where a libucp build keeps a tag request's fields (the
// caller has not learnt them yet for this direction) from the MPICH
// request at addr, on one of the communicators comms: the user
// data pointer is the place in a UCX request that points back to addr; a
// receive's tag and mask are two words in a row, the mask one MPICH gives
// (ucpMask) and the tag inside it with a communicator's context id, after
// the user data pointer when that is UCX's own field; a
// send's tag is a word with a communicator's context id and the process's
// own rank in it as the source. The nearest such place before the user's
// part is taken.
func (r RequestReader) learnUCP(addr uint64, send bool, comms []ucpComm) {
	lr := r.UCPLearn
	if len(comms) == 0 {
		return
	}
	on := func(t uint64, sender bool) bool {
		for _, c := range comms {
			if uint16(t>>48) == c.cid && (!sender || (c.me >= 0 && int(t>>32&0xffff) == c.me)) {
				return true
			}
		}
		return false
	}
	// A send's tag with context id 0 (WORLD's) and source 0 is any small
	// number: rank 0's sends on WORLD teach nothing.
	if send && slices.IndexFunc(comms, func(c ucpComm) bool { return c.cid != 0 || c.me > 0 }) < 0 {
		return
	}
	for _, w := range r.ucpWindows(addr) {
		for uo := ucpFieldsFrom; uo+8 <= ucpFieldsTo; uo += 8 {
			if w.at(uo) != addr {
				continue
			}
			// The fields precede the user's part, nearest first. A
			// back pointer in UCX's own request (user_data, before the
			// user's part) comes before the tag fields: below it lies
			// the request before in UCX's pool, a receive too, maybe.
			for to := -8; to >= ucpFieldsFrom && (uo >= 0 || to > uo); to -= 8 {
				t := w.at(to)
				switch {
				case !send && to <= -16 && on(t, false) && ucpMask(w.at(to+8), r.Req.TagBits) && t&^w.at(to+8) == 0:
					lr.l.RecvUserOff, lr.l.RecvTagOff, lr.l.RecvMaskOff, lr.recv = int32(uo), int32(to), int32(to+8), true
					return
				case send && t>>32 != 0 && on(t, true) && uint32(t) < MaxTag:
					lr.l.SendUserOff, lr.l.SendTagOff, lr.send = int32(uo), int32(to), true
					return
				}
			}
		}
	}
}
