package layout

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// How says how a field was found.
type How string

// The ways a field is found, most trusted first.
const (
	// Verified: from the table of verified builds (set by the caller).
	Verified How = "verified table"
	// DebugInfo: from DWARF (set by the caller).
	DebugInfo How = "debug info"
	// ObjectsAccessor: the predefined objects hold the known values
	// there, and the library's accessor reads it.
	ObjectsAccessor How = "inferred: objects+accessor"
	// ObjectsSymbol: the predefined objects point there, and the
	// library's symbol of that name is there.
	ObjectsSymbol How = "inferred: objects+symbol"
	// ObjectsOnly: only the predefined objects say so.
	ObjectsOnly How = "inferred: objects only"
	// AccessorOnly: only the accessor code says so.
	AccessorOnly How = "inferred: accessor only"
	// ObjectsDebugInfo: the predefined objects hold the known values
	// there, and the library's own DWARF puts the field there.
	ObjectsDebugInfo How = "inferred: objects+debug info"
	// Unknown: not found; Note says why.
	Unknown How = "unknown"
)

// The fields of a communicator layout.
const (
	FieldClass       = "class"
	FieldClassOff    = "class offset"
	FieldCID         = "context id"
	FieldRank        = "rank"
	FieldGroup       = "group"
	FieldSize        = "size"
	FieldName        = "name"
	FieldNameLen     = "name length"
	FieldNamePtr     = "name by pointer"
	FieldBuiltin     = "builtin objects"
	FieldDirect      = "direct objects"
	FieldDirectCount = "direct count"
	FieldObjSize     = "object size"
	FieldMem         = "allocator"
	FieldIndBlocks   = "indirect blocks"
	FieldIndShift    = "indirect shift"
	FieldBlockMask   = "block mask"
	FieldIndexMask   = "index mask"
	FieldRankMap     = "rank map"
)

// Field is one inferred value: an offset, size, mask or file address.
type Field struct {
	Name  string `json:"field"`
	Value uint64 `json:"value"`
	How   How    `json:"how"`
	Note  string `json:"note,omitempty"`
}

// Found reports whether the field has a value.
func (f Field) Found() bool { return f.How != Unknown }

// Result is an inferred layout, field by field.
type Result struct {
	Fields []Field
}

// Get returns the named field (Unknown if absent).
func (r Result) Get(name string) Field {
	for _, f := range r.Fields {
		if f.Name == name {
			return f
		}
	}
	return Field{Name: name, How: Unknown, Note: "not inferred"}
}

// Confirm checks the fields of r against offsets read from the library's
// own DWARF (dwarf, by field name; Open MPI builds some into libmpi.so for
// its debugger support): a field found by one method only and confirmed
// becomes two (ObjectsOnly to ObjectsDebugInfo), one found by two says so
// in its note, one the DWARF places elsewhere or one not found takes the
// DWARF's value (DebugInfo), noting what inference said.
func (r *Result) Confirm(dwarf map[string]uint64) {
	for i := range r.Fields {
		f := &r.Fields[i]
		v, ok := dwarf[f.Name]
		if !ok {
			continue
		}
		switch {
		case !f.Found():
			f.Value, f.How, f.Note = v, DebugInfo, "not inferred ("+f.Note+")"
		case f.Value != v:
			f.Note = fmt.Sprintf("%s said %#x", f.How, f.Value)
			f.Value, f.How = v, DebugInfo
		case f.How == ObjectsOnly:
			f.How = ObjectsDebugInfo
		default:
			f.Note = strings.TrimPrefix(f.Note+"; debug info agrees", "; ")
		}
	}
}

// Missing lists the named fields that were not found, with why.
func (r Result) Missing(names ...string) []string {
	var out []string
	for _, n := range names {
		if f := r.Get(n); !f.Found() {
			out = append(out, n+": "+f.Note)
		}
	}
	return out
}

func (r *Result) add(f Field) { r.Fields = append(r.Fields, f) }

// decide combines the offsets the objects allow with those the accessor
// reads: agreement is used; a single candidate from one side is used with
// that said; disagreement or ambiguity is unknown.
func decide(name string, objects, accessor []int64) Field {
	objects, accessor = uniq(objects), uniq(accessor)
	f := Field{Name: name, How: Unknown}
	var both []int64
	for _, a := range accessor {
		if slices.Contains(objects, a) {
			both = append(both, a)
		}
	}
	switch {
	case len(both) == 1:
		f.Value, f.How = uint64(both[0]), ObjectsAccessor
	case len(both) > 1:
		f.Note = "accessors read several offsets the objects allow: " + offs(both)
	case len(accessor) == 1 && len(objects) == 0:
		f.Value, f.How = uint64(accessor[0]), AccessorOnly
		f.Note = "the predefined objects do not hold the expected values"
	case len(accessor) > 0 && len(objects) > 0:
		f.Note = fmt.Sprintf("the objects allow %s, the accessor reads %s", offs(objects), offs(accessor))
	case len(accessor) > 1:
		f.Note = "the accessor reads several offsets: " + offs(accessor)
	case len(objects) == 1:
		f.Value, f.How = uint64(objects[0]), ObjectsOnly
		f.Note = "no accessor reads it"
	case len(objects) > 1:
		f.Note = "the objects allow " + offs(objects) + " and no accessor decides"
	default:
		f.Note = "the objects do not hold the expected values and no accessor reads it"
	}
	return f
}

func uniq(xs []int64) []int64 {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

func offs(xs []int64) string {
	var s []string
	for i, x := range xs {
		if i == 6 {
			s = append(s, fmt.Sprintf("... (%d)", len(xs)))
			break
		}
		s = append(s, fmt.Sprintf("+%#x", x))
	}
	return strings.Join(s, ", ")
}

// stored returns the chains the accessor stores through argument arg.
func stored(f Facts, arg, depth int) []int64 {
	var out []int64
	for _, s := range f.Stores {
		if s.Arg == arg && len(s.Chain) == depth {
			out = append(out, s.Chain[depth-1])
		}
	}
	return out
}

// The objects' sizes read: Open MPI pads its predefined communicators to
// 512 bytes; MPICH's MPIR_Comm is under 2 KiB.
const (
	// OMPIObjectSize is how much of each predefined communicator is read.
	OMPIObjectSize = 512
	maxObjSize     = 1 << 14
)

// OMPI holds what Open MPI's layout is inferred from.
type OMPI struct {
	// World and Self are the bytes of ompi_mpi_comm_world and
	// ompi_mpi_comm_self (OMPIObjectSize each).
	World, Self []byte
	// ClassSym is the file address of ompi_communicator_t_class, 0 if
	// the library does not export it; Bias the library's load bias.
	ClassSym, Bias uint64
	// Rank, Size, Name and C2F are the analyses of PMPI_Comm_rank,
	// PMPI_Comm_size, PMPI_Comm_get_name and PMPI_Comm_c2f.
	Rank, Size, Name, C2F Facts
	Known                 Known
	// Mem reads the groups the communicators point to.
	Mem procfs.Memory
}

// ompiNameLen is MPI_MAX_OBJECT_NAME in Open MPI's mpi.h, an ABI constant.
const ompiNameLen = 64

// InferOMPI locates the fields of ompi_communicator_t. It fails only when
// the objects are not initialized yet (MPI_Init has not set them up).
func InferOMPI(in OMPI) (Result, error) {
	var r Result
	if len(in.World) < 16 || len(in.Self) < 16 {
		return r, fmt.Errorf("predefined communicators of %d and %d bytes: too short", len(in.World), len(in.Self))
	}
	// The class pointer: the first word both objects share that is
	// ompi_communicator_t_class (a debug build puts a magic number
	// before it), or, without the symbol, the first shared word above
	// the library's load address.
	clsOff, cw := -1, uint64(0)
	for off := 0; off+8 <= min(len(in.World), len(in.Self), 64); off += 8 {
		w := binary.LittleEndian.Uint64(in.World[off:])
		if w == 0 || w != binary.LittleEndian.Uint64(in.Self[off:]) || w <= in.Bias {
			continue
		}
		if in.ClassSym == 0 || w-in.Bias == in.ClassSym {
			clsOff, cw = off, w
			break
		}
	}
	if clsOff < 0 {
		return r, errNotReady
	}
	cls := Field{Name: FieldClass, Value: cw - in.Bias, How: ObjectsSymbol}
	if in.ClassSym == 0 {
		cls.How, cls.Note = ObjectsOnly, "the library does not export ompi_communicator_t_class"
	}
	r.add(cls)
	r.add(Field{Name: FieldClassOff, Value: uint64(clsOff), How: cls.How, Note: cls.Note})

	var nameAcc, namePtrAcc []int64
	var lens []int64
	for _, c := range in.Name.Copies {
		if c.Arg == 1 && len(c.Chain) == 1 {
			if c.Ptr {
				namePtrAcc = append(namePtrAcc, c.Chain[0])
			} else {
				nameAcc = append(nameAcc, c.Chain[0])
			}
			lens = append(lens, c.Len)
		}
	}
	objectsNamed := len(nameOffsets(in.World, in.Self)) > 0
	name := decide(FieldName, nameOffsets(in.World, in.Self), nameAcc)
	if !name.Found() {
		// Open MPI 5.0: a pointer to the name.
		ptrs := namePointers(in.World, in.Self, in.Mem)
		if ptr := decide(FieldName, ptrs, namePtrAcc); ptr.Found() {
			name, objectsNamed = ptr, len(ptrs) > 0
			r.add(Field{Name: FieldNamePtr, Value: 1, How: ptr.How, Note: "the communicator points to its name"})
		}
	}
	r.add(name)
	nl := Field{Name: FieldNameLen, Value: ompiNameLen, How: ObjectsOnly, Note: "MPI_MAX_OBJECT_NAME of Open MPI's mpi.h"}
	if l := uniq(lens); len(l) == 1 && l[0] > 0 && l[0] <= 256 {
		nl = Field{Name: FieldNameLen, Value: uint64(l[0]), How: AccessorOnly, Note: "the length MPI_Comm_get_name copies"}
	}
	r.add(nl)

	rank := decide(FieldRank, anyU32s(in.World, in.Self, in.Known.WorldRank, 0, ^uint32(0), 4), stored(in.Rank, 1, 1))
	r.add(rank)
	if !objectsNamed && rank.How != ObjectsAccessor {
		// Neither the names nor the rank are where they should be: the
		// objects are still being set up.
		return Result{}, errNotReady
	}

	// The group size, through the group pointer.
	var grp, size Field
	cands := groupSizes(in.World, in.Self, in.Known.WorldSize, in.Mem)
	var acc []GroupSize
	for _, s := range in.Size.Stores {
		if s.Arg == 1 && len(s.Chain) == 2 {
			acc = append(acc, GroupSize{s.Chain[0], s.Chain[1]})
		}
	}
	grp, size = decideGroup(cands, acc)
	r.add(grp)
	r.add(size)

	// The context id: WORLD 0, SELF 1, not a field read for something
	// else (PMPI_Comm_c2f returns the Fortran index, which has the same
	// values for both).
	cids := u32s(in.World, in.Self, 0, 1, ^uint32(0), 4)
	var taken []int64
	for _, f := range in.C2F.Returns {
		if len(f.Chain) == 1 {
			taken = append(taken, f.Chain[0])
		}
	}
	for _, f := range []Field{rank} {
		if f.Found() {
			taken = append(taken, int64(f.Value))
		}
	}
	cid := decide(FieldCID, without(cids, taken...), nil)
	if !cid.Found() && rank.Found() && slices.Contains(cids, int64(rank.Value)-4) {
		// Open MPI declares c_contextid right before c_my_rank.
		cid = Field{Name: FieldCID, Value: rank.Value - 4, How: ObjectsOnly,
			Note: "of " + offs(without(cids, taken...)) + ", the one before the rank"}
	} else if cid.Found() && len(taken) > 0 {
		cid.Note = "PMPI_Comm_c2f's " + offs(taken[:len(in.C2F.Returns)]) + " excluded"
	}
	r.add(cid)
	return r, nil
}

// decideGroup is decide for the pair (group pointer, size in the group).
func decideGroup(cands, acc []GroupSize) (Field, Field) {
	unknown := func(note string) (Field, Field) {
		return Field{Name: FieldGroup, How: Unknown, Note: note}, Field{Name: FieldSize, How: Unknown, Note: note}
	}
	pick := func(g GroupSize, how How, note string) (Field, Field) {
		return Field{Name: FieldGroup, Value: uint64(g.Group), How: how, Note: note},
			Field{Name: FieldSize, Value: uint64(g.Size), How: how, Note: note}
	}
	var both []GroupSize
	for _, a := range acc {
		if slices.Contains(cands, a) && !slices.Contains(both, a) {
			both = append(both, a)
		}
	}
	switch {
	case len(both) == 1:
		return pick(both[0], ObjectsAccessor, "")
	case len(both) > 1:
		return unknown("the accessor reads several group sizes the objects allow")
	case len(acc) == 1 && len(cands) == 0:
		return pick(acc[0], AccessorOnly, "the predefined objects do not hold the expected group sizes")
	case len(acc) > 0 && len(cands) > 0:
		return unknown(fmt.Sprintf("the accessor reads +%#x→+%#x, which the objects do not allow", acc[0].Group, acc[0].Size))
	case len(cands) == 1:
		return pick(cands[0], ObjectsOnly, "no accessor reads it")
	case len(cands) > 1:
		return unknown(fmt.Sprintf("%d places hold the group sizes and no accessor decides", len(cands)))
	}
	return unknown("no group pointer leads to the sizes")
}

// errNotReady says the predefined objects are not set up yet.
var errNotReady = fmt.Errorf("the predefined communicators are not initialized yet (before MPI_Init)")

// ErrNotReady reports whether err says that the process has not reached
// MPI_Init's setup of the predefined communicators yet.
func ErrNotReady(err error) bool { return err == errNotReady }

// MPICH holds what MPICH's layout is inferred from.
type MPICH struct {
	// Rank, Size and Name are the analyses of PMPI_Comm_rank,
	// PMPI_Comm_size and PMPI_Comm_get_name.
	Rank, Size, Name Facts
	// Bias is the library's load bias; Mem reads the process.
	Bias  uint64
	Mem   procfs.Memory
	Known Known
}

// MPICH's handles of MPI_COMM_WORLD and MPI_COMM_SELF, and the context ids
// its predefined communicators get (0 and 1, shifted past the 4 flag bits).
const (
	mpichWorld    = 0x44000000
	mpichSelf     = 0x44000001
	mpichWorldCID = 0
	mpichSelfCID  = 1 << 4
	mpichNameLen  = 128 // MPI_MAX_OBJECT_NAME of MPICH's mpi.h
)

// table is an object array the handle decoding adds: where its address
// is (a GOT slot or the array itself) and the object size.
type table struct {
	addr uint64
	slot bool
	size int64
}

// InferMPICH locates MPICH's object tables and the fields of MPIR_Comm.
func InferMPICH(in MPICH) (Result, error) {
	var r Result
	var tables []table
	var ind *Op
	var indexMask int64
	for _, f := range []Facts{in.Rank, in.Size, in.Name} {
		for _, p := range f.Paths {
			var size int64
			for i, op := range p {
				switch op.Kind {
				case OpMul:
					size = op.Imm
				case OpAddSlot, OpAddGlobal:
					t := table{addr: op.Addr, slot: op.Kind == OpAddSlot, size: size}
					if size > 0 && size < maxObjSize && !slices.Contains(tables, t) {
						tables = append(tables, t)
					}
				case OpAddBlock:
					if ind == nil {
						o := op
						ind = &o
						for _, q := range p[:i] {
							if q.Kind == OpAnd {
								indexMask = q.Imm
								break
							}
						}
					}
				}
			}
		}
	}
	if len(tables) == 0 {
		return r, fmt.Errorf("no object table found in PMPI_Comm_rank's handle decoding")
	}
	// The builtin table is the one whose first two objects carry the
	// handles of WORLD and SELF.
	var world, self []byte
	var builtin, direct *table
	var builtinAddr uint64
	for i, t := range tables {
		addr, ok := tableAddr(in, t)
		if !ok {
			continue
		}
		b := make([]byte, 2*t.size)
		if in.Mem(addr, b) != nil {
			continue
		}
		if binary.LittleEndian.Uint32(b) == mpichWorld && binary.LittleEndian.Uint32(b[t.size:]) == mpichSelf {
			builtin, builtinAddr = &tables[i], addr
			world, self = b[:t.size], b[t.size:]
			break
		}
	}
	if builtin == nil {
		return r, errNotReady
	}
	r.add(Field{Name: FieldBuiltin, Value: builtinAddr - in.Bias, How: ObjectsAccessor})
	r.add(Field{Name: FieldObjSize, Value: uint64(builtin.size), How: ObjectsAccessor})
	for i, t := range tables {
		if &tables[i] != builtin && t.size == builtin.size {
			if direct != nil {
				direct = nil
				break
			}
			direct = &tables[i]
		}
	}
	if direct == nil {
		r.add(Field{Name: FieldDirect, How: Unknown, Note: fmt.Sprintf("%d object tables besides the builtin one", len(tables)-1)})
	} else if addr, ok := tableAddr(in, *direct); ok {
		d := Field{Name: FieldDirect, Value: addr - in.Bias, How: AccessorOnly}
		cnt := Field{Name: FieldDirectCount, How: Unknown, Note: "the allocator does not hold the direct array's address"}
		if ind != nil {
			// The allocator object holds the direct array's address, the
			// object size before it and the array's length after it.
			m := make([]byte, 128)
			if in.Mem(in.Bias+ind.Addr, m) == nil {
				for off := 8; off+16 <= len(m); off += 8 {
					if binary.LittleEndian.Uint64(m[off:]) == addr && int64(binary.LittleEndian.Uint32(m[off-8:])) == builtin.size {
						d.How = ObjectsAccessor
						if n := binary.LittleEndian.Uint32(m[off+8:]); n > 0 && n <= 1<<20 {
							cnt = Field{Name: FieldDirectCount, Value: uint64(n), How: ObjectsOnly, Note: "the allocator's count after the direct array"}
						}
						break
					}
				}
			}
		}
		r.add(d)
		r.add(cnt)
	} else {
		r.add(Field{Name: FieldDirect, How: Unknown, Note: "its GOT slot cannot be read"})
	}
	if ind != nil {
		r.add(Field{Name: FieldMem, Value: ind.Addr, How: AccessorOnly})
		r.add(Field{Name: FieldIndBlocks, Value: uint64(ind.Off), How: AccessorOnly})
		shift, mask := int64(-1), int64(-1)
		for i, q := range ind.Index {
			if q.Kind == OpShr && i+1 < len(ind.Index) && ind.Index[i+1].Kind == OpAnd {
				shift, mask = q.Imm, ind.Index[i+1].Imm
			}
		}
		if shift > 0 && shift < 32 && mask > 0 && indexMask > 0 {
			r.add(Field{Name: FieldIndShift, Value: uint64(shift), How: AccessorOnly})
			r.add(Field{Name: FieldBlockMask, Value: uint64(mask), How: AccessorOnly})
			r.add(Field{Name: FieldIndexMask, Value: uint64(indexMask), How: AccessorOnly})
		}
	}

	var nameAcc, lens []int64
	for _, c := range in.Name.Copies {
		if c.Arg == 1 && len(c.Chain) == 1 {
			nameAcc = append(nameAcc, c.Chain[0])
			lens = append(lens, c.Len)
		}
	}
	r.add(decide(FieldName, nameOffsets(world, self), nameAcc))
	nl := Field{Name: FieldNameLen, Value: mpichNameLen, How: ObjectsOnly, Note: "MPI_MAX_OBJECT_NAME of MPICH's mpi.h"}
	if l := uniq(lens); len(l) == 1 && l[0] > 0 && l[0] <= 256 {
		nl = Field{Name: FieldNameLen, Value: uint64(l[0]), How: AccessorOnly, Note: "the length MPI_Comm_get_name copies"}
	}
	r.add(nl)
	rank := decide(FieldRank, anyU32s(world, self, in.Known.WorldRank, 0, ^uint32(0), 4), stored(in.Rank, 1, 1))
	r.add(rank)
	if len(nameOffsets(world, self)) == 0 && rank.How != ObjectsAccessor {
		return Result{}, errNotReady
	}
	sizes := anyU32s(world, self, in.Known.WorldSize, 1, ^uint32(0), 4)
	if in.Known.WorldSize < 0 {
		var pos []int64
		for _, s := range sizes {
			if v := int32(binary.LittleEndian.Uint32(world[s:])); v > 0 {
				pos = append(pos, s)
			}
		}
		sizes = pos
	}
	r.add(decide(FieldSize, sizes, stored(in.Size, 1, 1)))
	// The context id, 16 bits: context_id and recvcontext_id follow each
	// other and hold the same values in both: the first is the one.
	cids := u32s(world, self, mpichWorldCID, mpichSelfCID, 0xffff, 2)
	cid := decide(FieldCID, cids, nil)
	if !cid.Found() && len(cids) == 2 && cids[1] == cids[0]+2 {
		cid = Field{Name: FieldCID, Value: uint64(cids[0]), How: ObjectsOnly,
			Note: fmt.Sprintf("+%#x and +%#x (context_id, recvcontext_id) hold it: the first", cids[0], cids[1])}
	}
	r.add(cid)
	rm := decide(FieldRankMap, rankMaps(world, self, in.Known), nil)
	if !rm.Found() && rm.Note == "the objects do not hold the expected values and no accessor reads it" {
		rm.Note = "no ch4 rank map in the predefined objects (ch3, or another device)"
	}
	r.add(rm)
	if !rm.Found() {
		inferVCRT(&r, world, self, in.Known, in.Mem)
	}
	return r, nil
}

// tableAddr returns the runtime address of a table.
func tableAddr(in MPICH, t table) (uint64, bool) {
	if !t.slot {
		return in.Bias + t.addr, true
	}
	var b [8]byte
	if in.Mem(in.Bias+t.addr, b[:]) != nil {
		return 0, false
	}
	a := binary.LittleEndian.Uint64(b[:])
	return a, a > in.Bias
}
