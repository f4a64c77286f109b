package status

import (
	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/status/hang"
)

// The adapter from what mpiabi reads of MPI objects to what status
// reports and package hang diagnoses.

// aggComm is a communicator mpiabi read, as status reports it.
func aggComm(c mpiabi.Comm) agg.Comm {
	return agg.Comm{ID: c.ID, Size: c.Size, Name: c.Name}
}

// hangWaits are the requests mpiabi read, as package hang sees them; nil
// for none.
func hangWaits(rs []mpiabi.Request) []hang.Wait {
	if rs == nil {
		return nil
	}
	out := make([]hang.Wait, len(rs))
	for i, r := range rs {
		out[i] = hang.Wait{Send: r.Send, Peer: hangPeer(r.Peer), CommPeer: r.CommPeer, Tag: hangTag(r.Tag), Known: r.Known}
		if r.Comm != nil {
			c := aggComm(*r.Comm)
			out[i].Comm = &c
		}
	}
	return out
}

// hangPeer is a Request's Peer in package hang's terms.
func hangPeer(p int) int {
	switch p {
	case mpiabi.AnySource:
		return hang.AnySource
	case mpiabi.PeerUnknown:
		return hang.PeerUnknown
	}
	return p
}

// hangTag is a Request's Tag in package hang's terms.
func hangTag(t int) int {
	switch t {
	case mpiabi.AnyTag:
		return hang.AnyTag
	case mpiabi.TagUnknown:
		return hang.TagUnknown
	}
	return t
}
