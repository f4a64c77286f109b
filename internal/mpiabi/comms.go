package mpiabi

import (
	"bytes"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// Reading a process's communicator objects with its build's CommLayout.

// CommReader reads communicator objects of one process with the layout of
// its MPI library build.
type CommReader struct {
	Layout CommLayout
	Bias   uint64 // the library's load bias: runtime address minus file address
	Mem    procfs.Memory
}

func (r CommReader) u32(addr uint64) (uint32, bool) { return r.Mem.U32(addr) }

func (r CommReader) u64(addr uint64) (uint64, bool) { return r.Mem.U64(addr) }

// MPICHObject returns the address of the MPIR_Comm an MPICH handle names.
func (r CommReader) MPICHObject(h uint32) (uint64, bool) {
	return r.Layout.MPICHObject(h, r.Bias, r.Mem)
}

// IsComm reports whether addr is a communicator object: Open MPI's start
// with the class pointer of ompi_communicator_t; MPICH's start with their
// own handle, which must decode back to addr.
func (r CommReader) IsComm(addr uint64) bool {
	if addr%8 != 0 {
		return false
	}
	switch r.Layout.Kind {
	case LayoutOMPI:
		cls, ok := r.u64(addr + uint64(r.Layout.ClassOff))
		return ok && r.Layout.ClassAddr != 0 && cls == r.Bias+r.Layout.ClassAddr
	case LayoutMPICH:
		h, ok := r.u32(addr)
		if !ok {
			return false
		}
		obj, ok := r.MPICHObject(h)
		if !ok || obj != addr {
			return false
		}
		// MPICH's collectives also work on hidden per-node
		// sub-communicators (node_comm: context id + 2, node_roots_comm:
		// + 4; bits 1-2 of the id): they are not the application's.
		cid, ok := r.u32(addr + uint64(r.Layout.CIDOff))
		return ok && cid&r.Layout.CIDMask&mpichSubcommBits == 0
	}
	return false
}

// mpichSubcommBits are the bits of an MPICH context id that mark a hidden
// sub-communicator.
const mpichSubcommBits = 0x6

// Comm reads the identity of the communicator object at addr and the
// caller's rank in it.
func (r CommReader) Comm(addr uint64) (Comm, int, bool) {
	l := r.Layout
	cid, ok := r.u32(addr + uint64(l.CIDOff))
	if !ok {
		return Comm{}, -1, false
	}
	c := Comm{ID: uint64(cid & l.CIDMask), Size: -1}
	rank := -1
	if v, ok := r.u32(addr + uint64(l.RankOff)); ok {
		rank = int(int32(v))
	}
	switch l.Kind {
	case LayoutOMPI:
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
	case LayoutMPICH:
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
		return Comm{}, -1, false
	}
	return c, rank, true
}

// UserName reads the name the application gave the communicator, "" if none.
func (r CommReader) UserName(addr uint64) string {
	l := r.Layout
	if l.NameLen == 0 {
		return ""
	}
	at := addr + uint64(l.NameOff)
	if l.NamePtr {
		p, ok := r.Mem.U64(at)
		if !ok {
			return ""
		}
		at = p
	}
	b := make([]byte, l.NameLen)
	if at == 0 || r.Mem(at, b) != nil {
		return ""
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
