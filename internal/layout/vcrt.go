package layout

import (
	"encoding/binary"
	"fmt"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// The fields of MPICH ch3's virtual connection table (MPIDI_VCRT_t: an
// object header, the size, then the table of MPIDI_VC_t pointers), which
// a communicator's dev.vcrt points to, and of a virtual connection
// (pg_rank: the process's rank in its process group, WORLD's for the
// processes the job started with).
const (
	FieldVCRT        = "vc table"
	FieldVCRTSize    = "vc table size"
	FieldVCRTEntries = "vc table entries"
	FieldVCRank      = "vc rank"
)

// The bounds of the search in a table's header and in a connection.
const (
	maxVCRTHeader = 48
	maxVCScan     = 64
)

// vcrtPlace is where a communicator's table pointer (comm), the table's
// size and its first entry are.
type vcrtPlace struct{ comm, size, entries int64 }

// vcrts finds where MPICH ch3 keeps a communicator's connection table in
// the predefined objects: a pointer in WORLD and SELF to a table whose
// size is the job's in WORLD's and 1 in SELF's, whose entries follow the
// size, and SELF's only entry is WORLD's entry for this process. It
// returns the places and, for each, WORLD's entries. worldSize must be
// known (ch4 builds, whose objects hold no such table, find none).
func vcrts(world, self []byte, k Known, mem procfs.Memory) ([]vcrtPlace, [][]uint64) {
	if k.WorldSize <= 0 || k.WorldSize > maxMembers || mem == nil {
		return nil, nil
	}
	var places []vcrtPlace
	var tables [][]uint64
	for _, pp := range pointerPairs(world, self) {
		o, pw, ps := pp.off, pp.a, pp.b
		hw, hs := make([]byte, maxVCRTHeader), make([]byte, maxVCRTHeader)
		if mem(pw, hw) != nil || mem(ps, hs) != nil {
			continue
		}
		for _, s := range u32s(hw, hs, uint32(k.WorldSize), 1, ^uint32(0), 4) {
			for e := (s + 4 + 7) &^ 7; e+8 <= maxVCRTHeader; e += 8 {
				entries := make([]byte, 8*k.WorldSize)
				if mem(pw+uint64(e), entries) != nil {
					continue
				}
				me := binary.LittleEndian.Uint64(hs[e:])
				es, own, fits := make([]uint64, k.WorldSize), -1, true
				for i := range es {
					es[i] = binary.LittleEndian.Uint64(entries[8*i:])
					fits = fits && es[i] != 0 && es[i]%8 == 0
					if es[i] == me {
						own = i
					}
				}
				if fits && own >= 0 && (k.WorldRank < 0 || own == k.WorldRank) {
					places = append(places, vcrtPlace{o, s, int64(e)})
					tables = append(tables, es)
				}
				break // the entries follow the size
			}
		}
		if len(places) > maxFacts {
			break
		}
	}
	return places, tables
}

// inferVCRT adds the connection table's fields to r: the first place
// vcrts finds (dev.vcrt comes before dev.local_vcrt, which may point to
// the same table), and the rank in a connection, where each of WORLD's
// connections holds its index (the first such place: pg_rank comes
// before lpid, which holds the same in WORLD's).
func inferVCRT(r *Result, world, self []byte, k Known, mem procfs.Memory) {
	places, tables := vcrts(world, self, k, mem)
	if len(places) == 0 {
		r.add(Field{Name: FieldVCRT, How: Unknown, Note: "no ch3 connection table in the predefined objects (ch4, another device, or the job's size is not known)"})
		return
	}
	p, es := places[0], tables[0]
	note := "WORLD's and SELF's tables hold the job's size and 1, and SELF's connection is WORLD's for this process"
	if len(places) > 1 {
		note += fmt.Sprintf(" (the first of %d places)", len(places))
	}
	r.add(Field{Name: FieldVCRT, Value: uint64(p.comm), How: ObjectsOnly, Note: note})
	r.add(Field{Name: FieldVCRTSize, Value: uint64(p.size), How: ObjectsOnly})
	r.add(Field{Name: FieldVCRTEntries, Value: uint64(p.entries), How: ObjectsOnly})
	rank := Field{Name: FieldVCRank, How: Unknown, Note: "a job of one process cannot tell"}
	if len(es) < 2 {
		r.add(rank)
		return
	}
	vcs := make([][]byte, min(len(es), maxProcsRead))
	for i := range vcs {
		vcs[i] = make([]byte, maxVCScan)
		if mem(es[i], vcs[i]) != nil {
			rank.Note = fmt.Sprintf("WORLD's connection %d cannot be read", i)
			r.add(rank)
			return
		}
	}
	rank.Note = "no place holds each connection's index"
	for off := 0; off+4 <= maxVCScan; off += 4 {
		fits := true
		for i, b := range vcs {
			fits = fits && binary.LittleEndian.Uint32(b[off:]) == uint32(i)
		}
		if fits {
			rank = Field{Name: FieldVCRank, Value: uint64(off), How: ObjectsOnly,
				Note: fmt.Sprintf("each of %d of WORLD's connections holds its index there", len(vcs))}
			break
		}
	}
	r.add(rank)
}
