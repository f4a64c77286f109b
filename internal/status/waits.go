package status

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/status/hang"
)

// waitsComm returns the communicator all waits share, nil if they do not.
func waitsComm(ws []hang.Wait) *agg.Comm {
	var c *agg.Comm
	for _, w := range ws {
		if w.Comm == nil || (c != nil && *c != *w.Comm) {
			return nil
		}
		c = w.Comm
	}
	return c
}

// waitsPeer is the hang.Call Peer of a call's waits: the one peer they
// share, AnySource, or PeerUnknown.
func waitsPeer(ws []hang.Wait) int {
	peer := hang.PeerUnknown
	for i, w := range ws {
		if i > 0 && w.Peer != peer {
			return hang.PeerUnknown
		}
		peer = w.Peer
	}
	return peer
}

// waitsText renders what a thread waits for: "from 1 tag 7", "recv from
// any tag 6, send to ? tag 5".
func waitsText(call string, ws []hang.Wait) string {
	var parts []string
	n := strings.ToLower(strings.TrimPrefix(call, "MPI_"))
	plain := n == "recv" || n == "send" || n == "ssend" || n == "bsend" || n == "rsend"
	for _, w := range ws {
		var b strings.Builder
		if !plain || len(ws) > 1 {
			if w.Send {
				b.WriteString("send ")
			} else {
				b.WriteString("recv ")
			}
		}
		if w.Send {
			b.WriteString("to ")
		} else {
			b.WriteString("from ")
		}
		switch {
		case w.Peer >= 0:
			b.WriteString(strconv.Itoa(w.Peer))
		case w.Peer == hang.AnySource:
			b.WriteString("any")
		case w.CommPeer >= 0 && w.Comm != nil:
			fmt.Fprintf(&b, "rank %d of %s", w.CommPeer, w.Comm.Short())
		case w.CommPeer >= 0:
			fmt.Fprintf(&b, "rank %d of its communicator", w.CommPeer)
		default:
			b.WriteString("?")
		}
		switch {
		case w.Tag >= 0:
			b.WriteString(" tag " + strconv.Itoa(w.Tag))
		case w.Tag == hang.AnyTag:
			b.WriteString(" any tag")
		}
		parts = append(parts, b.String())
	}
	return strings.Join(parts, ", ")
}

// addWaits puts what a thread waits for on th: its requests, the
// communicator they share when the stack did not show one (MPI_Wait &
// co.), and, once per library, why requests cannot be read.
func addWaits(th *Thread, t thread, p *process, res *Result) {
	if p == nil {
		return
	}
	th.Waits = hangWaits(t.waits)
	if th.Comm == nil {
		th.Comm = waitsComm(th.Waits)
	}
	if n := p.p2p.Note; n != "" && !slices.Contains(res.Notes, n) {
		res.Notes = append(res.Notes, n)
	}
}

// resolveCommPeers turns peers known only as ranks of a communicator into
// WORLD ranks, from the ranks observed here: the one rank whose thread is
// in a call on the same communicator with that rank in it. It returns the
// ranks as package hang sees them.
func resolveCommPeers(rs []Rank) []hang.Rank {
	seats := commSeats{}
	for _, r := range rs {
		for _, t := range r.Threads {
			seats.add(t.Comm, t.commRank, r.Rank)
		}
	}
	out := make([]hang.Rank, 0, len(rs))
	for i := range rs {
		for j := range rs[i].Threads {
			seats.resolve(rs[i].Threads[j].Waits)
		}
		out = append(out, hangRank(rs[i]))
	}
	return out
}

// commSeats are the WORLD ranks seen holding each rank of a communicator.
type commSeats map[commSeat][]int

type commSeat struct {
	comm agg.Comm
	rank int
}

// add notes that WORLD rank world is rank commRank of comm.
func (s commSeats) add(comm *agg.Comm, commRank, world int) {
	if comm == nil || comm.Local || commRank < 0 || world < 0 {
		return
	}
	k := commSeat{*comm, commRank}
	if !slices.Contains(s[k], world) {
		s[k] = append(s[k], world)
	}
}

// resolve sets the WORLD peer of the waits known only by their rank in
// their communicator, when one rank holds that seat; it reports whether
// it set any.
func (s commSeats) resolve(ws []hang.Wait) bool {
	changed := false
	for k := range ws {
		w := &ws[k]
		if w.Peer != hang.PeerUnknown || w.CommPeer < 0 || w.Comm == nil || w.Comm.Local {
			continue
		}
		if o := s[commSeat{*w.Comm, w.CommPeer}]; len(o) == 1 {
			w.Peer, changed = o[0], true
		}
	}
	return changed
}
