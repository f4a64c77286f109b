package layout

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// Known are the values the predefined communicators must hold.
type Known struct {
	// WorldRank and WorldSize are the process's rank and the job's size,
	// from its environment; -1 when not known (the rank then only has to
	// be 0 in SELF).
	WorldRank, WorldSize int
}

// The names the predefined communicators carry.
const (
	worldName = "MPI_COMM_WORLD"
	selfName  = "MPI_COMM_SELF"
)

// u32s returns the 4-byte aligned offsets at which a holds wa and b holds
// wb, as 32-bit little-endian words masked with mask.
func u32s(a, b []byte, wa, wb, mask uint32, step int) []int64 {
	var out []int64
	n := min(len(a), len(b))
	for off := 0; off+4 <= n; off += step {
		if binary.LittleEndian.Uint32(a[off:])&mask == wa&mask && binary.LittleEndian.Uint32(b[off:])&mask == wb&mask {
			out = append(out, int64(off))
		}
	}
	return out
}

// nameOffsets returns the offsets at which world holds "MPI_COMM_WORLD"
// and self "MPI_COMM_SELF", NUL terminated.
func nameOffsets(world, self []byte) []int64 {
	var out []int64
	w, s := append([]byte(worldName), 0), append([]byte(selfName), 0)
	for off := 0; off+len(w) <= len(world) && off+len(s) <= len(self); off++ {
		if bytes.HasPrefix(world[off:], w) && bytes.HasPrefix(self[off:], s) {
			out = append(out, int64(off))
		}
	}
	return out
}

// namePointers returns the offsets at which world and self point to
// their names (Open MPI 5.0's c_name).
func namePointers(world, self []byte, mem procfs.Memory) []int64 {
	var out []int64
	if mem == nil {
		return nil
	}
	w, s := append([]byte(worldName), 0), append([]byte(selfName), 0)
	for _, pp := range pointerPairs(world, self) {
		bw, bs := make([]byte, len(w)), make([]byte, len(s))
		if mem(pp.a, bw) == nil && mem(pp.b, bs) == nil && bytes.Equal(bw, w) && bytes.Equal(bs, s) {
			out = append(out, pp.off)
		}
	}
	return out
}

// GroupSize is a place for the group size: the offset of the group
// pointer in the communicator and of the size in the group.
type GroupSize struct{ Group, Size int64 }

// maxGroupField bounds the offset searched for a size in a group object.
const maxGroupField = 64

// groupSizes returns where world and self point to a group whose size
// reads worldSize and 1: 8-byte aligned pointers in both objects, and
// 4-byte aligned offsets in the groups they point to.
func groupSizes(world, self []byte, worldSize int, mem procfs.Memory) []GroupSize {
	var out []GroupSize
	for _, pp := range pointerPairs(world, self) {
		off, pw, ps := pp.off, pp.a, pp.b
		gw, gs := make([]byte, maxGroupField), make([]byte, maxGroupField)
		if mem(pw, gw) != nil || mem(ps, gs) != nil {
			continue
		}
		for _, s := range anyU32s(gw, gs, worldSize, 1, ^uint32(0), 4) {
			if worldSize < 0 && int32(binary.LittleEndian.Uint32(gw[s:])) <= 0 {
				continue
			}
			out = append(out, GroupSize{Group: int64(off), Size: s})
		}
		if len(out) > maxFacts {
			break
		}
	}
	return out
}

// ptrPair is where two objects both hold a pointer, and the pointers.
type ptrPair struct {
	off  int64
	a, b uint64
}

// pointerPairs returns the 8-byte aligned offsets at which a and b hold
// two different non-null, 8-byte aligned pointers: where WORLD and SELF
// point to their own group or table (not to a class both share).
func pointerPairs(a, b []byte) []ptrPair {
	var out []ptrPair
	for off := 0; off+8 <= min(len(a), len(b)); off += 8 {
		pa, pb := binary.LittleEndian.Uint64(a[off:]), binary.LittleEndian.Uint64(b[off:])
		if pa != 0 && pb != 0 && pa != pb && pa%8 == 0 && pb%8 == 0 {
			out = append(out, ptrPair{int64(off), pa, pb})
		}
	}
	return out
}

// anyU32s is u32s with wa unknown (< 0): any value in a, wb in b.
func anyU32s(a, b []byte, wa int, wb, mask uint32, step int) []int64 {
	if wa >= 0 {
		return u32s(a, b, uint32(int32(wa)), wb, mask, step)
	}
	var out []int64
	n := min(len(a), len(b))
	for off := 0; off+4 <= n; off += step {
		if binary.LittleEndian.Uint32(b[off:])&mask == wb&mask {
			out = append(out, int64(off))
		}
	}
	return out
}

// without returns xs less the values in drop.
func without(xs []int64, drop ...int64) []int64 {
	var out []int64
	for _, x := range xs {
		if !slices.Contains(drop, x) {
			out = append(out, x)
		}
	}
	return out
}

// MPICH ch4's rank map (MPIDI_rank_map_t: mode, address table id, size,
// then the offset) and the modes of WORLD's and SELF's maps: rank r of
// WORLD is process r of table 0, rank 0 of SELF is process offset (the
// process's own rank).
const (
	rankMapDirectIntra = 1 // MPIDI_RANK_MAP_DIRECT_INTRA
	rankMapOffsetIntra = 3 // MPIDI_RANK_MAP_OFFSET_INTRA
)

// rankMaps returns the 4-byte aligned offsets at which world holds WORLD's
// rank map (DIRECT_INTRA, table 0, the job's size) and self SELF's
// (OFFSET_INTRA, table 0, size 1, the process's rank). An unknown size or
// rank (-1) accepts any positive size or any rank.
func rankMaps(world, self []byte, k Known) []int64 {
	var out []int64
	u := func(b []byte, off int) int32 { return int32(binary.LittleEndian.Uint32(b[off:])) }
	for off := 0; off+16 <= len(world) && off+16 <= len(self); off += 4 {
		ws, rank := u(world, off+8), u(self, off+12)
		if u(world, off) != rankMapDirectIntra || u(world, off+4) != 0 || ws <= 0 || (k.WorldSize >= 0 && int(ws) != k.WorldSize) {
			continue
		}
		if u(self, off) != rankMapOffsetIntra || u(self, off+4) != 0 || u(self, off+8) != 1 || rank < 0 || rank >= ws ||
			(k.WorldRank >= 0 && int(rank) != k.WorldRank) {
			continue
		}
		out = append(out, int64(off))
	}
	return out
}
