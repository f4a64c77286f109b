package status

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/status/unwind"
	"github.com/mpiprobe/mpiprobe/internal/symbolize"
)

// frameArgs completes an MPICH thread's waits with the arguments its API
// function keeps in its frame (mpiabi.MPICHFrameArgs): MPI_Ssend's
// destination, which its request does not hold, and MPI_Probe's source
// and tag, for which there is no request. The slots come from the table
// of checked builds or, for another build, from decoding the function
// (inferredFrameArgs). Only at the return addresses they were found for,
// and only what passes the checks (the frame's request is the one read,
// or the frame's communicator handle names the request's communicator
// or is a communicator; the rank is one of the communicator's) is taken.
func (p *process) frameArgs(mem procfs.Memory, fs []unwind.Frame, regs unwind.Regs, frames []symbolize.Site, in inMPI, comm uint64, ws []mpiabi.Request) []mpiabi.Request {
	r := p.p2p
	if !r.OK || r.Kind() != mpiabi.LayoutMPICH || in.API <= 0 || in.API >= len(fs) || in.API >= len(frames) {
		return ws
	}
	f := fs[in.API]
	m, ok := p.mapping(f.PC - 1)
	if !ok || m.Path != p.lib {
		return ws
	}
	bias, ok := p.bias(m)
	if !ok {
		return ws
	}
	a, ok := mpiabi.MPICHFrameArgsOf(p.build, in.Call)
	if !ok {
		if a, ok = p.inferredFrameArgs(in.Call, frames[in.API].Function, f.PC-bias); !ok {
			return ws
		}
	}
	if !slices.Contains(a.RetPCs, f.PC-bias) {
		return ws
	}
	slot := func(s mpiabi.FrameSlot) (int32, bool) {
		if s.Reg >= 0 {
			v, ok := unwind.ValueAt(fs, in.API, s.Reg, regs, mem)
			return int32(uint32(v)), ok
		}
		addr := f.SP + uint64(s.Off)
		var b [4]byte
		if mem(addr, b[:]) != nil {
			return 0, false
		}
		return int32(binary.LittleEndian.Uint32(b[:])), true
	}
	peer, okPeer := slot(a.Peer)
	tag, okTag := slot(a.Tag)
	okTag = okTag && !a.NoTag
	if !okPeer {
		return ws
	}
	// frameComm is the communicator the frame's handle names.
	frameComm := func() (mpiabi.Comm, bool) {
		h, ok := slot(a.Handle)
		if !ok || !a.HasHandle {
			return mpiabi.Comm{}, false
		}
		cm, ok := r.Comms.MPICHObject(uint32(h))
		if !ok || !r.Comms.IsComm(cm) {
			return mpiabi.Comm{}, false
		}
		c, _, ok := r.Comms.Comm(cm)
		return c, ok
	}
	if a.ReqOff != 0 || (a.HasHandle && len(ws) > 0) {
		// A send: its request was read. The frame's request must be
		// it, or the frame's tag and communicator must single it out.
		var (
			i int
			w mpiabi.Request
		)
		if a.ReqOff != 0 {
			req, ok := r.Mem.U64(f.SP + uint64(a.ReqOff))
			if !ok {
				return ws
			}
			if w, ok = r.MPICHRequest(req, comm); !ok || !okTag || int(tag) != w.Tag {
				return ws
			}
			i = slices.IndexFunc(ws, func(x mpiabi.Request) bool {
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
				tagged := x.Tag == int(tag) && x.Peer == mpiabi.PeerUnknown
				unread := x.Tag == mpiabi.TagUnknown && !x.Known
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
		if peer < 0 || peer >= mpiabi.MaxRank || (c != nil && c.Size > 0 && int(peer) >= c.Size) {
			return ws
		}
		w.Known, w.Peer, w.CommPeer = !a.PeerMaybe, mpiabi.PeerUnknown, -1
		if w.Tag == mpiabi.TagUnknown && tag >= 0 && tag < mpiabi.MaxTag {
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
	var c mpiabi.Comm
	switch {
	case a.HasHandle:
		if c, ok = frameComm(); !ok {
			return ws
		}
	case a.CommOff != 0:
		// The communicator in the frame must carry the frame's handle
		// (an MPICH object starts with its handle).
		cm, ok1 := r.Mem.U64(f.SP + uint64(a.CommOff))
		h, ok2 := r.Mem.U32(f.SP + uint64(a.HandleOff))
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
	send := !strings.HasSuffix(strings.ToLower(in.Call), "probe")
	w := mpiabi.Request{Send: send, Peer: mpiabi.PeerUnknown, CommPeer: -1, Tag: mpiabi.TagUnknown, Comm: &c, Known: !a.PeerMaybe}
	switch {
	case peer == r.Req.AnySource && !send:
		w.Peer = mpiabi.AnySource
	case peer < 0 || peer >= mpiabi.MaxRank || (c.Size > 0 && int(peer) >= c.Size):
		return ws
	case c.Name == "WORLD":
		w.Peer = int(peer)
	default:
		w.CommPeer = int(peer)
	}
	switch {
	case !okTag:
	case tag == r.Req.AnyTag:
		w.Tag = mpiabi.AnyTag
	case tag >= 0 && tag < mpiabi.MaxTag:
		w.Tag = int(tag)
	}
	return []mpiabi.Request{w}
}

// inferredFrameArgs decodes, once per build, function and return
// address, where the library's function fn keeps call's arguments
// (mpiabi.InferMPICHFrameArgs) for a build the table does not hold.
func (p *process) inferredFrameArgs(call, fn string, retPC uint64) (mpiabi.MPICHFrameArgs, bool) {
	if fn == "" || !mpiabi.FrameArgCall(call) {
		return mpiabi.MPICHFrameArgs{}, false
	}
	key := fmt.Sprintf("%s/%s/%#x", p.build, fn, retPC)
	return p.files.learnt.FrameArgs(key, func() (mpiabi.MPICHFrameArgs, error) {
		args, err := mpiabi.MPICHFrameArgs{}, fmt.Errorf("%s cannot be read", p.lib)
		p.withLib(func(f *elf.File) { args, err = mpiabi.InferMPICHFrameArgs(f, call, fn, retPC) })
		return args, err
	})
}
