package probes

import "encoding/binary"

// CommIdentity reads, as the BPF side does (comm_slot in
// bpf/collectives.h), the identity of the communicator a handle names in a
// process: its context id masked, its size and the caller's rank in it.
// bias is the library's load bias; mem reads the process. ok is false when
// the handle does not decode to an object that can be read, or to one no
// longer alive (freed: its class or handle gone, no group size, or a rank
// outside it).
func (l CommLayout) CommIdentity(handle, bias uint64, mem func(addr uint64, p []byte) error) (id uint64, size, rank int32, ok bool) {
	u32 := func(a uint64) (uint32, bool) {
		var b [4]byte
		if mem(a, b[:]) != nil {
			return 0, false
		}
		return binary.LittleEndian.Uint32(b[:]), true
	}
	u64 := func(a uint64) (uint64, bool) {
		var b [8]byte
		if mem(a, b[:]) != nil {
			return 0, false
		}
		return binary.LittleEndian.Uint64(b[:]), true
	}
	var obj uint64
	switch l.Kind {
	case LayoutOMPI:
		obj = handle
	case LayoutMPICH:
		h := uint32(handle)
		if (h>>26)&0xf != 1 || l.ObjSize == 0 {
			return 0, 0, 0, false
		}
		idx := uint64(h & 0x03ffffff)
		switch h >> 30 {
		case 1:
			obj = bias + l.Builtin + idx*uint64(l.ObjSize)
		case 2:
			obj = bias + l.Direct + idx*uint64(l.ObjSize)
		case 3:
			if l.IndIndexMask == 0 {
				return 0, 0, 0, false
			}
			blocks, ok := u64(bias + l.Mem + uint64(l.IndBlocksOff))
			if !ok || blocks == 0 {
				return 0, 0, 0, false
			}
			block, ok := u64(blocks + 8*uint64((h>>l.IndShift)&l.IndBlockMask))
			if !ok || block == 0 {
				return 0, 0, 0, false
			}
			obj = block + uint64(h&l.IndIndexMask)*uint64(l.ObjSize)
		}
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
