package mpiabi

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestCommIdentity(t *testing.T) {
	mem := map[uint64][]byte{}
	read := func(addr uint64, p []byte) error {
		for base, b := range mem {
			if addr >= base && addr-base+uint64(len(p)) <= uint64(len(b)) {
				copy(p, b[addr-base:])
				return nil
			}
		}
		return errors.New("unmapped")
	}
	// Open MPI: the handle is the object; the size is in its group.
	ompi := commLayouts["2a2f4d8c4f8dc5dcc63f6789a50f3ab49f61e168"]
	obj, grp := make([]byte, 512), make([]byte, 64)
	binary.LittleEndian.PutUint32(obj[ompi.CIDOff:], 3)
	binary.LittleEndian.PutUint32(obj[ompi.RankOff:], 1)
	binary.LittleEndian.PutUint64(obj[ompi.GroupOff:], 0x9000)
	binary.LittleEndian.PutUint32(grp[ompi.SizeOff:], 4)
	binary.LittleEndian.PutUint64(obj[ompi.ClassOff:], ompi.ClassAddr)
	mem[0x8000], mem[0x9000] = obj, grp
	if id, size, rank, ok := ompi.CommIdentity(0x8000, 0, read); !ok || id != 3 || size != 4 || rank != 1 {
		t.Errorf("Open MPI: %d %d %d %v, want 3 4 1 true", id, size, rank, ok)
	}
	// Freed: free() wrote over the class pointer; or the group is gone.
	freed := append([]byte(nil), obj...)
	binary.LittleEndian.PutUint64(freed[ompi.ClassOff:], 0x55550000)
	mem[0xa000] = freed
	if _, _, _, ok := ompi.CommIdentity(0xa000, 0, read); ok {
		t.Error("Open MPI: a freed communicator resolved")
	}
	noGroup := append([]byte(nil), obj...)
	binary.LittleEndian.PutUint64(noGroup[ompi.GroupOff:], 0)
	mem[0xb000] = noGroup
	if _, _, _, ok := ompi.CommIdentity(0xb000, 0, read); ok {
		t.Error("Open MPI: a communicator without a group resolved")
	}
	if _, _, _, ok := ompi.CommIdentity(0x1, 0, read); ok {
		t.Error("Open MPI: an unreadable handle resolved")
	}
	// MPICH: a direct handle decodes into the direct array.
	mpich := commLayouts["15ff29242f0f6336eb8096d953e03de259b65bb4"]
	const bias = 0x100000000
	direct := make([]byte, 2*mpich.ObjSize)
	o := direct[mpich.ObjSize:]
	binary.LittleEndian.PutUint32(o, 0x84000001)
	binary.LittleEndian.PutUint32(o[4:], 1)
	binary.LittleEndian.PutUint32(o[mpich.CIDOff:], 0x1f0|0x1f0<<16)
	binary.LittleEndian.PutUint32(o[mpich.RankOff:], 2)
	binary.LittleEndian.PutUint32(o[mpich.SizeOff:], 3)
	mem[bias+mpich.Direct] = direct
	if id, size, rank, ok := mpich.CommIdentity(0x84000001, bias, read); !ok || id != 0x1f0 || size != 3 || rank != 2 {
		t.Errorf("MPICH: %#x %d %d %v, want 0x1f0 3 2 true", id, size, rank, ok)
	}
	binary.LittleEndian.PutUint32(o[4:], 0) // freed: no reference left
	if _, _, _, ok := mpich.CommIdentity(0x84000001, bias, read); ok {
		t.Error("MPICH: a freed communicator resolved")
	}
	if _, _, _, ok := mpich.CommIdentity(0x8c000001, bias, read); ok {
		t.Error("MPICH: a handle of another object kind resolved")
	}
	if _, _, _, ok := (CommLayout{}).CommIdentity(0x8000, 0, read); ok {
		t.Error("the unknown layout resolved a handle")
	}
}
