package mpiabi

import (
	"slices"
	"strings"
)

// FrameRequests completes the requests ws an MPICH thread waits on in an
// API function with the arguments that function keeps in its frame (a,
// from the table of checked builds or InferMPICHFrameArgs): MPI_Ssend's
// destination, which its request does not hold, and MPI_Probe's source and
// tag, for which there is no request. slot reads one of a's slots of the
// frame (the caller unwinds), sp is the frame's stack pointer, call the
// API call and comm the communicator the thread's stack names. Only what
// passes the checks is taken: the frame's request is the one read, or the
// frame's communicator handle names the request's communicator or is a
// communicator; the rank is one of the communicator's.
func (r RequestReader) FrameRequests(a MPICHFrameArgs, slot func(FrameSlot) (int32, bool), sp uint64, call string, comm uint64, ws []Request) []Request {
	peer, okPeer := slot(a.Peer)
	tag, okTag := slot(a.Tag)
	okTag = okTag && !a.NoTag
	if !okPeer {
		return ws
	}
	// frameComm is the communicator the frame's handle names.
	frameComm := func() (Comm, bool) {
		h, ok := slot(a.Handle)
		if !ok || !a.HasHandle {
			return Comm{}, false
		}
		cm, ok := r.Comms.MPICHObject(uint32(h))
		if !ok || !r.Comms.IsComm(cm) {
			return Comm{}, false
		}
		c, _, ok := r.Comms.Comm(cm)
		return c, ok
	}
	if a.ReqOff != 0 || (a.HasHandle && len(ws) > 0) {
		// A send: its request was read. The frame's request must be
		// it, or the frame's tag and communicator must single it out.
		var (
			i int
			w Request
		)
		if a.ReqOff != 0 {
			req, ok := r.Mem.U64(sp + uint64(a.ReqOff))
			if !ok {
				return ws
			}
			if w, ok = r.MPICHRequest(req, comm); !ok || !okTag || int(tag) != w.Tag {
				return ws
			}
			i = slices.IndexFunc(ws, func(x Request) bool {
				return x.Send == w.Send && x.Tag == w.Tag && x.Peer == w.Peer && x.CommPeer == w.CommPeer &&
					(x.Comm == nil) == (w.Comm == nil) && (x.Comm == nil || *x.Comm == *w.Comm)
			})
		} else {
			c, ok := frameComm()
			if !ok || !okTag {
				return ws
			}
			i = -1
			for j, x := range ws {
				// The send's tag, or a send whose tag and destination
				// were not read (otherOfTwo: inferred, not read).
				tagged := x.Tag == int(tag) && x.Peer == PeerUnknown
				unread := x.Tag == TagUnknown && !x.Known
				if x.Send && (tagged || unread) && x.CommPeer < 0 && x.Comm != nil && *x.Comm == c {
					if i >= 0 {
						return ws // two such sends: which one is the frame's?
					}
					i = j
				}
			}
			if i >= 0 {
				w = ws[i]
			}
		}
		if i < 0 {
			return ws
		}
		c := w.Comm
		if peer < 0 || peer >= MaxRank || (c != nil && c.Size > 0 && int(peer) >= c.Size) {
			return ws
		}
		w.Known, w.Peer, w.CommPeer = !a.PeerMaybe, PeerUnknown, -1
		if w.Tag == TagUnknown && tag >= 0 && tag < MaxTag {
			w.Tag = int(tag)
		}
		if c != nil && c.Name == "WORLD" {
			w.Peer = int(peer)
		} else {
			w.CommPeer = int(peer)
		}
		out := slices.Clone(ws)
		out[i] = w
		return out
	}
	if len(ws) > 0 {
		return ws // requests were read: they say more
	}
	// No request: the frame's communicator.
	var (
		c  Comm
		ok bool
	)
	switch {
	case a.HasHandle:
		if c, ok = frameComm(); !ok {
			return ws
		}
	case a.CommOff != 0:
		// The communicator in the frame must carry the frame's handle
		// (an MPICH object starts with its handle).
		cm, ok1 := r.Mem.U64(sp + uint64(a.CommOff))
		h, ok2 := r.Mem.U32(sp + uint64(a.HandleOff))
		if !ok1 || !ok2 || !r.Comms.IsComm(cm) {
			return ws
		}
		if ch, ok := r.Mem.U32(cm); !ok || ch != h {
			return ws
		}
		if c, _, ok = r.Comms.Comm(cm); !ok {
			return ws
		}
	default:
		return ws
	}
	// A probe, or a send whose request could not be read (the UCX
	// request of a libucp build not yet learnt): the frame alone.
	send := !strings.HasSuffix(strings.ToLower(call), "probe")
	w := Request{Send: send, Peer: PeerUnknown, CommPeer: -1, Tag: TagUnknown, Comm: &c, Known: !a.PeerMaybe}
	switch {
	case peer == r.Req.AnySource && !send:
		w.Peer = AnySource
	case peer < 0 || peer >= MaxRank || (c.Size > 0 && int(peer) >= c.Size):
		return ws
	case c.Name == "WORLD":
		w.Peer = int(peer)
	default:
		w.CommPeer = int(peer)
	}
	switch {
	case !okTag:
	case tag == r.Req.AnyTag:
		w.Tag = AnyTag
	case tag >= 0 && tag < MaxTag:
		w.Tag = int(tag)
	}
	return []Request{w}
}
