package mpiabi

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/layout"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// NoVerifiedLayoutsEnv names the environment variable that, set to 1,
// turns the tables of verified builds off (communicator, free-list, ob1
// and MPICH request, UCX request layouts and MPICH frame slots): layouts then come from debug info or are inferred, as for a
// build nobody checked. It exists for tests, which run the same checks
// with and without the tables.
const NoVerifiedLayoutsEnv = "MPIPROBE_NO_VERIFIED_LAYOUTS"

// verifiedLayoutsOn reports whether the tables of verified builds are used.
func verifiedLayoutsOn() bool { return os.Getenv(NoVerifiedLayoutsEnv) != "1" }

// LayoutField is one field of a struct layout with where it came from, in
// the order of trust: layout.Verified, layout.DebugInfo, the inferred
// kinds, layout.Unknown.
type LayoutField = layout.Field

// LiveProcess is what inference reads of a process that maps the library:
// its memory, the library's load bias there, and the world rank and size
// its environment gives (-1 when unknown).
type LiveProcess struct {
	Mem                  procfs.Memory
	Bias                 uint64
	WorldRank, WorldSize int
	// OMPIName is the process's Open MPI name (job id, then vpid in
	// the high half) when its environment gives it (OMPIName); 0 when
	// unknown.
	OMPIName uint64
}

// OMPIName returns the process name that Open MPI 4's mpirun gives a rank
// in its environment (OMPI_MCA_ess_base_jobid and _vpid: job id, then
// vpid in the high half), 0 when the environment has none.
func OMPIName(env map[string]string) uint64 {
	job, err1 := strconv.ParseUint(env["OMPI_MCA_ess_base_jobid"], 10, 32)
	vpid, err2 := strconv.ParseUint(env["OMPI_MCA_ess_base_vpid"], 10, 32)
	if err1 != nil || err2 != nil || job == 0 {
		return 0
	}
	return vpid<<32 | job
}

// CommLayoutResult is a communicator layout with the source of each field.
type CommLayoutResult struct {
	Layout CommLayout
	// Fields says, field by field, where the value came from.
	Fields []LayoutField
	// Took is how long the inference took (0 for the table).
	Took time.Duration
}

// ErrLayoutNotReady says that the process has not set up its predefined
// communicators yet (it is before MPI_Init): try again later.
var ErrLayoutNotReady = errors.New("the predefined communicators are not initialized yet (before MPI_Init)")

// ResolveCommLayout returns the communicator layout of the library file f
// (of flavour fl and build id buildID) as a live process p uses it: the
// table of verified builds, else inferred from p's predefined communicators
// and the library's accessors. The error wraps ErrLayoutNotReady when p
// has not passed MPI_Init's setup yet.
func ResolveCommLayout(f *elf.File, fl Flavour, buildID string, p LiveProcess) (CommLayoutResult, error) {
	if l, ok := CommLayoutOf(buildID); ok {
		return CommLayoutResult{Layout: l, Fields: verifiedFields(l)}, nil
	}
	return InferCommLayout(f, fl, p)
}

// verifiedFields lists a table layout's fields as verified.
func verifiedFields(l CommLayout) []LayoutField {
	var out []LayoutField
	for _, f := range commFields(l) {
		out = append(out, LayoutField{Name: f.name, Value: f.v, How: layout.Verified})
	}
	return out
}

type namedValue struct {
	name string
	v    uint64
}

// commFields lists the fields a layout kind uses.
func commFields(l CommLayout) []namedValue {
	switch l.Kind {
	case LayoutOMPI:
		return []namedValue{
			{layout.FieldClass, l.ClassAddr}, {layout.FieldClassOff, uint64(l.ClassOff)}, {layout.FieldCID, uint64(l.CIDOff)}, {layout.FieldRank, uint64(l.RankOff)},
			{layout.FieldGroup, uint64(l.GroupOff)}, {layout.FieldSize, uint64(l.SizeOff)},
			{layout.FieldName, uint64(l.NameOff)}, {layout.FieldNameLen, uint64(l.NameLen)},
		}
	case LayoutMPICH:
		return []namedValue{
			{layout.FieldBuiltin, l.Builtin}, {layout.FieldDirect, l.Direct}, {layout.FieldDirectCount, uint64(l.DirectCount)},
			{layout.FieldObjSize, uint64(l.ObjSize)}, {layout.FieldMem, l.Mem}, {layout.FieldIndBlocks, uint64(l.IndBlocksOff)},
			{layout.FieldIndShift, uint64(l.IndShift)}, {layout.FieldBlockMask, uint64(l.IndBlockMask)}, {layout.FieldIndexMask, uint64(l.IndIndexMask)},
			{layout.FieldCID, uint64(l.CIDOff)}, {layout.FieldRank, uint64(l.RankOff)}, {layout.FieldSize, uint64(l.SizeOff)},
			{layout.FieldName, uint64(l.NameOff)}, {layout.FieldNameLen, uint64(l.NameLen)},
			{layout.FieldRankMap, uint64(l.MapOff)},
		}
	}
	return nil
}

// textCode serves the analysis the bytes of the file's .text section, read
// a page at a time as the analysis asks for them.
func textCode(f *elf.File) (layout.Code, error) {
	sec := f.Section(".text")
	if sec == nil || sec.Type != elf.SHT_PROGBITS {
		return nil, errors.New("no .text section")
	}
	const page = 4096
	pages := map[uint64][]byte{}
	read := func(n uint64) []byte {
		if b, ok := pages[n]; ok {
			return b
		}
		size := min(uint64(page), sec.Size-n*page)
		b := make([]byte, size)
		if _, err := sec.ReadAt(b, int64(n*page)); err != nil && !errors.Is(err, io.EOF) {
			b = nil
		}
		pages[n] = b
		return b
	}
	return func(addr uint64, n int) []byte {
		if addr < sec.Addr || addr-sec.Addr >= sec.Size || n <= 0 {
			return nil
		}
		off := addr - sec.Addr
		b := read(off / page)
		if uint64(len(b)) <= off%page {
			return nil
		}
		b = b[off%page:]
		if len(b) < n && (off/page+1)*page < sec.Size {
			// The instruction crosses a page: join the next one.
			b = append(append([]byte(nil), b...), read(off/page+1)...)
		}
		return b[:min(n, len(b))]
	}, nil
}

// InferCommLayout infers the communicator layout of the library file f
// from a live process p that maps it and has passed MPI_Init: the
// predefined communicators hold known values (WORLD's and SELF's context
// ids, ranks, sizes and names), and the library's own PMPI_Comm_rank,
// PMPI_Comm_size and PMPI_Comm_get_name read the fields. A field both
// agree on is used; one found by one method only is used and said so; a
// layout whose identity fields (context id, rank, size, and MPICH's
// object tables) are not all found is an error naming them.
func InferCommLayout(f *elf.File, fl Flavour, p LiveProcess) (CommLayoutResult, error) {
	start := time.Now()
	ci, err := PrepareCommInference(f, fl)
	if err != nil {
		return CommLayoutResult{Took: time.Since(start)}, err
	}
	res, err := ci.Infer(p)
	res.Took = time.Since(start)
	return res, err
}

// CommInference is what inference reads of a library file once: its
// accessors, decoded, and the symbols and GOT slots of its predefined
// objects. Infer then reads a process; it is cheap enough to retry every
// few milliseconds while a rank is in MPI_Init.
type CommInference struct {
	fl                    Flavour
	rank, size, name, c2f layout.Facts
	classSym              uint64
	// Open MPI: where ompi_mpi_comm_world and _self are, by GOT slot
	// (0: none) or by the library's own definition.
	worldSlot, selfSlot uint64
	worldSym, selfSym   uint64
	// dwarf holds the fields the library's own DWARF places, by field
	// name (Open MPI's libmpi.so describes ompi_communicator_t for its
	// debugger support unless stripped); nil without.
	dwarf map[string]uint64
}

// PrepareCommInference decodes the accessors of an MPI C library file.
func PrepareCommInference(f *elf.File, fl Flavour) (*CommInference, error) {
	if fl != OpenMPI && fl != MPICH {
		return nil, fmt.Errorf("no communicator layout for %s", fl)
	}
	code, err := textCode(f)
	if err != nil {
		return nil, err
	}
	syms, err := elfx.Defined(f)
	if err != nil {
		return nil, err
	}
	analyze := func(name string) layout.Facts {
		s, ok := syms[name]
		if !ok || elf.ST_TYPE(s.Info) != elf.STT_FUNC {
			return layout.Facts{}
		}
		return layout.Analyze(code, s.Value, 0)
	}
	ci := &CommInference{fl: fl, rank: analyze("PMPI_Comm_rank"), size: analyze("PMPI_Comm_size"), name: analyze("PMPI_Comm_get_name")}
	if fl == OpenMPI {
		ci.dwarf = ompiCommDWARF(f)
		ci.c2f = analyze("PMPI_Comm_c2f")
		ci.classSym = syms["ompi_communicator_t_class"].Value
		for _, o := range []struct {
			name      string
			slot, sym *uint64
		}{{"ompi_mpi_comm_world", &ci.worldSlot, &ci.worldSym}, {"ompi_mpi_comm_self", &ci.selfSlot, &ci.selfSym}} {
			slot, _, err := elfx.DataSlot(f, o.name)
			if err != nil {
				return nil, err
			}
			*o.slot, *o.sym = slot, syms[o.name].Value
			if slot == 0 && *o.sym == 0 {
				return nil, fmt.Errorf("the library defines no %s", o.name)
			}
		}
	}
	return ci, nil
}

// Infer reads the predefined communicators of p and combines them with
// the decoded accessors. The error wraps ErrLayoutNotReady when p has not
// set them up yet.
func (ci *CommInference) Infer(p LiveProcess) (CommLayoutResult, error) {
	start := time.Now()
	res, err := ci.infer(p)
	res.Took = time.Since(start)
	return res, err
}

func (ci *CommInference) infer(p LiveProcess) (CommLayoutResult, error) {
	var out CommLayoutResult
	known := layout.Known{WorldRank: p.WorldRank, WorldSize: p.WorldSize}
	var r layout.Result
	var err error
	switch ci.fl {
	case OpenMPI:
		in := layout.OMPI{Rank: ci.rank, Size: ci.size, Name: ci.name, C2F: ci.c2f,
			ClassSym: ci.classSym, Bias: p.Bias, Known: known, Mem: p.Mem}
		for _, o := range []struct {
			name      string
			slot, sym uint64
			dst       *[]byte
		}{{"ompi_mpi_comm_world", ci.worldSlot, ci.worldSym, &in.World}, {"ompi_mpi_comm_self", ci.selfSlot, ci.selfSym, &in.Self}} {
			addr, err := objectAddr(o.slot, o.sym, p)
			if err != nil {
				return out, fmt.Errorf("%s: %w", o.name, err)
			}
			b := make([]byte, layout.OMPIObjectSize)
			if err := p.Mem(addr, b); err != nil {
				return out, fmt.Errorf("read %s at %#x: %w", o.name, addr, err)
			}
			*o.dst = b
		}
		r, err = layout.InferOMPI(in)
	case MPICH:
		r, err = layout.InferMPICH(layout.MPICH{Rank: ci.rank, Size: ci.size, Name: ci.name, Bias: p.Bias, Mem: p.Mem, Known: known})
	}
	if layout.ErrNotReady(err) {
		return out, ErrLayoutNotReady
	}
	if err != nil {
		return out, fmt.Errorf("infer the communicator layout: %w", err)
	}
	if ci.dwarf != nil {
		r.Confirm(ci.dwarf)
	}
	out.Fields = r.Fields
	l, err := toCommLayout(ci.fl, r)
	if err != nil {
		return out, err
	}
	out.Layout = l
	return out, nil
}

// ompiCIDField is the field of ompi_communicator_t that holds the 32-bit
// context id every member agrees on: c_contextid up to 4.1, c_index from
// 5.0, where c_contextid became an extended id (a 64-bit base, 0 for the
// communicators MPI-3 calls make, and a sub-id).
func ompiCIDField(f *elf.File) string {
	if _, err := elfx.StructFields(f, "ompi_communicator_t", "c_index"); err == nil {
		return "c_index"
	}
	return "c_contextid"
}

// ompiCommDWARF reads the communicator fields Open MPI's libmpi.so places
// in its own DWARF, nil when it has none. c_name is left out: an array in
// 4.x, it is a pointer in 5.0, and the name is read as an array.
func ompiCommDWARF(f *elf.File) map[string]uint64 {
	m, err := ompiIdentityDWARF(f)
	if err != nil {
		return nil
	}
	return m
}

// ompiIdentityDWARF reads the fields that identify a communicator (context
// id, rank, local group, the group's size) from Open MPI's DWARF, by field
// name.
func ompiIdentityDWARF(f *elf.File) (map[string]uint64, error) {
	c, err := elfx.StructFields(f, "ompi_communicator_t", ompiCIDField(f), "c_my_rank", "c_local_group")
	if err != nil {
		return nil, err
	}
	g, err := elfx.StructFields(f, "ompi_group_t", "grp_proc_count")
	if err != nil {
		return nil, err
	}
	return map[string]uint64{layout.FieldCID: uint64(c[0]), layout.FieldRank: uint64(c[1]), layout.FieldGroup: uint64(c[2]),
		layout.FieldSize: uint64(g[0])}, nil
}

// objectAddr returns the runtime address of a data symbol of the library
// as the process uses it: through the library's GOT slot (which points
// into the executable when it copy-relocated the object), else the
// library's own definition.
func objectAddr(slot, sym uint64, p LiveProcess) (uint64, error) {
	if slot != 0 {
		var b [8]byte
		if err := p.Mem(p.Bias+slot, b[:]); err != nil {
			return 0, fmt.Errorf("read its GOT slot: %w", err)
		}
		if a := binary.LittleEndian.Uint64(b[:]); a != 0 {
			return a, nil
		}
	}
	if sym == 0 {
		return 0, ErrLayoutNotReady // the slot is not filled in yet
	}
	return p.Bias + sym, nil
}

// toCommLayout turns inferred fields into a layout, or says which identity
// fields are missing.
func toCommLayout(fl Flavour, r layout.Result) (CommLayout, error) {
	u32 := func(name string) uint32 { return uint32(r.Get(name).Value) }
	var l CommLayout
	var need []string
	switch fl {
	case OpenMPI:
		need = []string{layout.FieldCID, layout.FieldRank, layout.FieldGroup, layout.FieldSize}
		l = CommLayout{Kind: LayoutOMPI, CIDOff: u32(layout.FieldCID), CIDMask: 0xffffffff, RankOff: u32(layout.FieldRank),
			GroupOff: u32(layout.FieldGroup), SizeOff: u32(layout.FieldSize), ClassAddr: r.Get(layout.FieldClass).Value,
			ClassOff: u32(layout.FieldClassOff)}
	case MPICH:
		need = []string{layout.FieldCID, layout.FieldRank, layout.FieldSize, layout.FieldBuiltin, layout.FieldDirect, layout.FieldObjSize}
		l = CommLayout{Kind: LayoutMPICH, CIDOff: u32(layout.FieldCID), CIDMask: 0xffff, RankOff: u32(layout.FieldRank),
			SizeOff: u32(layout.FieldSize), Builtin: r.Get(layout.FieldBuiltin).Value, Direct: r.Get(layout.FieldDirect).Value,
			ObjSize: u32(layout.FieldObjSize), DirectCount: u32(layout.FieldDirectCount)}
		if r.Get(layout.FieldIndexMask).Found() && r.Get(layout.FieldMem).Found() {
			l.Mem, l.IndBlocksOff = r.Get(layout.FieldMem).Value, u32(layout.FieldIndBlocks)
			l.IndShift, l.IndBlockMask, l.IndIndexMask = u32(layout.FieldIndShift), u32(layout.FieldBlockMask), u32(layout.FieldIndexMask)
		}
	}
	if miss := r.Missing(need...); len(miss) > 0 {
		return CommLayout{}, fmt.Errorf("communicator layout not inferred: %s", strings.Join(miss, "; "))
	}
	if n := r.Get(layout.FieldName); n.Found() {
		l.NameOff, l.NameLen = uint32(n.Value), u32(layout.FieldNameLen)
		l.NamePtr = r.Get(layout.FieldNamePtr).Found()
	}
	if m := r.Get(layout.FieldRankMap); fl == MPICH && m.Found() {
		l.MapOff = uint32(m.Value)
	}
	if v := r.Get(layout.FieldVCRT); fl == MPICH && v.Found() && r.Get(layout.FieldVCRank).Found() {
		l.VCRTOff, l.VCRTSizeOff = uint32(v.Value), u32(layout.FieldVCRTSize)
		l.VCRTEntriesOff, l.VCRankOff = u32(layout.FieldVCRTEntries), u32(layout.FieldVCRank)
	}
	return l, nil
}

// OMPICommLayoutFromDWARF reads the communicator layout of an Open MPI
// libmpi.so from its own DWARF, which every unstripped build carries for
// its debugger support (ompi/debuggers is compiled with -g whatever the
// configure line says): ompi_communicator_t's context id, rank and local
// group, the group's size, and where an object keeps its class
// (opal_object_t.obj_class: 0, or 8 in a debug build), with the class
// symbol ompi_communicator_t_class. It needs no process, so the layout is
// known before any rank starts. The name is left out (an array in 4.x, a
// pointer in 5.0). The context id is c_contextid up to 4.1 and c_index
// from 5.0 (ompiCIDField).
func OMPICommLayoutFromDWARF(f *elf.File) (CommLayoutResult, error) {
	id, err := ompiIdentityDWARF(f)
	if err != nil {
		return CommLayoutResult{}, err
	}
	o, err := elfx.StructFields(f, "opal_object_t", "obj_class")
	if err != nil {
		return CommLayoutResult{}, err
	}
	syms, err := elfx.Defined(f)
	if err != nil {
		return CommLayoutResult{}, err
	}
	class := syms["ompi_communicator_t_class"].Value
	if class == 0 {
		return CommLayoutResult{}, errors.New("the library defines no ompi_communicator_t_class")
	}
	l := CommLayout{Kind: LayoutOMPI, CIDOff: uint32(id[layout.FieldCID]), CIDMask: 0xffffffff, RankOff: uint32(id[layout.FieldRank]),
		GroupOff: uint32(id[layout.FieldGroup]), SizeOff: uint32(id[layout.FieldSize]), ClassAddr: class, ClassOff: uint32(o[0])}
	var fields []LayoutField
	for _, fv := range []namedValue{{layout.FieldClass, class}, {layout.FieldClassOff, uint64(o[0])}, {layout.FieldCID, id[layout.FieldCID]},
		{layout.FieldRank, id[layout.FieldRank]}, {layout.FieldGroup, id[layout.FieldGroup]}, {layout.FieldSize, id[layout.FieldSize]}} {
		fields = append(fields, LayoutField{Name: fv.name, Value: fv.v, How: layout.DebugInfo, Note: "the library's own DWARF"})
	}
	return CommLayoutResult{Layout: l, Fields: fields}, nil
}

// StaticCommLayout returns the communicator layout of the library file f
// that is known without a process: the table of verified builds, else
// (Open MPI) the library's own DWARF. ok is false when only a live
// process can tell (ResolveCommLayout).
func StaticCommLayout(f *elf.File, fl Flavour, buildID string) (CommLayoutResult, bool) {
	if l, ok := CommLayoutOf(buildID); ok {
		return CommLayoutResult{Layout: l, Fields: verifiedFields(l)}, true
	}
	if fl == OpenMPI {
		if r, err := OMPICommLayoutFromDWARF(f); err == nil {
			return r, true
		}
	}
	return CommLayoutResult{}, false
}
