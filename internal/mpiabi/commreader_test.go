package mpiabi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// The builds of Debian 12's libraries, whose layouts probes knows.
const (
	ompiBuild  = "2a2f4d8c4f8dc5dcc63f6789a50f3ab49f61e168"
	mpichBuild = "15ff29242f0f6336eb8096d953e03de259b65bb4"
)

// image is a sparse fake process memory: bytes not written are unreadable.
type image map[uint64]byte

func (m image) put(addr uint64, b []byte) {
	for i, c := range b {
		m[addr+uint64(i)] = c
	}
}

func (m image) put32(addr uint64, v uint32) { m.put(addr, binary.LittleEndian.AppendUint32(nil, v)) }
func (m image) put64(addr uint64, v uint64) { m.put(addr, binary.LittleEndian.AppendUint64(nil, v)) }

// read is a memory over the image.
func (m image) read(addr uint64, p []byte) error {
	for i := range p {
		c, ok := m[addr+uint64(i)]
		if !ok {
			return fmt.Errorf("%#x unmapped", addr+uint64(i))
		}
		p[i] = c
	}
	return nil
}

func layoutOf(t *testing.T, build string) CommLayout {
	t.Helper()
	l, ok := CommLayoutOf(build)
	if !ok {
		t.Fatalf("CommLayoutOf(%s): unknown build", build)
	}
	return l
}

func TestCommReaderOMPI(t *testing.T) {
	l := layoutOf(t, ompiBuild)
	const bias = 0x7f1234500000
	cls := bias + l.ClassAddr
	m := image{}
	// comm writes an ompi_communicator_t at addr with its group at grp.
	comm := func(addr uint64, cid, rank uint32, grp uint64, size uint32) {
		m.put64(addr, cls)
		m.put32(addr+uint64(l.CIDOff), cid)
		m.put32(addr+uint64(l.RankOff), rank)
		m.put64(addr+uint64(l.GroupOff), grp)
		if grp != 0 {
			m.put32(grp+uint64(l.SizeOff), size)
		}
	}
	const world, self, split, nogroup, badgroup, norank = 0x55550000, 0x55551000, 0x55552000, 0x55553000, 0x55554000, 0x55555000
	comm(world, 0, 2, 0x55560000, 4)
	comm(self, 1, 0, 0x55561000, 1)
	comm(split, 5, 1, 0x55562000, 2)
	comm(nogroup, 7, 3, 0, 0)
	m.put64(badgroup, cls)
	m.put32(badgroup+uint64(l.CIDOff), 9)
	m.put32(badgroup+uint64(l.RankOff), 0)
	m.put64(badgroup+uint64(l.GroupOff), 0x66660000) // group unreadable
	m.put64(norank, cls)
	m.put32(norank+uint64(l.CIDOff), 4) // rank and group unreadable
	const unbiased, other = 0x55556000, 0x55557000
	m.put64(unbiased, l.ClassAddr) // the class's file address, not its runtime one
	m.put64(other, cls+8)
	m.put64(0x55558000+4, cls) // an unaligned copy of the class pointer

	r := CommReader{Layout: l, Bias: bias, Mem: m.read}

	t.Run("isComm", func(t *testing.T) {
		tests := []struct {
			addr uint64
			want bool
		}{
			{world, true},
			{self, true},
			{split, true},
			{norank, true},
			{unbiased, false},
			{other, false},
			{0x55558000 + 4, false},
			{world + 4, false},
			{world + 8, false},
			{0x99990000, false}, // unreadable
			{0, false},
		}
		for _, tt := range tests {
			if got := r.IsComm(tt.addr); got != tt.want {
				t.Errorf("isComm(%#x) = %v, want %v", tt.addr, got, tt.want)
			}
		}
		noClass := r
		noClass.Layout.ClassAddr = 0
		m.put64(0x55559000, bias)
		if noClass.IsComm(0x55559000) {
			t.Errorf("isComm with ClassAddr 0 accepted a word equal to the bias")
		}
	})

	t.Run("comm", func(t *testing.T) {
		tests := []struct {
			name     string
			addr     uint64
			want     Comm
			wantRank int
			wantOK   bool
		}{
			{"WORLD", world, Comm{ID: 0, Size: 4, Name: "WORLD"}, 2, true},
			{"SELF", self, Comm{ID: 1, Size: 1, Name: "SELF"}, 0, true},
			{"a split", split, Comm{ID: 5, Size: 2}, 1, true},
			{"no group", nogroup, Comm{ID: 7, Size: -1}, 3, true},
			{"unreadable group", badgroup, Comm{ID: 9, Size: -1}, 0, true},
			{"unreadable rank", norank, Comm{ID: 4, Size: -1}, -1, true},
			{"unreadable object", 0x99990000, Comm{}, -1, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				c, rank, ok := r.Comm(tt.addr)
				if c != tt.want || rank != tt.wantRank || ok != tt.wantOK {
					t.Errorf("comm(%#x) = %+v, %d, %v, want %+v, %d, %v", tt.addr, c, rank, ok, tt.want, tt.wantRank, tt.wantOK)
				}
			})
		}
	})

	t.Run("userName", func(t *testing.T) {
		name := make([]byte, l.NameLen)
		copy(name, "halo_exchange\x00garbage")
		m.put(split+uint64(l.NameOff), name)
		full := make([]byte, l.NameLen)
		for i := range full {
			full[i] = 'x'
		}
		m.put(self+uint64(l.NameOff), full)
		if got := r.UserName(split); got != "halo_exchange" {
			t.Errorf("userName(split) = %q, want %q", got, "halo_exchange")
		}
		if got := r.UserName(self); got != string(full) {
			t.Errorf("userName of a name without NUL = %q, want the %d bytes", got, l.NameLen)
		}
		if got := r.UserName(world); got != "" {
			t.Errorf("userName of an unreadable name = %q, want \"\"", got)
		}
		noName := r
		noName.Layout.NameLen = 0
		if got := noName.UserName(split); got != "" {
			t.Errorf("userName with NameLen 0 = %q, want \"\"", got)
		}
	})
}

// MPICH handle kinds (bits 30-31) and the communicator object type (bits 26-29).
func mpichHandle(kind, index uint32) uint32 { return kind<<30 | 1<<26 | index }

func TestMPICHHandles(t *testing.T) {
	// The handles the tests below use, spelled out.
	for _, tt := range []struct{ got, want uint32 }{
		{mpichHandle(1, 0), 0x44000000},
		{mpichHandle(1, 1), 0x44000001},
		{mpichHandle(2, 2), 0x84000002},
		{mpichHandle(3, 1<<12|3), 0xc4001003},
	} {
		if tt.got != tt.want {
			t.Errorf("handle %#x, want %#x", tt.got, tt.want)
		}
	}
}

func TestCommReaderMPICH(t *testing.T) {
	l := layoutOf(t, mpichBuild)
	const bias = 0x7f5500000000
	obj := uint64(l.ObjSize)
	m := image{}
	// comm writes an MPIR_Comm at addr.
	comm := func(addr uint64, h, cid uint32, rank, size int32) {
		m.put32(addr, h)
		m.put32(addr+uint64(l.CIDOff), cid)
		m.put32(addr+uint64(l.RankOff), uint32(rank))
		m.put32(addr+uint64(l.SizeOff), uint32(size))
	}
	world := bias + l.Builtin
	self := bias + l.Builtin + obj
	direct2 := bias + l.Direct + 2*obj
	direct3 := bias + l.Direct + 3*obj
	direct4 := bias + l.Direct + 4*obj
	direct5 := bias + l.Direct + 5*obj
	direct6 := bias + l.Direct + 6*obj
	// Direct index DirectCount is MPIR_Comm_builtin[0]: go further.
	beyond := bias + l.Direct + uint64(l.DirectCount+4)*obj
	comm(world, 0x44000000, 0, 1, 4)
	comm(self, 0x44000001, 1<<12|0x10, 0, 1) // some context id: SELF by handle
	comm(direct2, 0x84000002, 0x1f0, 3, 8)
	comm(direct3, 0x84000002, 0x1f8, 0, 2) // says it is direct index 2
	comm(direct4, 0x84000004, 0x1f2, 0, 2) // node_comm of 0x1f0
	comm(direct5, 0x84000005, 0x1f4, 0, 2) // node_roots_comm of 0x1f0
	comm(direct6, 0x84000006, 0x30000, 0, 2)
	comm(beyond, mpichHandle(2, l.DirectCount+4), 0x200, 0, 2)
	wrongType := bias + l.Builtin + 2*obj
	comm(wrongType, 0x4c000002, 0x100, 0, 2) // an MPIR_Group handle's bits
	// Indirect handles: MPIR_Comm_mem's block array, block 1, index 3.
	const blocks, block1 = 0x5000000000, 0x5100000000
	m.put64(bias+l.Mem+uint64(l.IndBlocksOff), blocks)
	m.put64(blocks, 0)        // block 0 not allocated
	m.put64(blocks+8, block1) // block 1
	indirect := block1 + 3*obj
	comm(indirect, 0xc4001003, 0x2a0, 5, 6)
	unallocated := uint64(0x5200000000)
	comm(unallocated, 0xc4000003, 0x2a0, 5, 6) // block 0: not allocated

	r := CommReader{Layout: l, Bias: bias, Mem: m.read}

	t.Run("isComm", func(t *testing.T) {
		tests := []struct {
			name string
			addr uint64
			want bool
		}{
			{"builtin WORLD", world, true},
			{"builtin SELF", self, true},
			{"direct", direct2, true},
			{"indirect", indirect, true},
			{"handle decoding to another object", direct3, false},
			{"direct index beyond DirectCount", beyond, false},
			{"wrong object type", wrongType, false},
			{"hidden node_comm (context id bit 1)", direct4, false},
			{"hidden node_roots_comm (context id bit 2)", direct5, false},
			{"context id bits above the mask are ignored", direct6, true},
			{"indirect handle into an unallocated block", unallocated, false},
			{"unaligned", direct2 + 4, false},
			{"unreadable", 0x99990000, false},
			{"zero", 0, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if got := r.IsComm(tt.addr); got != tt.want {
					t.Errorf("isComm(%#x) = %v, want %v", tt.addr, got, tt.want)
				}
			})
		}
	})

	t.Run("mpichObject", func(t *testing.T) {
		tests := []struct {
			name   string
			h      uint32
			want   uint64
			wantOK bool
		}{
			{"WORLD", 0x44000000, world, true},
			{"SELF", 0x44000001, self, true},
			{"direct 2", 0x84000002, direct2, true},
			{"last direct", mpichHandle(2, l.DirectCount-1), bias + l.Direct + uint64(l.DirectCount-1)*obj, true},
			{"direct beyond the table", mpichHandle(2, l.DirectCount), 0, false},
			{"indirect block 1 index 3", 0xc4001003, indirect, true},
			{"indirect into an unallocated block", 0xc4000003, 0, false},
			{"indirect into an unreadable block slot", 0xc4002003, 0, false},
			{"invalid kind 0", 0x04000001, 0, false},
			{"group type", 0x4c000000, 0, false},
			{"MPI_COMM_NULL", 0x04000000, 0, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, ok := r.MPICHObject(tt.h)
				if got != tt.want || ok != tt.wantOK {
					t.Errorf("mpichObject(%#x) = %#x, %v, want %#x, %v", tt.h, got, ok, tt.want, tt.wantOK)
				}
			})
		}
		noBlocks := CommReader{Layout: l, Bias: bias + 0x1000000, Mem: m.read}
		if got, ok := noBlocks.MPICHObject(0xc4001003); ok {
			t.Errorf("mpichObject with the block array unreadable = %#x, true", got)
		}
		noIndirect := r
		noIndirect.Layout.IndIndexMask = 0
		if got, ok := noIndirect.MPICHObject(0xc4001003); ok {
			t.Errorf("mpichObject with IndIndexMask 0 = %#x, true", got)
		}
		noSize := r
		noSize.Layout.ObjSize = 0
		if got, ok := noSize.MPICHObject(0x44000000); ok {
			t.Errorf("mpichObject with ObjSize 0 = %#x, true", got)
		}
	})

	t.Run("comm", func(t *testing.T) {
		tests := []struct {
			name     string
			addr     uint64
			want     Comm
			wantRank int
			wantOK   bool
		}{
			{"WORLD", world, Comm{ID: 0, Size: 4, Name: "WORLD"}, 1, true},
			{"SELF", self, Comm{ID: 1<<12 | 0x10, Size: 1, Name: "SELF"}, 0, true},
			{"direct", direct2, Comm{ID: 0x1f0, Size: 8}, 3, true},
			{"indirect", indirect, Comm{ID: 0x2a0, Size: 6}, 5, true},
			{"context id masked to 16 bits", direct6, Comm{ID: 0, Size: 2}, 0, true},
			{"unreadable", 0x99990000, Comm{}, -1, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				c, rank, ok := r.Comm(tt.addr)
				if c != tt.want || rank != tt.wantRank || ok != tt.wantOK {
					t.Errorf("comm(%#x) = %+v, %d, %v, want %+v, %d, %v", tt.addr, c, rank, ok, tt.want, tt.wantRank, tt.wantOK)
				}
			})
		}
	})
}

// TestCommReaderUnreadable reads through a memory that fails every read:
// every answer is "no", none panics.
func TestCommReaderUnreadable(t *testing.T) {
	fail := func(uint64, []byte) error { return errors.New("unreadable") }
	for _, build := range []string{ompiBuild, mpichBuild} {
		r := CommReader{Layout: layoutOf(t, build), Bias: 0x7f0000000000, Mem: fail}
		for _, addr := range []uint64{0, 8, 0x7f0000001000, 1 << 63, ^uint64(0) &^ 7} {
			if r.IsComm(addr) {
				t.Errorf("%s: isComm(%#x) = true on unreadable memory", build, addr)
			}
			if c, rank, ok := r.Comm(addr); ok {
				t.Errorf("%s: comm(%#x) = %+v, %d, true on unreadable memory", build, addr, c, rank)
			}
			if n := r.UserName(addr); n != "" {
				t.Errorf("%s: userName(%#x) = %q on unreadable memory", build, addr, n)
			}
		}
		if r.Layout.Kind == LayoutMPICH {
			if obj, ok := r.MPICHObject(0xc4001003); ok {
				t.Errorf("%s: mpichObject(0xc4001003) = %#x, true on unreadable memory", build, obj)
			}
		}
	}
}

func TestCommReaderUnknownLayout(t *testing.T) {
	m := image{}
	m.put64(0x1000, 0x44000000)
	m.put64(0x1000+224, 0)
	r := CommReader{Mem: m.read}
	if r.IsComm(0x1000) {
		t.Errorf("isComm with an unknown layout = true")
	}
	if c, rank, ok := r.Comm(0x1000); ok {
		t.Errorf("comm with an unknown layout = %+v, %d, true", c, rank)
	}
}

func TestMPICHMembers(t *testing.T) {
	l := layoutOf(t, mpichBuild)
	const comm, lut = 0x10000, 0x20000
	mapAt := func(mode, table, size, offset, stride, block int) image {
		m := image{}
		base := uint64(comm + l.MapOff)
		for i, v := range []int{mode, table, size, offset, stride, block} {
			m.put32(base+4*uint64(i), uint32(int32(v)))
		}
		m.put64(base+24, 0)
		m.put64(base+32, lut)
		for i, w := range []int{3, 0, 2} {
			m.put32(lut+4*uint64(i), uint32(w))
		}
		return m
	}
	for _, tt := range []struct {
		name string
		m    image
		want []int
	}{
		{"WORLD", mapAt(1, 0, 4, 0, 0, 0), []int{0, 1, 2, 3}},
		{"a slice", mapAt(3, 0, 2, 2, 0, 0), []int{2, 3}},
		{"even half", mapAt(5, 0, 2, 0, 2, 0), []int{0, 2}},
		{"odd half", mapAt(5, 0, 2, 1, 2, 0), []int{1, 3}},
		{"blocks of 2 every 4", mapAt(7, 0, 4, 1, 4, 2), []int{1, 2, 5, 6}},
		{"lookup table", mapAt(9, 0, 3, 0, 0, 0), []int{3, 0, 2}},
		{"another address table", mapAt(4, 1, 2, 0, 2, 0), nil},
		{"several tables", mapAt(10, 0, 2, 0, 0, 0), nil},
		{"no map", mapAt(11, 0, 2, 0, 0, 0), nil},
		{"block size 0", mapAt(7, 0, 4, 0, 4, 0), nil},
		{"a negative rank", mapAt(3, 0, 2, -5, 0, 0), nil},
		{"size beyond the bound", mapAt(1, 0, MaxMembers+1, 0, 0, 0), nil},
		{"unreadable", image{}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := CommReader{Layout: l, Mem: tt.m.read}
			if got := r.MPICHMembers(comm); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("members = %v, want %v", got, tt.want)
			}
		})
	}
	r := CommReader{Layout: layoutOf(t, ompiBuild), Mem: mapAt(1, 0, 4, 0, 0, 0).read}
	if got := r.MPICHMembers(comm); got != nil {
		t.Errorf("an Open MPI layout: members = %v, want none", got)
	}
}

// TestCH3Members reads an MPICH ch3 communicator's members from its
// connection table: the odd half of WORLD's 4 processes, and tables it
// cannot map to WORLD.
func TestCH3Members(t *testing.T) {
	l := layoutOf(t, mpichBuild)
	l.MapOff, l.VCRTOff, l.VCRTSizeOff, l.VCRTEntriesOff, l.VCRankOff = 0, 0x318, 8, 0x10, 0x18
	const comm, vcrt, vcs = 0x10000, 0x20000, 0x30000
	table := func(size int, ranks ...int) image {
		m := image{}
		m.put64(comm+0x318, vcrt)
		m.put32(vcrt+8, uint32(int32(size)))
		for i, r := range ranks {
			vc := uint64(vcs + 0x100*i)
			m.put64(vcrt+0x10+8*uint64(i), vc)
			m.put32(vc+0x18, uint32(int32(r)))
		}
		return m
	}
	for _, tt := range []struct {
		name string
		m    image
		want []int
	}{
		{"the odd half", table(2, 1, 3), []int{1, 3}},
		{"WORLD", table(4, 0, 1, 2, 3), []int{0, 1, 2, 3}},
		{"a connection missing", table(3, 1, 3), nil},
		{"a negative rank", table(2, 1, -1), nil},
		{"size beyond the bound", table(MaxMembers+1, 1), nil},
		{"no table", image{}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := CommReader{Layout: l, Mem: tt.m.read}
			if got := r.MPICHMembers(comm); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("members = %v, want %v", got, tt.want)
			}
		})
	}
}
