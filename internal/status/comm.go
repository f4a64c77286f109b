package status

import (
	"bytes"
	"encoding/binary"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/procfs"

	"github.com/mpiprobe/mpiprobe/agg"
)

// commReader reads communicator objects of one process with the layout of
// its MPI library build.
type commReader struct {
	layout mpiabi.CommLayout
	bias   uint64 // the library's load bias: runtime address minus file address
	mem    procfs.Memory
}

func (r commReader) u32(addr uint64) (uint32, bool) { return r.mem.U32(addr) }

func (r commReader) u64(addr uint64) (uint64, bool) { return r.mem.U64(addr) }

// mpichObject returns the address of the MPIR_Comm an MPICH handle names.
func (r commReader) mpichObject(h uint32) (uint64, bool) {
	return r.layout.MPICHObject(h, r.bias, r.mem)
}

// isComm reports whether addr is a communicator object: Open MPI's start
// with the class pointer of ompi_communicator_t; MPICH's start with their
// own handle, which must decode back to addr.
func (r commReader) isComm(addr uint64) bool {
	if addr%8 != 0 {
		return false
	}
	switch r.layout.Kind {
	case mpiabi.LayoutOMPI:
		cls, ok := r.u64(addr + uint64(r.layout.ClassOff))
		return ok && r.layout.ClassAddr != 0 && cls == r.bias+r.layout.ClassAddr
	case mpiabi.LayoutMPICH:
		h, ok := r.u32(addr)
		if !ok {
			return false
		}
		obj, ok := r.mpichObject(h)
		if !ok || obj != addr {
			return false
		}
		// MPICH's collectives also work on hidden per-node
		// sub-communicators (node_comm: context id + 2, node_roots_comm:
		// + 4; bits 1-2 of the id): they are not the application's.
		cid, ok := r.u32(addr + uint64(r.layout.CIDOff))
		return ok && cid&r.layout.CIDMask&mpichSubcommBits == 0
	}
	return false
}

// mpichSubcommBits are the bits of an MPICH context id that mark a hidden
// sub-communicator.
const mpichSubcommBits = 0x6

// comm reads the identity of the communicator object at addr and the
// caller's rank in it.
func (r commReader) comm(addr uint64) (agg.Comm, int, bool) {
	l := r.layout
	cid, ok := r.u32(addr + uint64(l.CIDOff))
	if !ok {
		return agg.Comm{}, -1, false
	}
	c := agg.Comm{ID: uint64(cid & l.CIDMask), Size: -1}
	rank := -1
	if v, ok := r.u32(addr + uint64(l.RankOff)); ok {
		rank = int(int32(v))
	}
	switch l.Kind {
	case mpiabi.LayoutOMPI:
		if g, ok := r.u64(addr + uint64(l.GroupOff)); ok && g != 0 {
			if v, ok := r.u32(g + uint64(l.SizeOff)); ok {
				c.Size = int(int32(v))
			}
		}
		switch c.ID {
		case 0:
			c.Name = "WORLD"
		case 1:
			c.Name = "SELF"
		}
	case mpiabi.LayoutMPICH:
		if v, ok := r.u32(addr + uint64(l.SizeOff)); ok {
			c.Size = int(int32(v))
		}
		if h, ok := r.u32(addr); ok {
			switch h {
			case 0x44000000:
				c.Name = "WORLD"
			case 0x44000001:
				c.Name = "SELF"
			}
		}
	default:
		return agg.Comm{}, -1, false
	}
	return c, rank, true
}

// userName reads the name the application gave the communicator, "" if none.
func (r commReader) userName(addr uint64) string {
	l := r.layout
	if l.NameLen == 0 {
		return ""
	}
	b := make([]byte, l.NameLen)
	if r.mem(addr+uint64(l.NameOff), b) != nil {
		return ""
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// The modes of MPICH ch4's rank map (enum MPIDI_rank_map_mode), in
// pairs: each plain mode names an address table, its _INTRA twin is
// table 0 (WORLD's processes).
const (
	mapDirect      = 0
	mapOffset      = 2
	mapStride      = 4
	mapStrideBlock = 6
	mapLUT         = 8
)

// mpichMembers returns the WORLD ranks of an MPICH ch4 communicator's
// members, in its rank order, from its rank map (an MPIDI_rank_map_t at
// MapOff: mode, address table, size, then offset, stride and block size,
// then the lookup table's two pointers). It returns nil when the map's
// place is unknown, when the map names another address table than
// WORLD's (spawned or connected processes), for the multi-table and
// empty modes, and above maxMembers. Under ch3, which has no rank map,
// they come from the connection table (ch3Members).
func (r commReader) mpichMembers(comm uint64) []int {
	l := r.layout
	if l.Kind == mpiabi.LayoutMPICH && l.MapOff == 0 && l.VCRTOff != 0 {
		return r.ch3Members(comm)
	}
	if l.Kind != mpiabi.LayoutMPICH || l.MapOff == 0 {
		return nil
	}
	var b [40]byte
	if r.mem(comm+uint64(l.MapOff), b[:]) != nil {
		return nil
	}
	i32 := func(off int) int { return int(int32(binary.LittleEndian.Uint32(b[off:]))) }
	mode, table, n := i32(0), i32(4), i32(8)
	offset, stride, block := i32(12), i32(16), i32(20)
	if table != 0 || n <= 0 || n > maxMembers || mode < 0 {
		return nil
	}
	out := make([]int, n)
	switch mode &^ 1 {
	case mapDirect:
		for i := range out {
			out[i] = i
		}
	case mapOffset:
		for i := range out {
			out[i] = i + offset
		}
	case mapStride:
		for i := range out {
			out[i] = i*stride + offset
		}
	case mapStrideBlock:
		if block <= 0 {
			return nil
		}
		for i := range out {
			out[i] = i/block*(stride-block) + i + offset
		}
	case mapLUT:
		lpids := binary.LittleEndian.Uint64(b[32:])
		raw := make([]byte, 4*n)
		if lpids == 0 || r.mem(lpids, raw) != nil {
			return nil
		}
		for i := range out {
			out[i] = int(int32(binary.LittleEndian.Uint32(raw[4*i:])))
		}
	default:
		return nil
	}
	for _, w := range out {
		if w < 0 || w >= maxRank {
			return nil
		}
	}
	return out
}

// ch3Members returns the WORLD ranks of an MPICH ch3 communicator's
// members from its connection table (dev.vcrt: a size, then one
// MPIDI_VC_t pointer per rank, each connection holding its rank in its
// process group). nil when a member's rank is not a plausible WORLD rank
// (a spawned or connected process group) or above maxMembers.
func (r commReader) ch3Members(comm uint64) []int {
	l := r.layout
	var b [8]byte
	if r.mem(comm+uint64(l.VCRTOff), b[:]) != nil {
		return nil
	}
	vcrt := binary.LittleEndian.Uint64(b[:])
	if vcrt == 0 || r.mem(vcrt+uint64(l.VCRTSizeOff), b[:4]) != nil {
		return nil
	}
	n := int(int32(binary.LittleEndian.Uint32(b[:4])))
	if n <= 0 || n > maxMembers {
		return nil
	}
	raw := make([]byte, 8*n)
	if r.mem(vcrt+uint64(l.VCRTEntriesOff), raw) != nil {
		return nil
	}
	out := make([]int, n)
	for i := range out {
		vc := binary.LittleEndian.Uint64(raw[8*i:])
		if vc == 0 || r.mem(vc+uint64(l.VCRankOff), b[:4]) != nil {
			return nil
		}
		if out[i] = int(int32(binary.LittleEndian.Uint32(b[:4]))); out[i] < 0 || out[i] >= maxRank {
			return nil
		}
	}
	return out
}
