package mpiabi

import (
	"testing"
)

// TestUCPLearnt reads MPICH ch4:ucx requests through a libucp build the
// table does not hold, in the shape Debian's UCX 1.13 gives them: the
// MPIR_Request points to UCX's user part at 0xb0; a receive's UCX
// request holds the MPIR_Request at -0x100 and the expected tag and mask
// at -0x50 and -0x48; a send's holds it at 0 and its tag at -0x60. Nearer
// decoys: a word of the same context id with a mask no receive has, and,
// in a send, a small number that a send of rank 0 on WORLD (context id 0,
// source 0) cannot be told from. The places are learnt from the first
// requests that show them, and serve the build's later requests.
func TestUCPLearnt(t *testing.T) {
	l, m, world := mpichWorldImage(t, 0, 2)
	const bias = mpichTestBias
	setRank := func(r uint32) { m.put32(world+uint64(l.RankOff), r) }
	const ctx0 = 0
	tag := func(ctx, src, tag uint64) uint64 { return ctx<<48 | src<<32 | tag }
	// request writes an MPIR_Request at addr (kind 1 send / 2 receive,
	// incomplete) whose UCX user part is at ureq.
	request := func(addr, ureq uint64, kind uint32) {
		m.put(addr, make([]byte, ucpSearch))
		m.put32(addr, 0xac000000|uint32(addr&0xff))
		m.put32(addr+8, kind)
		m.put64(addr+0x10, addr+0x18)
		m.put32(addr+0x18, 1)
		m.put64(addr+0xb0, ureq)
		m.put(ureq-0x200, make([]byte, 0x240))
	}
	const recv, recvU, send0, send0U, send1, send1U = 0x6000000, 0x7000400, 0x6001000, 0x7001400, 0x6002000, 0x7002400
	request(recv, recvU, 2)
	m.put64(recvU-0x100, recv)
	m.put64(recvU-0x50, tag(ctx0, 1, 7))
	m.put64(recvU-0x48, ^uint64(0))
	m.put64(recvU-0x30, tag(ctx0, 1, 7)) // a copy of the tag, its mask no receive's
	m.put64(recvU-0x28, 0x00ff00ff00ff00ff)
	// Below the back pointer, the receive before in UCX's pool: another
	// tag and mask, on WORLD too.
	m.put64(recvU-0x190, tag(ctx0, 1, 14))
	m.put64(recvU-0x188, 0xffffffff9fffffff)
	request(send0, send0U, 1)
	m.put64(send0U, send0)
	m.put64(send0U-0x60, tag(ctx0, 0, 9))
	m.put64(send0U-0x20, 5) // a count: looks like rank 0's tag 5 on WORLD
	request(send1, send1U, 1)
	m.put64(send1U, send1)
	m.put64(send1U-0x60, tag(ctx0, 1, 9))
	m.put64(send1U-0x20, 5)

	c := CommReader{Layout: l, Bias: bias, Mem: m.read}
	learnt := &UCPLearnt{}
	r := RequestReader{Mem: m.read, Comms: c, Req: MPICHReqHeader(), OK: true, UCPLearn: learnt}

	// A barrier's receive first: its tag's context id (3) is no
	// communicator's here, and the neighbour below teaches nothing.
	const coll, collU = 0x6003000, 0x7003400
	request(coll, collU, 2)
	m.put64(collU-0x100, coll)
	m.put64(collU-0x50, tag(3, 1, 1))
	m.put64(collU-0x48, 0xffffffff9fffffff)
	m.put64(collU-0x190, tag(ctx0, 1, 14))
	m.put64(collU-0x188, 0xffffffff9fffffff)

	setRank(0)
	if w, ok := r.MPICHRequest(coll, 0); ok || learnt.recv {
		t.Errorf("a receive on a context no communicator here has: %+v (read %v), learnt %+v", w, ok, learnt.l)
	}
	if w, ok := r.MPICHRequest(send0, 0); !ok || w.Tag != TagUnknown || w.Peer != 1 || w.Known {
		t.Errorf("rank 0's send on WORLD before anything is learnt: %+v (read %v), want to rank 1, inferred, tag unknown", w, ok)
	}
	if learnt.send {
		t.Fatalf("learnt a send's tag at %#x from rank 0 on WORLD", learnt.l.SendTagOff)
	}
	w, ok := r.MPICHRequest(recv, 0)
	if !ok || w.Peer != 1 || w.Tag != 7 || !w.Known {
		t.Errorf("receive: %+v (read %v), want from 1 tag 7, read", w, ok)
	}
	if want := (UCPReqLayout{RecvTagOff: -0x50, RecvMaskOff: -0x48, RecvUserOff: -0x100}); learnt.l != want {
		t.Errorf("learnt %+v, want %+v", learnt.l, want)
	}
	setRank(1)
	if w, ok := r.MPICHRequest(send1, 0); !ok || w.Tag != 9 || w.Peer != 0 {
		t.Errorf("rank 1's send: %+v (read %v), want to rank 0 tag 9", w, ok)
	}
	if !learnt.send || learnt.l.SendTagOff != -0x60 || learnt.l.SendUserOff != 0 {
		t.Errorf("learnt %+v, want the send's tag at -0x60, user data at 0", learnt.l)
	}
	setRank(0)
	if w, ok := r.MPICHRequest(send0, 0); !ok || w.Tag != 9 || w.Peer != 1 {
		t.Errorf("rank 0's send once learnt: %+v (read %v), want to rank 1 tag 9", w, ok)
	}

	// Persistent requests (kind 4, MPI_Recv_init): once started, the
	// completion counter pointer is the started receive's counter, and
	// the receive behind it is read; not started, or pointing at a word
	// no request owns, it is no request.
	persistent := func(addr, ccp uint64) {
		m.put(addr, make([]byte, 0x40))
		m.put32(addr, 0xac000000|uint32(addr&0xff))
		m.put32(addr+8, 4)
		m.put64(addr+0x10, ccp)
		m.put32(addr+0x18, 0)
	}
	const started, idle, stray, strayCC = 0x6005000, 0x6006000, 0x6007000, 0x6008018
	persistent(started, recv+0x18)
	if w, ok := r.MPICHRequest(started, 0); !ok || w.Peer != 1 || w.Tag != 7 || !w.Known || w.Send {
		t.Errorf("a started persistent receive: %+v (read %v), want the receive from 1 tag 7 behind it", w, ok)
	}
	persistent(idle, idle+0x18)
	if w, ok := r.MPICHRequest(idle, 0); ok {
		t.Errorf("a persistent receive not started: %+v, want none", w)
	}
	m.put(strayCC-0x18, make([]byte, 0x40))
	m.put32(strayCC, 1)
	persistent(stray, strayCC)
	if w, ok := r.MPICHRequest(stray, 0); ok {
		t.Errorf("a persistent request whose counter no request owns: %+v, want none", w)
	}
}

// TestUCPMasks checks receive masks as MPICH builds them: read from live
// MPICH 4.0.2 (UCX) ranks blocked in MPI_Recv with MPI_ANY_TAG, the low
// word keeps MPICH's own bits (0x90000000) beside the cleared user bits.
func TestUCPMasks(t *testing.T) {
	cases := []struct {
		mask       uint64
		valid, any bool
	}{
		{0xffffffff90000000, true, true},   // MPI_ANY_TAG, source given (MPICH 4.0.2)
		{0xffff000090000000, true, true},   // MPI_ANY_TAG and MPI_ANY_SOURCE
		{0xffffffff00000000, true, true},   // MPI_ANY_TAG, no bits of its own
		{0xffffffff9fffffff, true, false},  // an exact tag
		{0xffffffffffffffff, true, false},  // an exact tag, every bit matched
		{0xffffffff90ff0000, false, false}, // some user bits matched: not a mask MPICH makes
		{0x0000ffff9fffffff, false, false}, // the context id not matched
	}
	for _, c := range cases {
		if got := ucpMask(c.mask, 29); got != c.valid {
			t.Errorf("ucpMask(%#x) = %v, want %v", c.mask, got, c.valid)
		}
		if got := ucpAnyTag(c.mask, 29); got != c.any {
			t.Errorf("ucpAnyTag(%#x) = %v, want %v", c.mask, got, c.any)
		}
	}
}
