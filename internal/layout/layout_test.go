package layout

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The functions of testdata/accessors.S, assembled at textBase.
const (
	textBase   = 0x1000
	ompiRank   = 0x1000
	ompiSize   = 0x1034
	ompiName   = 0x1043
	ompiC2F    = 0x1060
	mpichRank  = 0x1067
	mpichName  = 0x10f1
	loopFunc   = 0x112c
	mpichLea   = 0x112e
	ompiRankO0 = 0x115d
	mpichJoin  = 0x119a
	slotBuilt  = 0x5000
	slotDirect = 0x5008
	objMem     = 0x5010
)

func testCode(t testing.TB) Code { return codeAt(textBase, hexBytes(t, "testdata/accessors.hex")) }

// hexBytes reads the code a testdata .hex file holds (xxd -p).
func hexBytes(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.Join(strings.Fields(string(raw)), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func codeAt(base uint64, b []byte) Code {
	return func(addr uint64, n int) []byte {
		if addr < base || addr-base >= uint64(len(b)) {
			return nil
		}
		off := addr - base
		return b[off:min(off+uint64(n), uint64(len(b)))]
	}
}

func TestAnalyze(t *testing.T) {
	code := testCode(t)
	tests := []struct {
		name string
		addr uint64
		want Facts
	}{
		{"ompi rank", ompiRank, Facts{Stores: []Access{{Arg: 1, Chain: []int64{0xe4}}}}},
		{"ompi size through the group", ompiSize, Facts{Stores: []Access{{Arg: 1, Chain: []int64{0xf8, 0x10}}}}},
		{"ompi name copied to the buffer", ompiName, Facts{Copies: []Copy{{Arg: 1, Chain: []int64{0xa0}, Len: 0x40}}}},
		{"ompi c2f returns a field", ompiC2F, Facts{Returns: []Access{{Arg: -1, Chain: []int64{0x128}}}}},
		{"unoptimized: the stack and a callee's return", ompiRankO0, Facts{Stores: []Access{{Arg: 1, Chain: []int64{0x13c}}}}},
		{"a loop ends", loopFunc, Facts{}},
		{"outside the code", 0x9999, Facts{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Analyze(code, tt.addr, 0)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Analyze = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestAnalyzeMPICHHandles(t *testing.T) {
	code := testCode(t)
	f := Analyze(code, mpichRank, 0)
	if want := []Access{{Arg: 1, Chain: []int64{0x48}}}; !reflect.DeepEqual(f.Stores, want) {
		t.Errorf("Stores = %+v, want %+v", f.Stores, want)
	}
	var slots []uint64
	var block *Op
	for _, p := range f.Paths {
		for _, op := range p {
			switch op.Kind {
			case OpAddSlot:
				slots = append(slots, op.Addr)
			case OpAddBlock:
				o := op
				block = &o
			}
		}
	}
	if !reflect.DeepEqual(slots, []uint64{slotBuilt, slotDirect}) && !reflect.DeepEqual(slots, []uint64{slotDirect, slotBuilt}) {
		t.Errorf("table slots %#x, want %#x and %#x", slots, slotBuilt, slotDirect)
	}
	if block == nil {
		t.Fatal("no indirect block decoding found")
	}
	if block.Addr != objMem || block.Off != 0x10 {
		t.Errorf("block array at %#x+%#x, want %#x+0x10", block.Addr, block.Off, objMem)
	}
	if want := []Op{{Kind: OpShr, Imm: 0xc}, {Kind: OpAnd, Imm: 0x3fff}}; !reflect.DeepEqual(block.Index, want) {
		t.Errorf("block index %+v, want %+v", block.Index, want)
	}
	// MPI_Comm_get_name: the copy is made in a function it calls.
	n := Analyze(code, mpichName, 0)
	if want := []Copy{{Arg: 1, Chain: []int64{0x74}, Len: 0x80}}; !reflect.DeepEqual(n.Copies, want) {
		t.Errorf("Copies = %+v, want %+v", n.Copies, want)
	}
}

// TestAnalyzeJoinedDecodings: four handle decodings (MPICH 4.2.3's
// PMPI_Comm_rank: builtin and direct, with and without error checks) that
// join at one load must all be seen, the direct table among them.
func TestAnalyzeJoinedDecodings(t *testing.T) {
	f := Analyze(testCode(t), mpichJoin, 0)
	seen := map[uint64]int{}
	for _, p := range f.Paths {
		for _, op := range p {
			if op.Kind == OpAddSlot {
				seen[op.Addr]++
			}
		}
	}
	if seen[slotBuilt] == 0 || seen[slotDirect] == 0 {
		t.Errorf("tables seen %v, want both %#x and %#x", seen, slotBuilt, slotDirect)
	}
}

// TestAnalyzeScaledIndex checks an object size the compiler multiplies by
// with lea and shl (13 * 64 = 0x340), as in MPICH built for ch3:sock.
func TestAnalyzeScaledIndex(t *testing.T) {
	f := Analyze(testCode(t), mpichLea, 0)
	want := [][]Op{{{Kind: OpAnd, Imm: 0x3ffffff}, {Kind: OpMul, Imm: 0x340}, {Kind: OpAddSlot, Addr: slotBuilt}}}
	if !reflect.DeepEqual(f.Paths, want) {
		t.Errorf("Paths = %+v, want %+v", f.Paths, want)
	}
	if want := []Access{{Arg: 1, Chain: []int64{0x48}}}; !reflect.DeepEqual(f.Stores, want) {
		t.Errorf("Stores = %+v, want %+v", f.Stores, want)
	}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name            string
		objects, access []int64
		want            How
		value           uint64
		noteHas         string
	}{
		{"both agree", []int64{4, 8}, []int64{8}, ObjectsAccessor, 8, ""},
		{"objects alone, one", []int64{8}, nil, ObjectsOnly, 8, "no accessor"},
		{"objects alone, several", []int64{4, 8}, nil, Unknown, 0, "+0x4, +0x8"},
		{"accessor alone", nil, []int64{12}, AccessorOnly, 12, "do not hold"},
		{"disagree", []int64{4}, []int64{12}, Unknown, 0, "the accessor reads +0xc"},
		{"nothing", nil, nil, Unknown, 0, "do not hold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := decide("x", tt.objects, tt.access)
			if f.How != tt.want || f.Value != tt.value || !strings.Contains(f.Note, tt.noteHas) {
				t.Errorf("decide = %+v, want %s %#x with note containing %q", f, tt.want, tt.value, tt.noteHas)
			}
		})
	}
}

// fakeMem is a process memory of a few regions.
type fakeMem map[uint64][]byte

func (m fakeMem) read(addr uint64, p []byte) error {
	for base, b := range m {
		if addr >= base && addr-base+uint64(len(p)) <= uint64(len(b)) {
			copy(p, b[addr-base:])
			return nil
		}
	}
	return errors.New("unmapped")
}

func put32(b []byte, off int, v uint32) { binary.LittleEndian.PutUint32(b[off:], v) }
func put64(b []byte, off int, v uint64) { binary.LittleEndian.PutUint64(b[off:], v) }

// ompiObjects builds WORLD and SELF in the shape of Open MPI 4.1: class at
// 0, name at 0xa0, cid at 0xe0, rank at 0xe4, local and remote group at
// 0xf8 and 0x100 (size at +0x10 in the group), Fortran index at 0x128.
func ompiObjects(rank, size int, bias uint64) ([]byte, []byte, fakeMem) {
	w, s := make([]byte, OMPIObjectSize), make([]byte, OMPIObjectSize)
	const gw, gs = 0x700000, 0x700100
	for i, b := range [][]byte{w, s} {
		put64(b, 0, bias+0x11d220)
		put32(b, 8, 1)
		copy(b[0xa0:], []string{worldName, selfName}[i])
		put32(b, 0xe0, uint32(i))
		put32(b, 0xe8, 0x1006)
		put32(b, 0x128, uint32(i))
		g := []uint64{gw, gs}[i]
		put64(b, 0xf8, g)
		put64(b, 0x100, g)
	}
	put32(w, 0xe4, uint32(rank))
	mem := fakeMem{gw: make([]byte, 256), gs: make([]byte, 256)}
	put32(mem[gw], 0x10, uint32(size))
	put32(mem[gs], 0x10, 1)
	put32(mem[gw], 8, 1)
	put32(mem[gs], 8, 1)
	return w, s, mem
}

func ompiInput(t testing.TB, rank, size int) OMPI {
	code := testCode(t)
	const bias = 0x7f0000000000
	w, s, mem := ompiObjects(rank, size, bias)
	return OMPI{
		World: w, Self: s, ClassSym: 0x11d220, Bias: bias,
		Rank: Analyze(code, ompiRank, 0), Size: Analyze(code, ompiSize, 0),
		Name: Analyze(code, ompiName, 0), C2F: Analyze(code, ompiC2F, 0),
		Known: Known{WorldRank: rank, WorldSize: size}, Mem: mem.read,
	}
}

func TestInferOMPI(t *testing.T) {
	want := map[string]uint64{FieldClass: 0x11d220, FieldCID: 0xe0, FieldRank: 0xe4, FieldGroup: 0xf8,
		FieldSize: 0x10, FieldName: 0xa0, FieldNameLen: 0x40}
	for _, tc := range []struct {
		name       string
		rank, size int
	}{{"rank 1 of 4", 1, 4}, {"rank 0 of 2", 0, 2}, {"singleton", 0, 1}, {"unknown rank and size", -1, -1}} {
		t.Run(tc.name, func(t *testing.T) {
			in := ompiInput(t, max(tc.rank, 0), max(tc.size, 1))
			in.Known = Known{WorldRank: tc.rank, WorldSize: tc.size}
			r, err := InferOMPI(in)
			if err != nil {
				t.Fatal(err)
			}
			for name, v := range want {
				if f := r.Get(name); !f.Found() || f.Value != v {
					t.Errorf("%s = %+v, want %#x", name, f, v)
				}
			}
			if f := r.Get(FieldRank); f.How != ObjectsAccessor {
				t.Errorf("rank found %s, want both ways", f.How)
			}
		})
	}
}

func TestInferOMPIFailures(t *testing.T) {
	t.Run("before MPI_Init", func(t *testing.T) {
		in := ompiInput(t, 1, 2)
		in.World, in.Self = make([]byte, OMPIObjectSize), make([]byte, OMPIObjectSize)
		if _, err := InferOMPI(in); !ErrNotReady(err) {
			t.Errorf("err = %v, want not ready", err)
		}
	})
	t.Run("names kept elsewhere", func(t *testing.T) {
		in := ompiInput(t, 1, 2)
		for _, b := range [][]byte{in.World, in.Self} {
			clear(b[0xa0 : 0xa0+16])
		}
		r, err := InferOMPI(in)
		if err != nil {
			t.Fatal(err)
		}
		if f := r.Get(FieldName); f.How != AccessorOnly {
			t.Errorf("name = %+v, want the accessor's only", f)
		}
		if f := r.Get(FieldCID); f.Value != 0xe0 {
			t.Errorf("context id = %+v, want 0xe0", f)
		}
	})
	t.Run("set up half way", func(t *testing.T) {
		in := ompiInput(t, 1, 2)
		for _, b := range [][]byte{in.World, in.Self} {
			clear(b[0xa0 : 0xa0+16])
		}
		put32(in.World, 0xe4, 0) // rank not written yet
		if _, err := InferOMPI(in); !ErrNotReady(err) {
			t.Errorf("err = %v, want not ready", err)
		}
	})
	t.Run("short objects", func(t *testing.T) {
		in := ompiInput(t, 1, 2)
		in.World = in.World[:8]
		if _, err := InferOMPI(in); err == nil {
			t.Error("no error")
		}
	})
	t.Run("accessor disagrees", func(t *testing.T) {
		in := ompiInput(t, 1, 2)
		in.Rank = Facts{Stores: []Access{{Arg: 1, Chain: []int64{0x40}}}}
		r, err := InferOMPI(in)
		if err != nil {
			t.Fatal(err)
		}
		if f := r.Get(FieldRank); f.Found() {
			t.Errorf("rank = %+v, want unknown", f)
		}
	})
	t.Run("no accessors", func(t *testing.T) {
		in := ompiInput(t, 1, 2)
		in.Rank, in.Size, in.Name, in.C2F = Facts{}, Facts{}, Facts{}, Facts{}
		r, err := InferOMPI(in)
		if err != nil {
			t.Fatal(err)
		}
		// The groups are two pointers to the same group: ambiguous.
		if f := r.Get(FieldGroup); f.Found() {
			t.Errorf("group = %+v, want unknown (two candidates)", f)
		}
		if f := r.Get(FieldRank); f.How != ObjectsOnly || f.Value != 0xe4 {
			t.Errorf("rank = %+v, want objects only at 0xe4", f)
		}
	})
	t.Run("class elsewhere than the symbol", func(t *testing.T) {
		in := ompiInput(t, 1, 2)
		in.ClassSym = 0x1234
		if _, err := InferOMPI(in); !ErrNotReady(err) {
			t.Errorf("err = %v, want not ready (no class)", err)
		}
	})
	t.Run("debug build: a magic number before the class", func(t *testing.T) {
		in := ompiInput(t, 1, 2)
		for _, b := range [][]byte{in.World, in.Self} {
			put64(b, 8, binary.LittleEndian.Uint64(b))
			put64(b, 0, 0xdeafbeeddeafbeed)
		}
		r, err := InferOMPI(in)
		if err != nil {
			t.Fatal(err)
		}
		if f := r.Get(FieldClassOff); f.Value != 8 || f.How != ObjectsSymbol {
			t.Errorf("class offset = %+v, want 8 from the objects and the symbol", f)
		}
	})
}

// mpichMem builds a process in the shape of MPICH 4.0: the GOT slots of
// the builtin and direct arrays, the allocator object, and the builtin
// WORLD and SELF (handle at 0, context ids at 0x40 and 0x42, rank 0x48,
// local size 0x58, name 0x74, the ch4 rank map at 0x310 and the local one,
// mode NONE, after it).
func mpichMem(rank, size int, bias uint64) fakeMem {
	const objSize = 0x368
	builtin, direct := uint64(0x600000), uint64(0x610000)
	mem := fakeMem{bias + 0x5000: make([]byte, 0x100), builtin: make([]byte, 3*objSize), direct: make([]byte, 8*objSize)}
	slots := mem[bias+0x5000]
	put64(slots, 0, builtin)
	put64(slots, 8, direct)
	// objmem at 0x5010: the allocator; direct array at +0x30 after the
	// object size, its length after it.
	put32(slots, 0x10+0x28, objSize)
	put64(slots, 0x10+0x30, direct)
	put32(slots, 0x10+0x38, 8)
	b := mem[builtin]
	for i, h := range []uint32{mpichWorld, mpichSelf} {
		o := b[i*objSize:]
		put32(o, 0, h)
		put32(o, 4, 1)
		cid := uint32([]uint32{mpichWorldCID, mpichSelfCID}[i])
		put32(o, 0x40, cid|cid<<16)
		put32(o, 0x44, uint32([]int{size, 1}[i]))
		put32(o, 0x48, uint32([]int{rank, 0}[i]))
		put32(o, 0x58, uint32([]int{size, 1}[i]))
		copy(o[0x74:], []string{worldName, selfName}[i])
		put32(o, 0x310, uint32([]int{rankMapDirectIntra, rankMapOffsetIntra}[i]))
		put32(o, 0x318, uint32([]int{size, 1}[i]))
		put32(o, 0x31c, uint32([]int{0, rank}[i]))
		put32(o, 0x338, 11)
	}
	for i := 0; i < 8; i++ {
		put32(mem[direct], i*objSize, 0x84000000+uint32(i))
	}
	return mem
}

func TestInferMPICH(t *testing.T) {
	code := testCode(t)
	const bias = 0
	mem := mpichMem(1, 4, bias)
	in := MPICH{Rank: Analyze(code, mpichRank, 0), Name: Analyze(code, mpichName, 0), Bias: bias, Mem: mem.read,
		Known: Known{WorldRank: 1, WorldSize: 4}}
	// The test code has no size accessor: the objects decide alone, and
	// remote_size at 0x44 holds the same values as local_size.
	r, err := InferMPICH(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{FieldBuiltin: 0x600000, FieldDirect: 0x610000, FieldObjSize: 0x368, FieldDirectCount: 8,
		FieldMem: objMem, FieldIndBlocks: 0x10, FieldIndShift: 12, FieldBlockMask: 0x3fff, FieldIndexMask: 0xfff,
		FieldCID: 0x40, FieldRank: 0x48, FieldName: 0x74, FieldNameLen: 0x80, FieldRankMap: 0x310}
	for name, v := range want {
		if f := r.Get(name); !f.Found() || f.Value != v {
			t.Errorf("%s = %+v, want %#x", name, f, v)
		}
	}
	if f := r.Get(FieldSize); f.Found() {
		t.Errorf("size = %+v, want unknown: +0x44 and +0x58 both fit", f)
	}
	in.Size = Facts{Stores: []Access{{Arg: 1, Chain: []int64{0x58}}}}
	r, _ = InferMPICH(in)
	if f := r.Get(FieldSize); f.How != ObjectsAccessor || f.Value != 0x58 {
		t.Errorf("size with the accessor = %+v, want 0x58 both ways", f)
	}

	// SELF's map must point at the process itself.
	other := mpichMem(1, 4, bias)
	put32(other[0x600000], 0x368+0x31c, 2)
	in.Mem = other.read
	r, _ = InferMPICH(in)
	if f := r.Get(FieldRankMap); f.Found() {
		t.Errorf("rank map with SELF's offset 2 in rank 1 = %+v, want unknown", f)
	}

	// Before MPI_Init the builtin objects are empty.
	empty := fakeMem{0x5000: mem[0x5000], 0x600000: make([]byte, 3*0x368)}
	in.Mem = empty.read
	if _, err := InferMPICH(in); !ErrNotReady(err) {
		t.Errorf("empty objects: err = %v, want not ready", err)
	}
	in.Rank, in.Name = Facts{}, Facts{}
	if _, err := InferMPICH(in); err == nil || ErrNotReady(err) {
		t.Errorf("no accessor: err = %v, want no table", err)
	}
}

// FuzzAnalyze runs the accessor analysis on arbitrary code: it must end,
// within its budget, without panicking.
func FuzzAnalyze(f *testing.F) {
	b := hexBytes(f, "testdata/accessors.hex")
	f.Add(b, uint16(0))
	f.Add(b[mpichRank-textBase:], uint16(0))
	f.Add([]byte{0xeb, 0xfe}, uint16(0))
	f.Fuzz(func(t *testing.T, code []byte, start uint16) {
		a := Analyze(codeAt(textBase, code), textBase+uint64(start)%uint64(len(code)+1), 0)
		if len(a.Stores) > maxFacts || len(a.Copies) > maxFacts || len(a.Paths) > maxFacts {
			t.Fatalf("facts beyond the bound: %+v", a)
		}
	})
}

// FuzzInferOMPI infers from arbitrary objects and group memory.
func FuzzInferOMPI(f *testing.F) {
	w, s, mem := ompiObjects(1, 2, 0x7f0000000000)
	f.Add(w, s, mem[0x700000], int8(1), int8(2))
	code := testCode(f)
	rank, size, name, c2f := Analyze(code, ompiRank, 0), Analyze(code, ompiSize, 0), Analyze(code, ompiName, 0), Analyze(code, ompiC2F, 0)
	f.Fuzz(func(t *testing.T, world, self, group []byte, r, n int8) {
		m := func(addr uint64, p []byte) error {
			if uint64(len(p)) > uint64(len(group)) {
				return errors.New("short")
			}
			copy(p, group)
			return nil
		}
		res, err := InferOMPI(OMPI{World: world, Self: self, Bias: 0x7f0000000000, ClassSym: 0x11d220,
			Rank: rank, Size: size, Name: name, C2F: c2f, Known: Known{int(r), int(n)}, Mem: m})
		if err == nil && len(res.Fields) == 0 {
			t.Fatal("no fields and no error")
		}
	})
}

// FuzzInferMPICH infers from an arbitrary process memory.
func FuzzInferMPICH(f *testing.F) {
	mem := mpichMem(1, 2, 0)
	f.Add(mem[0x5000], mem[0x600000], int8(1), int8(2))
	code := testCode(f)
	rank, name := Analyze(code, mpichRank, 0), Analyze(code, mpichName, 0)
	f.Fuzz(func(t *testing.T, slots, objects []byte, r, n int8) {
		m := fakeMem{0x5000: slots, 0x600000: objects, 0x610000: objects}
		_, _ = InferMPICH(MPICH{Rank: rank, Name: name, Mem: m.read, Known: Known{int(r), int(n)}})
	})
}

// TestConfirm checks each way a DWARF offset meets an inferred field.
func TestConfirm(t *testing.T) {
	r := Result{Fields: []Field{
		{Name: FieldCID, Value: 0xe0, How: ObjectsOnly, Note: "PMPI_Comm_c2f's +0x128 excluded"},
		{Name: FieldRank, Value: 0xe4, How: ObjectsAccessor},
		{Name: FieldGroup, Value: 0x100, How: ObjectsAccessor},
		{Name: FieldSize, How: Unknown, Note: "no object holds it"},
		{Name: FieldClass, Value: 0xed1c0, How: ObjectsSymbol},
	}}
	r.Confirm(map[string]uint64{FieldCID: 0xe0, FieldRank: 0xe4, FieldGroup: 0xf8, FieldSize: 0x10})
	want := []Field{
		{Name: FieldCID, Value: 0xe0, How: ObjectsDebugInfo, Note: "PMPI_Comm_c2f's +0x128 excluded"},
		{Name: FieldRank, Value: 0xe4, How: ObjectsAccessor, Note: "debug info agrees"},
		{Name: FieldGroup, Value: 0xf8, How: DebugInfo, Note: "inferred: objects+accessor said 0x100"},
		{Name: FieldSize, Value: 0x10, How: DebugInfo, Note: "not inferred (no object holds it)"},
		{Name: FieldClass, Value: 0xed1c0, How: ObjectsSymbol},
	}
	if !slices.Equal(r.Fields, want) {
		t.Errorf("Confirm:\n got %+v\nwant %+v", r.Fields, want)
	}
}
