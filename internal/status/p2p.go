package status

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/status/hang"
	"github.com/mpiprobe/mpiprobe/internal/status/unwind"
	"github.com/mpiprobe/mpiprobe/internal/symbolize"
)

// p2pReader reads the point-to-point requests a thread waits for from one
// process's memory, with the layouts of its library builds: Open MPI's ob1
// requests (mca_pml_base_request_t: req_peer, req_tag, req_comm) or
// MPICH's MPIR_Request and the UCX request behind it (the UCX tag holds
// the context id, the source rank and the tag).
type p2pReader struct {
	kind  mpiabi.CommLayoutKind
	mem   procfs.Memory
	comms commReader
	// Open MPI: ob1's layout and load bias.
	ob1     mpiabi.OB1Layout
	ob1Bias uint64
	// MPICH: MPIR_Request's and UCX's request layouts; without UCX
	// (ch3), where the build keeps a request's match (ch3.go).
	req mpiabi.MPICHReqLayout
	ucp mpiabi.UCPReqLayout
	ch3 *ch3Match
	// ucpLearn, for a libucp build the table does not hold, is its
	// layout learnt from the requests (ucx.go).
	ucpLearn *ucpLearnt
	// ok says requests can be read; else note says why not.
	ok   bool
	note string
}

// newP2PReader finds the libraries that hold a process's point-to-point
// requests and their layouts.
func newP2PReader(p *process) p2pReader {
	r := p2pReader{kind: p.comms.layout.Kind, mem: p.read, comms: p.comms}
	var found procfs.Mapping
	find := func(prefix string) (string, uint64, bool) {
		for _, m := range p.maps {
			if m.Inode == 0 || !strings.HasPrefix(path.Base(m.Path), prefix) {
				continue
			}
			fi := p.file(m)
			if fi.err != nil {
				continue
			}
			if b, ok := p.bias(m); ok {
				found = m
				return fi.build, b, true
			}
		}
		return "", 0, false
	}
	switch r.kind {
	case mpiabi.LayoutOMPI:
		build, bias, ok := find("mca_pml_ob1.so")
		if !ok && p.definesOB1() {
			// Open MPI 5.0 builds its components into libmpi.so.
			build, bias, ok = find("libmpi.so")
		}
		if !ok {
			if _, _, ucx := find("mca_pml_ucx.so"); ucx {
				r.note = "peer unknown (Open MPI uses pml ucx here; only ob1's requests are read: --mca pml ob1)"
			} else {
				r.note = "peer unknown (mca_pml_ob1.so is not mapped)"
			}
			return r
		}
		l, known := mpiabi.OB1LayoutOf(build)
		if !known {
			var err error
			if l, err = p.ob1Layout(found, build); err != nil {
				r.note = fmt.Sprintf("peer unknown (layout not known for this build: mca_pml_ob1.so %s, and %v)", shortID(build), err)
				return r
			}
		}
		r.ob1, r.ob1Bias, r.ok = l, bias, true
	case mpiabi.LayoutMPICH:
		l, known := mpiabi.MPICHReqLayoutOf(p.build)
		if !known {
			l = mpiabi.MPICHReqHeader()
		}
		build, _, ok := find("libucp.so")
		if !ok {
			dev := p.mpichDevice()
			if !strings.HasPrefix(dev, "ch3:") {
				r.note = fmt.Sprintf("peer unknown (MPICH %s: only ch4:ucx's and ch3's requests are read)", cmp.Or(dev, "of an unknown device"))
				return r
			}
			// ch3: the requests' match is found by its signature.
			r.req, r.ok, r.ch3 = l, true, p.files.ch3For(p.build)
			return r
		}
		u, known := mpiabi.UCPReqLayoutOf(build)
		if !known {
			// Learnt from the requests themselves (ucx.go).
			r.req, r.ucpLearn, r.ok = l, p.files.ucpFor(build), true
			return r
		}
		r.req, r.ucp, r.ok = l, u, true
	default:
		r.note = "peer unknown (layout not known for this build)"
	}
	return r
}

// mpichDevice returns the device the process's MPICH library names
// (mpiabi.MPICHDevice), "" if unknown; read once per build.
func (p *process) mpichDevice() string {
	if dev, ok := p.files.devices[p.build]; ok {
		return dev
	}
	var dev string
	p.withLib(func(f *elf.File) { dev, _ = mpiabi.MPICHDevice(f) })
	if p.files.devices == nil {
		p.files.devices = map[string]string{}
	}
	p.files.devices[p.build] = dev
	return dev
}

// definesOB1 reports whether the process's libmpi.so has ob1 built in
// (Open MPI 5.0 builds its components into it): it defines ob1's request
// classes.
func (p *process) definesOB1() bool {
	ok := false
	p.withLib(func(f *elf.File) {
		if syms, err := elfx.Defined(f); err == nil {
			_, ok = syms["mca_pml_ob1_recv_request_t_class"]
		}
	})
	return ok
}

// withLib calls fn with the ELF file of the process's MPI library, if it
// can be opened.
func (p *process) withLib(fn func(*elf.File)) {
	for _, m := range p.maps {
		if m.Inode == 0 || m.Path != p.lib {
			continue
		}
		f, err := p.open(m)
		if err != nil {
			return
		}
		defer f.Close()
		if ef, err := elf.NewFile(f); err == nil {
			fn(ef)
		}
		return
	}
}

// ob1Layout finds the ob1 request layout of a build the table does not
// hold, once per pair of builds for all processes (mpiabi.ResolveOB1Layout):
// from the DWARF Open MPI builds into libmpi.so, else, when the library is
// stripped, inferred from the process's predefined objects and ob1's code.
func (p *process) ob1Layout(ob1 procfs.Mapping, ob1Build string) (mpiabi.OB1Layout, error) {
	key := ob1Build + "/" + p.build
	if res, ok := p.files.ob1[key]; ok {
		return res.layout, res.err
	}
	l, err := p.readOB1Layout(ob1)
	if errors.Is(err, mpiabi.ErrLayoutNotReady) {
		return l, err // another process may be past MPI_Init
	}
	if p.files.ob1 == nil {
		p.files.ob1 = map[string]ob1Result{}
	}
	p.files.ob1[key] = ob1Result{l, err}
	return l, err
}

func (p *process) readOB1Layout(ob1 procfs.Mapping) (mpiabi.OB1Layout, error) {
	var lib procfs.Mapping
	for _, m := range p.maps {
		if m.Inode != 0 && m.Path == p.lib {
			lib = m
			break
		}
	}
	if lib.Inode == 0 {
		return mpiabi.OB1Layout{}, fmt.Errorf("%s is not mapped", p.lib)
	}
	var files [2]*elf.File
	for i, m := range []procfs.Mapping{lib, ob1} {
		f, err := p.open(m)
		if err != nil {
			return mpiabi.OB1Layout{}, err
		}
		defer f.Close()
		if files[i], err = elf.NewFile(f); err != nil {
			return mpiabi.OB1Layout{}, fmt.Errorf("%s: %w", m.Path, err)
		}
	}
	bias, ok := p.bias(lib)
	if !ok {
		return mpiabi.OB1Layout{}, fmt.Errorf("no load bias for %s", p.lib)
	}
	lp := mpiabi.LiveProcess{Mem: p.read, Bias: bias, WorldRank: -1, WorldSize: -1, OMPIName: p.ompiName}
	res, err := mpiabi.ResolveOB1Layout(files[0], files[1], lp, p.comms.layout)
	return res.Layout, err
}

func (r p2pReader) u32(addr uint64) (uint32, bool) { return r.mem.U32(addr) }

func (r p2pReader) u64(addr uint64) (uint64, bool) { return r.mem.U64(addr) }

// mpichWorld is MPICH's MPI_COMM_WORLD handle.
const mpichWorld = 0x44000000

// maxTag bounds a plausible MPI tag (both libraries' MPI_TAG_UB are below).
const maxTag = 1 << 30

// maxRank bounds a plausible rank.
const maxRank = 1 << 24

// ompiRequest reads an ob1 request at addr that is still in flight; ok is
// false when addr is not one.
func (r p2pReader) ompiRequest(addr uint64) (hang.Wait, bool) {
	l := r.ob1
	if addr%8 != 0 {
		return hang.Wait{}, false
	}
	cls, ok := r.u64(addr)
	if !ok || (cls != r.ob1Bias+l.RecvClass && cls != r.ob1Bias+l.SendClass) {
		return hang.Wait{}, false
	}
	send := cls == r.ob1Bias+l.SendClass
	state, ok1 := r.u32(addr + uint64(l.StateOff))
	done, ok2 := r.u64(addr + uint64(l.CompleteOff))
	typ, ok3 := r.u32(addr + uint64(l.TypeOff))
	comm, ok4 := r.u64(addr + uint64(l.CommOff))
	peer, ok5 := r.u32(addr + uint64(l.PeerOff))
	tag, ok6 := r.u32(addr + uint64(l.TagOff))
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || state != l.StateActive || done == l.CompleteDone {
		return hang.Wait{}, false
	}
	if (send && typ != l.TypeSend) || (!send && typ != l.TypeRecv && (l.TypeProbe == 0 || typ != l.TypeProbe)) || !r.comms.isComm(comm) {
		return hang.Wait{}, false
	}
	w := hang.Wait{Send: send, Peer: hang.PeerUnknown, CommPeer: -1, Tag: int(int32(tag)), Known: true}
	switch {
	case int32(tag) == l.AnyTag && !send:
		w.Tag = hang.AnyTag
	case int32(tag) < 0 || int32(tag) >= maxTag:
		return hang.Wait{}, false
	}
	if c, _, ok := r.comms.comm(comm); ok {
		w.Comm = &c
	}
	p := int32(peer)
	switch {
	case p == l.AnySource && !send:
		w.Peer = hang.AnySource
	case p < 0 || p >= maxRank || (w.Comm != nil && w.Comm.Size > 0 && int(p) >= w.Comm.Size):
		return hang.Wait{}, false
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
func (r p2pReader) ompiWorldRank(comm uint64, rank int) (int, bool) {
	g, ok := r.u64(comm + uint64(r.ob1.RemoteGroupOff))
	if !ok || g == 0 {
		return 0, false
	}
	return r.groupWorldRank(g, rank)
}

// maxMembers bounds the group read for a communicator's membership.
const maxMembers = 1024

// members returns the WORLD ranks of the communicator at comm's local
// group (Open MPI, when ob1's layout is known: it says where a group keeps
// its processes), in the group's order; nil if they cannot all be read or
// the group is larger than maxMembers.
func (r p2pReader) members(comm uint64, l mpiabi.CommLayout) []int {
	if !r.ok || r.kind != mpiabi.LayoutOMPI || l.Kind != mpiabi.LayoutOMPI {
		return nil
	}
	g, ok := r.u64(comm + uint64(l.GroupOff))
	if !ok || g == 0 {
		return nil
	}
	n, ok := r.u32(g + uint64(r.ob1.CountOff))
	if !ok || int32(n) <= 0 || n > maxMembers {
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
func (r p2pReader) groupWorldRank(g uint64, rank int) (int, bool) {
	l := r.ob1
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
	if vpid >= maxRank {
		return 0, false
	}
	return int(vpid), true
}

// mpichRequest reads an MPICH request at addr that is still in flight.
// comm is the communicator object the stack shows (0 if none): when its
// context id is the request's, it names the request's communicator.
func (r p2pReader) mpichRequest(addr, comm uint64) (hang.Wait, bool) {
	l, u := r.req, r.ucp
	if addr%8 != 0 {
		return hang.Wait{}, false
	}
	h, ok := r.u32(addr)
	if !ok || (h>>26)&0xf != l.HandleKind || h>>30 == 0 {
		return hang.Wait{}, false
	}
	kind, ok1 := r.u32(addr + uint64(l.KindOff))
	ccp, ok2 := r.u64(addr + uint64(l.CCPtrOff))
	if !ok1 || !ok2 || (kind != l.KindSend && kind != l.KindRecv) {
		return hang.Wait{}, false
	}
	if cc, ok := r.u32(ccp); !ok || cc == 0 {
		return hang.Wait{}, false // complete
	}
	send := kind == l.KindSend
	if r.ch3 != nil {
		return r.ch3Request(addr, send, r.stackAndWorld(comm))
	}
	if lr := r.ucpLearn; lr != nil {
		if send && !lr.send || !send && !lr.recv {
			var cs []ucpComm
			for _, cm := range r.stackAndWorld(comm) {
				cid, ok := r.u32(cm + uint64(r.comms.layout.CIDOff))
				if _, me, ok2 := r.comms.comm(cm); cm != 0 && ok && ok2 {
					cs = append(cs, ucpComm{uint16(cid & r.comms.layout.CIDMask), me})
				}
			}
			r.learnUCP(addr, send, cs)
		}
		switch {
		case send && !lr.send:
			return r.otherOfTwo(r.stackAndWorld(comm))
		case !send && !lr.recv:
			return hang.Wait{}, false
		}
		u = lr.l
	}
	userOff, tagOff := u.RecvUserOff, u.RecvTagOff
	if send {
		userOff, tagOff = u.SendUserOff, u.SendTagOff
	}
	ureq, ok := r.ucpRequest(addr, l.UCPReqOff, userOff)
	if !ok {
		return hang.Wait{}, false
	}
	tag, ok := r.u64(ureq + uint64(int64(tagOff)))
	if !ok {
		return hang.Wait{}, false
	}
	mask := ^uint64(0)
	if !send {
		var ok bool
		if mask, ok = r.u64(ureq + uint64(int64(u.RecvMaskOff))); !ok {
			return hang.Wait{}, false
		}
	}
	tagMask := uint64(1)<<l.TagBits - 1
	w := hang.Wait{Send: send, Peer: hang.PeerUnknown, CommPeer: -1, Tag: int(tag & tagMask), Known: true}
	if mask&tagMask == 0 {
		w.Tag = hang.AnyTag
	}
	ctx := uint32(tag >> 48)
	src := int(tag >> 32 & 0xffff)
	var c agg.Comm
	haveComm, world, myRank := false, false, -1
	// The communicator: the stack's, else WORLD, when its context id is
	// the request's.
	cands := []uint64{comm}
	if wc, ok := r.comms.mpichObject(mpichWorld); ok {
		cands = append(cands, wc)
	}
	for _, cm := range cands {
		if cm == 0 || haveComm {
			continue
		}
		if cid, ok := r.u32(cm + uint64(r.comms.layout.CIDOff)); ok && cid&r.comms.layout.CIDMask == ctx {
			if c, myRank, ok = r.comms.comm(cm); ok {
				haveComm, world = true, c.Name == "WORLD"
				w.Comm = &c
			}
		}
	}
	switch {
	case send:
		// A send's tag holds the sender's own rank: it checks the
		// reading; the destination is UCX's endpoint, not read here.
		if haveComm && myRank >= 0 && src != myRank {
			return hang.Wait{}, false
		}
		// Inferred: on WORLD of two ranks, the other one (a blocked
		// send to itself is the rare exception).
		w.Known = false
		if world && c.Size == 2 && (myRank == 0 || myRank == 1) {
			w.Peer = 1 - myRank
		}
	case mask>>32&0xffff == 0:
		w.Peer = hang.AnySource
	case haveComm && c.Size > 0 && src >= c.Size:
		return hang.Wait{}, false
	case world:
		w.Peer = src
	default:
		w.CommPeer = src
	}
	return w, true
}

// ucpSearch bounds where an MPICH request of a build the table does not
// hold may keep its UCX request pointer (0xb0 in Debian's 4.0.2).
const ucpSearch = 0x400

// ucpRequest returns the UCX request of the MPICH request at addr: the
// pointer at off, or, when off is 0 (a build the table does not hold),
// the first pointer in the request whose UCX request points back to it at
// userOff. A pointer that does not point back is not the request's.
func (r p2pReader) ucpRequest(addr uint64, off uint32, userOff int32) (uint64, bool) {
	backTo := func(ureq uint64) bool {
		back, ok := r.u64(ureq + uint64(int64(userOff)))
		return ok && ureq != 0 && ureq%8 == 0 && back == addr
	}
	if off != 0 {
		ureq, ok := r.u64(addr + uint64(off))
		return ureq, ok && backTo(ureq)
	}
	buf := make([]byte, ucpSearch)
	if r.mem(addr, buf) != nil {
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

// requestsOnStack returns what a thread in call waits for: the requests in
// flight that the words between sp and the application's frame point to
// (for completion calls under Open MPI also the application's frame,
// where its request array is), innermost first, each once.
func (p *process) requestsOnStack(mem procfs.Memory, sp, ret uint64, call string, comm uint64) []hang.Wait {
	if !p.p2p.ok || sp == 0 {
		return nil
	}
	m, ok := p.mapping(sp)
	if !ok {
		return nil
	}
	buf := make([]byte, min(uint64(maxScan), m.End-sp)&^7)
	if mem(sp, buf) != nil {
		return nil
	}
	seen := map[uint64]bool{}
	out := p.requestsIn(buf, ret, call, comm, seen)
	if len(out) == 0 && sp-m.Start >= belowSP {
		// The library may keep the request in a callee-saved register
		// only: the progress functions it calls in a loop push it just
		// below the stack pointer, where it stays between calls.
		below := make([]byte, belowSP)
		if mem(sp-belowSP, below) == nil {
			out = p.requestsIn(below, 0, call, comm, seen)
		}
	}
	return out
}

// belowSP is how many bytes under the stack pointer are read when the
// frames above it show no request.
const belowSP = 1024

// requestsIn returns the requests in flight that the words of buf point
// to, up to the word equal to ret (the application's frame).
func (p *process) requestsIn(buf []byte, ret uint64, call string, comm uint64, seen map[uint64]bool) []hang.Wait {
	r := p.p2p
	var ok bool
	extra := -1 // words still read after the application's frame starts
	var out []hang.Wait
	for i := 0; i+8 <= len(buf) && extra != 0; i += 8 {
		w := binary.LittleEndian.Uint64(buf[i:])
		if extra > 0 {
			extra--
		}
		if ret != 0 && w == ret && extra < 0 {
			if r.kind != mpiabi.LayoutOMPI || !completionCalls[call] {
				break
			}
			extra = appFrameWords
		}
		if w == 0 || w%8 != 0 || seen[w] {
			continue
		}
		seen[w] = true
		var wt hang.Wait
		switch r.kind {
		case mpiabi.LayoutOMPI:
			wt, ok = r.ompiRequest(w)
		case mpiabi.LayoutMPICH:
			wt, ok = r.mpichRequest(w, comm)
		default:
			ok = false
		}
		if ok {
			out = append(out, wt)
		}
	}
	return out
}

// appFrameWords is how many words of the application's frame are read for
// the request array of MPI_Wait & co.
const appFrameWords = 256

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
	th.Waits = t.waits
	if th.Comm == nil {
		th.Comm = waitsComm(t.waits)
	}
	if n := p.p2p.note; n != "" && !slices.Contains(res.Notes, n) {
		res.Notes = append(res.Notes, n)
	}
}

// resolveCommPeers turns peers known only as ranks of a communicator into
// WORLD ranks, from the ranks observed here: the one rank whose thread is
// in a call on the same communicator with that rank in it. It returns the
// ranks as package hang sees them.
func resolveCommPeers(rs []Rank) []hang.Rank {
	type key struct {
		comm agg.Comm
		rank int
	}
	owners := map[key][]int{}
	for _, r := range rs {
		for _, t := range r.Threads {
			if t.Comm != nil && !t.Comm.Local && t.commRank >= 0 && r.Rank >= 0 {
				k := key{*t.Comm, t.commRank}
				if !slices.Contains(owners[k], r.Rank) {
					owners[k] = append(owners[k], r.Rank)
				}
			}
		}
	}
	out := make([]hang.Rank, 0, len(rs))
	for i := range rs {
		for j := range rs[i].Threads {
			ws := rs[i].Threads[j].Waits
			for k := range ws {
				w := &ws[k]
				if w.Peer != hang.PeerUnknown || w.CommPeer < 0 || w.Comm == nil || w.Comm.Local {
					continue
				}
				if o := owners[key{*w.Comm, w.CommPeer}]; len(o) == 1 {
					w.Peer = o[0]
				}
			}
		}
		out = append(out, hangRank(rs[i]))
	}
	return out
}

// frameArgs completes an MPICH thread's waits with the arguments its API
// function keeps in its frame (mpiabi.MPICHFrameArgs): MPI_Ssend's
// destination, which its request does not hold, and MPI_Probe's source
// and tag, for which there is no request. The slots come from the table
// of checked builds or, for another build, from decoding the function
// (inferredFrameArgs). Only at the return addresses they were found for,
// and only what passes the checks (the frame's request is the one read,
// or the frame's communicator handle names the request's communicator
// or is a communicator; the rank is one of the communicator's) is taken.
func (p *process) frameArgs(mem procfs.Memory, fs []unwind.Frame, regs unwind.Regs, frames []symbolize.Site, in inMPI, comm uint64, ws []hang.Wait) []hang.Wait {
	r := p.p2p
	if !r.ok || r.kind != mpiabi.LayoutMPICH || in.API <= 0 || in.API >= len(fs) || in.API >= len(frames) {
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
	frameComm := func() (agg.Comm, bool) {
		h, ok := slot(a.Handle)
		if !ok || !a.HasHandle {
			return agg.Comm{}, false
		}
		cm, ok := r.comms.mpichObject(uint32(h))
		if !ok || !r.comms.isComm(cm) {
			return agg.Comm{}, false
		}
		c, _, ok := r.comms.comm(cm)
		return c, ok
	}
	if a.ReqOff != 0 || (a.HasHandle && len(ws) > 0) {
		// A send: its request was read. The frame's request must be
		// it, or the frame's tag and communicator must single it out.
		var (
			i int
			w hang.Wait
		)
		if a.ReqOff != 0 {
			req, ok := r.u64(f.SP + uint64(a.ReqOff))
			if !ok {
				return ws
			}
			if w, ok = r.mpichRequest(req, comm); !ok || !okTag || int(tag) != w.Tag {
				return ws
			}
			i = slices.IndexFunc(ws, func(x hang.Wait) bool {
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
				tagged := x.Tag == int(tag) && x.Peer == hang.PeerUnknown
				unread := x.Tag == hang.TagUnknown && !x.Known
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
		if peer < 0 || peer >= maxRank || (c != nil && c.Size > 0 && int(peer) >= c.Size) {
			return ws
		}
		w.Known, w.Peer, w.CommPeer = !a.PeerMaybe, hang.PeerUnknown, -1
		if w.Tag == hang.TagUnknown && tag >= 0 && tag < maxTag {
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
	var c agg.Comm
	switch {
	case a.HasHandle:
		if c, ok = frameComm(); !ok {
			return ws
		}
	case a.CommOff != 0:
		// The communicator in the frame must carry the frame's handle
		// (an MPICH object starts with its handle).
		cm, ok1 := r.u64(f.SP + uint64(a.CommOff))
		h, ok2 := r.u32(f.SP + uint64(a.HandleOff))
		if !ok1 || !ok2 || !r.comms.isComm(cm) {
			return ws
		}
		if ch, ok := r.u32(cm); !ok || ch != h {
			return ws
		}
		if c, _, ok = r.comms.comm(cm); !ok {
			return ws
		}
	default:
		return ws
	}
	// A probe, or a send whose request could not be read (the UCX
	// request of a libucp build not yet learnt): the frame alone.
	send := !strings.HasSuffix(strings.ToLower(in.Call), "probe")
	w := hang.Wait{Send: send, Peer: hang.PeerUnknown, CommPeer: -1, Tag: hang.TagUnknown, Comm: &c, Known: !a.PeerMaybe}
	switch {
	case peer == r.req.AnySource && !send:
		w.Peer = hang.AnySource
	case peer < 0 || peer >= maxRank || (c.Size > 0 && int(peer) >= c.Size):
		return ws
	case c.Name == "WORLD":
		w.Peer = int(peer)
	default:
		w.CommPeer = int(peer)
	}
	switch {
	case !okTag:
	case tag == r.req.AnyTag:
		w.Tag = hang.AnyTag
	case tag >= 0 && tag < maxTag:
		w.Tag = int(tag)
	}
	return []hang.Wait{w}
}

// inferredFrameArgs decodes, once per build, function and return
// address, where the library's function fn keeps call's arguments
// (mpiabi.InferMPICHFrameArgs) for a build the table does not hold.
func (p *process) inferredFrameArgs(call, fn string, retPC uint64) (mpiabi.MPICHFrameArgs, bool) {
	if fn == "" || !mpiabi.FrameArgCall(call) {
		return mpiabi.MPICHFrameArgs{}, false
	}
	key := fmt.Sprintf("%s/%s/%#x", p.build, fn, retPC)
	if res, ok := p.files.frames[key]; ok {
		return res.args, res.err == nil
	}
	res := frameResult{err: fmt.Errorf("%s cannot be read", p.lib)}
	p.withLib(func(f *elf.File) { res.args, res.err = mpiabi.InferMPICHFrameArgs(f, call, fn, retPC) })
	if p.files.frames == nil {
		p.files.frames = map[string]frameResult{}
	}
	p.files.frames[key] = res
	return res.args, res.err == nil
}
