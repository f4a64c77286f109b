package mpiabi

import (
	"fmt"
	"testing"
)

// TestCH3Requests reads ch3 requests in the shape MPICH 3.4.3 gives them:
// dev.match at 0x90 ({tag, int16 rank, context id}) and, in a posted
// receive, dev.mask after it; further on, at 0xc0, a zero word with a
// full mask, which looks like a receive from rank 0 tag 0 on WORLD. The
// match's place is learnt from the first receive, here one of a
// barrier's (a collective context no communicator on the stack has),
// and serves the receives and sends after it: status once learnt 0xc0
// by searching for WORLD's context id, and named rank 0 everywhere. A
// send before any receive is inferred on WORLD of two ranks only.
func TestCH3Requests(t *testing.T) {
	l, m, world := mpichWorldImage(t, 1, 4)
	const bias = mpichTestBias
	dup := bias + l.Direct + 2*uint64(l.ObjSize)
	m.put32(dup, 0x84000002)
	m.put32(dup+uint64(l.CIDOff), 0x1f0|0x1f0<<16)
	m.put32(dup+uint64(l.RankOff), 0)
	m.put32(dup+uint64(l.SizeOff), 2)
	// req writes a request at addr: zeros to ch3SearchTo, match at 0x90.
	req := func(addr uint64, tag int32, rank int16, ctx uint16, mtag int32, mrank int16) {
		m.put(addr, make([]byte, ch3SearchTo+16))
		m.put32(addr+0xc8, 0xffffffff) // a zero match at 0xc0 with a full mask
		m.put32(addr+0xcc, 0xffffffff)
		m.put32(addr+0x90, uint32(tag))
		m.put32(addr+0x94, uint32(uint16(rank))|uint32(ctx)<<16)
		m.put32(addr+0x98, uint32(mtag))
		m.put32(addr+0x9c, uint32(uint16(mrank))|0xffff<<16)
	}
	const recv, anySrc, anyTag, send, early, coll = 0x6000000, 0x6001000, 0x6002000, 0x6003000, 0x6004000, 0x6005000
	req(early, 9, 3, 0, 0, 0)
	req(coll, 1, 0, 3, -1, -1) // a barrier's receive, context id 3
	req(recv, 7, 2, 0, -1, -1)
	req(anySrc, 5, -2, 0x1f0, -1, 0)
	req(anyTag, -1, 1, 0, 0, -1)
	req(send, 11, 3, 0, 0, 0)

	newReader := func() RequestReader {
		c := CommReader{Layout: l, Bias: bias, Mem: m.read}
		return RequestReader{Mem: m.read, Comms: c, Req: MPICHReqHeader(), OK: true, CH3: &CH3Match{}}
	}
	r := newReader()
	if _, ok := r.ch3Request(early, true, r.stackAndWorld(0)); ok {
		t.Error("a send before any receive, on WORLD of 4: read, want nothing")
	}
	if w, ok := r.ch3Request(coll, false, r.stackAndWorld(0)); ok {
		t.Errorf("a receive on a context no communicator here has: read %+v, want nothing", w)
	}
	worldOf := func(w Request) string { return fmt.Sprintf("%+v", *w.Comm) }
	for _, tt := range []struct {
		name       string
		addr, comm uint64
		send       bool
		want       Request
	}{
		{"receive from 2 tag 7 on WORLD", recv, 0, false, Request{Peer: 2, CommPeer: -1, Tag: 7, Known: true}},
		{"any source on a dup", anySrc, dup, false, Request{Peer: AnySource, CommPeer: -1, Tag: 5, Known: true}},
		{"any tag", anyTag, 0, false, Request{Peer: 1, CommPeer: -1, Tag: AnyTag, Known: true}},
		{"send to 3 tag 11, at the learnt place", send, 0, true, Request{Send: true, Peer: 3, CommPeer: -1, Tag: 11, Known: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, ok := r.ch3Request(tt.addr, tt.send, r.stackAndWorld(tt.comm))
			if !ok || w.Comm == nil {
				t.Fatalf("not read (learnt offset %#x)", r.CH3.off)
			}
			c := w.Comm
			w.Comm = nil
			if w != tt.want {
				t.Errorf("wait %+v on %s, want %+v", w, worldOf(Request{Comm: c}), tt.want)
			}
		})
	}
	if r.CH3.off != 0x90 {
		t.Errorf("learnt dev.match at %#x, want 0x90", r.CH3.off)
	}

	// A send first, on WORLD of two ranks: the other rank, inferred.
	m.put32(world+uint64(l.SizeOff), 2)
	m.put32(world+uint64(l.RankOff), 0)
	r = newReader()
	w, ok := r.ch3Request(early, true, r.stackAndWorld(0))
	if !ok || w.Peer != 1 || w.Known {
		t.Errorf("send before any receive on WORLD of 2: %+v (read %v), want peer 1, inferred", w, ok)
	}
}

// mpichTestBias is where the tests load Debian's MPICH.
const mpichTestBias = 0x7f5500000000

// mpichWorldImage returns Debian's MPICH layout and a memory holding its
// MPI_COMM_WORLD (context id 0) as rank of size ranks sees it, and WORLD's
// address.
func mpichWorldImage(t *testing.T, rank, size uint32) (CommLayout, image, uint64) {
	l := layoutOf(t, mpichBuild)
	m := image{}
	world := mpichTestBias + l.Builtin
	m.put32(world, 0x44000000)
	m.put32(world+uint64(l.CIDOff), 0)
	m.put32(world+uint64(l.RankOff), rank)
	m.put32(world+uint64(l.SizeOff), size)
	return l, m, world
}
