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
		out[i] = hang.Wait{Send: r.Send, Peer: special(hangPeers, r.Peer), CommPeer: r.CommPeer, Tag: special(hangTags, r.Tag), Known: r.Known}
		if r.Comm != nil {
			c := aggComm(*r.Comm)
			out[i].Comm = &c
		}
	}
	return out
}

// The special values of mpiabi.Request's Peer and Tag, as package hang
// spells them.
var (
	hangPeers = map[int]int{mpiabi.AnySource: hang.AnySource, mpiabi.PeerUnknown: hang.PeerUnknown}
	hangTags  = map[int]int{mpiabi.AnyTag: hang.AnyTag, mpiabi.TagUnknown: hang.TagUnknown}
)

// special is v in package hang's terms: its entry in m if it is a special
// value, else v itself.
func special(m map[int]int, v int) int {
	if h, ok := m[v]; ok {
		return h
	}
	return v
}
