package mpiabi

import (
	"debug/elf"
	"path"

	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// Open MPI's ob1: its point-to-point requests (mca_pml_base_request_t:
// req_peer, req_tag, req_comm) and the groups that map a communicator's
// ranks to WORLD's.

// OMPIRequest reads an ob1 request at addr that is still in flight; ok is
// false when addr is not one.
func (r RequestReader) OMPIRequest(addr uint64) (Request, bool) {
	l := r.OB1
	if addr%8 != 0 {
		return Request{}, false
	}
	cls, ok := r.u64(addr)
	if !ok || (cls != r.OB1Bias+l.RecvClass && cls != r.OB1Bias+l.SendClass) {
		return Request{}, false
	}
	send := cls == r.OB1Bias+l.SendClass
	state, ok1 := r.u32(addr + uint64(l.StateOff))
	done, ok2 := r.u64(addr + uint64(l.CompleteOff))
	typ, ok3 := r.u32(addr + uint64(l.TypeOff))
	comm, ok4 := r.u64(addr + uint64(l.CommOff))
	peer, ok5 := r.u32(addr + uint64(l.PeerOff))
	tag, ok6 := r.u32(addr + uint64(l.TagOff))
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || state != l.StateActive || done == l.CompleteDone {
		return Request{}, false
	}
	probe := (l.TypeProbe != 0 && typ == l.TypeProbe) || (l.TypeMProbe != 0 && typ == l.TypeMProbe)
	if (send && typ != l.TypeSend) || (!send && typ != l.TypeRecv && !probe) || !r.Comms.IsComm(comm) {
		return Request{}, false
	}
	w := Request{Send: send, Peer: PeerUnknown, CommPeer: -1, Tag: int(int32(tag)), Known: true}
	switch {
	case int32(tag) == l.AnyTag && !send:
		w.Tag = AnyTag
	case int32(tag) < 0 || int32(tag) >= MaxTag:
		return Request{}, false
	}
	if c, _, ok := r.Comms.Comm(comm); ok {
		w.Comm = &c
	}
	p := int32(peer)
	switch {
	case p == l.AnySource && !send:
		w.Peer = AnySource
	case p < 0 || p >= MaxRank || (w.Comm != nil && w.Comm.Size > 0 && int(p) >= w.Comm.Size):
		return Request{}, false
	default:
		if world, ok := r.ompiWorldRank(comm, int(p)); ok {
			w.Peer = world
		} else {
			w.CommPeer = int(p)
		}
	}
	return w, true
}

// ompiWorldRank converts a rank of a communicator's remote group (its only
// group for an intracommunicator) to a WORLD rank: the vpid of the process
// the group names.
func (r RequestReader) ompiWorldRank(comm uint64, rank int) (int, bool) {
	g, ok := r.u64(comm + uint64(r.OB1.RemoteGroupOff))
	if !ok || g == 0 {
		return 0, false
	}
	return r.groupWorldRank(g, rank)
}

// OMPIMembers returns the WORLD ranks of the communicator at comm's local
// group (Open MPI, when ob1's layout is known: it says where a group keeps
// its processes), in the group's order; nil if they cannot all be read or
// the group is larger than MaxMembers.
func (r RequestReader) OMPIMembers(comm uint64) []int {
	l := r.Comms.Layout
	if !r.OK || l.Kind != LayoutOMPI {
		return nil
	}
	g, ok := r.u64(comm + uint64(l.GroupOff))
	if !ok || g == 0 {
		return nil
	}
	n, ok := r.u32(g + uint64(r.OB1.CountOff))
	if !ok || int32(n) <= 0 || n > MaxMembers {
		return nil
	}
	out := make([]int, n)
	for i := range out {
		if out[i], ok = r.groupWorldRank(g, i); !ok {
			return nil
		}
	}
	return out
}

// groupWorldRank returns the WORLD rank of member rank of the Open MPI
// group at g.
func (r RequestReader) groupWorldRank(g uint64, rank int) (int, bool) {
	l := r.OB1
	n, ok := r.u32(g + uint64(l.CountOff))
	if !ok || rank >= int(int32(n)) {
		return 0, false
	}
	if l.ProcsOff == 0 {
		return 0, false // not found for this build
	}
	procs, ok := r.u64(g + uint64(l.ProcsOff))
	if !ok || procs == 0 {
		return 0, false
	}
	proc, ok := r.u64(procs + 8*uint64(rank))
	if !ok || proc == 0 {
		return 0, false
	}
	var vpid uint32
	if proc&1 != 0 {
		vpid = uint32(proc >> 32) // a sentinel: the name itself
	} else if vpid, ok = r.u32(proc + uint64(l.VpidOff)); !ok {
		return 0, false
	}
	if vpid >= MaxRank {
		return 0, false
	}
	return int(vpid), true
}

// OB1File is the base name of Open MPI's ob1 component.
const OB1File = "mca_pml_ob1.so"

// LocateOB1 finds where a process has Open MPI's ob1, from its memory
// map: the first mapping of mca_pml_ob1.so that usable accepts; else, when
// lib (the process's libmpi.so, opened by the caller on demand) defines
// ob1's request classes, libmpi itself (builtIn: Open MPI 5.0 builds its
// components into libmpi.so). ok is false when neither holds it.
func LocateOB1(maps []procfs.Mapping, usable func(procfs.Mapping) bool, lib func() *elf.File) (m procfs.Mapping, builtIn, ok bool) {
	for _, m := range maps {
		if m.Inode != 0 && path.Base(m.Path) == OB1File && usable(m) {
			return m, false, true
		}
	}
	if f := lib(); f != nil {
		if syms, err := elfx.Defined(f); err == nil && syms["mca_pml_ob1_recv_request_t_class"].Value != 0 {
			return procfs.Mapping{}, true, true
		}
	}
	return procfs.Mapping{}, false, false
}
