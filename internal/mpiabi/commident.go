package mpiabi

import (
	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// CommIdentity reads, as the BPF side does (comm_slot in
// bpf/collectives.h), the identity of the communicator a handle names in a
// process: its context id masked, its size and the caller's rank in it.
// bias is the library's load bias; mem reads the process. ok is false when
// the handle does not decode to an object that can be read, or to one no
// longer alive (freed: its class or handle gone, no group size, or a rank
// outside it).
func (l CommLayout) CommIdentity(handle, bias uint64, mem procfs.Memory) (id uint64, size, rank int32, ok bool) {
	u32, u64 := mem.U32, mem.U64
	var obj uint64
	switch l.Kind {
	case LayoutOMPI:
		obj = handle
	case LayoutMPICH:
		o, ok := l.MPICHObject(uint32(handle), bias, mem)
		if !ok {
			return 0, 0, 0, false
		}
		obj = o
	}
	if obj == 0 {
		return 0, 0, 0, false
	}
	// Only a communicator still alive: a freed object no longer holds
	// its class (Open MPI; free() reuses the first words) or its handle
	// and a reference (MPICH).
	switch l.Kind {
	case LayoutOMPI:
		if cls, ok := u64(obj + uint64(l.ClassOff)); l.ClassAddr != 0 && (!ok || cls != bias+l.ClassAddr) {
			return 0, 0, 0, false
		}
	case LayoutMPICH:
		if h, ok := u32(obj); !ok || h != uint32(handle) {
			return 0, 0, 0, false
		}
		if refs, ok := u32(obj + 4); !ok || int32(refs) <= 0 {
			return 0, 0, 0, false
		}
	}
	cid, ok := u32(obj + uint64(l.CIDOff))
	if !ok {
		return 0, 0, 0, false
	}
	r, ok := u32(obj + uint64(l.RankOff))
	if !ok {
		return 0, 0, 0, false
	}
	size = -1
	if l.Kind == LayoutOMPI {
		if g, ok := u64(obj + uint64(l.GroupOff)); ok && g != 0 {
			if v, ok := u32(g + uint64(l.SizeOff)); ok {
				size = int32(v)
			}
		}
	} else if v, ok := u32(obj + uint64(l.SizeOff)); ok {
		size = int32(v)
	}
	if size <= 0 || int32(r) < 0 || int32(r) >= size {
		return 0, 0, 0, false // not a live communicator's
	}
	return uint64(cid & l.CIDMask), size, int32(r), true
}

// MPICHObject returns the address of the MPIR_Comm an MPICH communicator
// handle names: a builtin or direct object by index into the library's
// tables (bias is its load bias), an indirect one through the block array
// of MPIR_Comm_mem. ok is false for a handle of another kind or outside
// the tables.
func (l CommLayout) MPICHObject(h uint32, bias uint64, mem procfs.Memory) (uint64, bool) {
	if (h>>26)&0xf != 1 || l.ObjSize == 0 {
		return 0, false
	}
	idx := uint64(h & 0x03ffffff)
	switch h >> 30 {
	case 1:
		return bias + l.Builtin + idx*uint64(l.ObjSize), true
	case 2:
		if l.DirectCount != 0 && idx >= uint64(l.DirectCount) {
			return 0, false
		}
		return bias + l.Direct + idx*uint64(l.ObjSize), true
	case 3:
		if l.IndIndexMask == 0 {
			return 0, false
		}
		blocks, ok := mem.U64(bias + l.Mem + uint64(l.IndBlocksOff))
		if !ok || blocks == 0 {
			return 0, false
		}
		block, ok := mem.U64(blocks + 8*uint64((h>>l.IndShift)&l.IndBlockMask))
		if !ok || block == 0 {
			return 0, false
		}
		return block + uint64(h&l.IndIndexMask)*uint64(l.ObjSize), true
	}
	return 0, false
}
