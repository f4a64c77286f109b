package status

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/collstate"
	"github.com/mpiprobe/mpiprobe/internal/status/hang"
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

func layoutOf(t *testing.T, build string) mpiabi.CommLayout {
	t.Helper()
	l, ok := mpiabi.CommLayoutOf(build)
	if !ok {
		t.Fatalf("mpiabi.CommLayoutOf(%s): unknown build", build)
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

	r := commReader{layout: l, bias: bias, mem: m.read}

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
			if got := r.isComm(tt.addr); got != tt.want {
				t.Errorf("isComm(%#x) = %v, want %v", tt.addr, got, tt.want)
			}
		}
		noClass := r
		noClass.layout.ClassAddr = 0
		m.put64(0x55559000, bias)
		if noClass.isComm(0x55559000) {
			t.Errorf("isComm with ClassAddr 0 accepted a word equal to the bias")
		}
	})

	t.Run("comm", func(t *testing.T) {
		tests := []struct {
			name     string
			addr     uint64
			want     agg.Comm
			wantRank int
			wantOK   bool
		}{
			{"WORLD", world, agg.Comm{ID: 0, Size: 4, Name: "WORLD"}, 2, true},
			{"SELF", self, agg.Comm{ID: 1, Size: 1, Name: "SELF"}, 0, true},
			{"a split", split, agg.Comm{ID: 5, Size: 2}, 1, true},
			{"no group", nogroup, agg.Comm{ID: 7, Size: -1}, 3, true},
			{"unreadable group", badgroup, agg.Comm{ID: 9, Size: -1}, 0, true},
			{"unreadable rank", norank, agg.Comm{ID: 4, Size: -1}, -1, true},
			{"unreadable object", 0x99990000, agg.Comm{}, -1, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				c, rank, ok := r.comm(tt.addr)
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
		if got := r.userName(split); got != "halo_exchange" {
			t.Errorf("userName(split) = %q, want %q", got, "halo_exchange")
		}
		if got := r.userName(self); got != string(full) {
			t.Errorf("userName of a name without NUL = %q, want the %d bytes", got, l.NameLen)
		}
		if got := r.userName(world); got != "" {
			t.Errorf("userName of an unreadable name = %q, want \"\"", got)
		}
		noName := r
		noName.layout.NameLen = 0
		if got := noName.userName(split); got != "" {
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

	r := commReader{layout: l, bias: bias, mem: m.read}

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
				if got := r.isComm(tt.addr); got != tt.want {
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
				got, ok := r.mpichObject(tt.h)
				if got != tt.want || ok != tt.wantOK {
					t.Errorf("mpichObject(%#x) = %#x, %v, want %#x, %v", tt.h, got, ok, tt.want, tt.wantOK)
				}
			})
		}
		noBlocks := commReader{layout: l, bias: bias + 0x1000000, mem: m.read}
		if got, ok := noBlocks.mpichObject(0xc4001003); ok {
			t.Errorf("mpichObject with the block array unreadable = %#x, true", got)
		}
		noIndirect := r
		noIndirect.layout.IndIndexMask = 0
		if got, ok := noIndirect.mpichObject(0xc4001003); ok {
			t.Errorf("mpichObject with IndIndexMask 0 = %#x, true", got)
		}
		noSize := r
		noSize.layout.ObjSize = 0
		if got, ok := noSize.mpichObject(0x44000000); ok {
			t.Errorf("mpichObject with ObjSize 0 = %#x, true", got)
		}
	})

	t.Run("comm", func(t *testing.T) {
		tests := []struct {
			name     string
			addr     uint64
			want     agg.Comm
			wantRank int
			wantOK   bool
		}{
			{"WORLD", world, agg.Comm{ID: 0, Size: 4, Name: "WORLD"}, 1, true},
			{"SELF", self, agg.Comm{ID: 1<<12 | 0x10, Size: 1, Name: "SELF"}, 0, true},
			{"direct", direct2, agg.Comm{ID: 0x1f0, Size: 8}, 3, true},
			{"indirect", indirect, agg.Comm{ID: 0x2a0, Size: 6}, 5, true},
			{"context id masked to 16 bits", direct6, agg.Comm{ID: 0, Size: 2}, 0, true},
			{"unreadable", 0x99990000, agg.Comm{}, -1, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				c, rank, ok := r.comm(tt.addr)
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
		r := commReader{layout: layoutOf(t, build), bias: 0x7f0000000000, mem: fail}
		for _, addr := range []uint64{0, 8, 0x7f0000001000, 1 << 63, ^uint64(0) &^ 7} {
			if r.isComm(addr) {
				t.Errorf("%s: isComm(%#x) = true on unreadable memory", build, addr)
			}
			if c, rank, ok := r.comm(addr); ok {
				t.Errorf("%s: comm(%#x) = %+v, %d, true on unreadable memory", build, addr, c, rank)
			}
			if n := r.userName(addr); n != "" {
				t.Errorf("%s: userName(%#x) = %q on unreadable memory", build, addr, n)
			}
		}
		if r.layout.Kind == mpiabi.LayoutMPICH {
			if obj, ok := r.mpichObject(0xc4001003); ok {
				t.Errorf("%s: mpichObject(0xc4001003) = %#x, true on unreadable memory", build, obj)
			}
		}
	}
}

func TestCommReaderUnknownLayout(t *testing.T) {
	m := image{}
	m.put64(0x1000, 0x44000000)
	m.put64(0x1000+224, 0)
	r := commReader{mem: m.read}
	if r.isComm(0x1000) {
		t.Errorf("isComm with an unknown layout = true")
	}
	if c, rank, ok := r.comm(0x1000); ok {
		t.Errorf("comm with an unknown layout = %+v, %d, true", c, rank)
	}
}

func TestHangRank(t *testing.T) {
	world := agg.Comm{ID: 0, Size: 4, Name: "WORLD"}
	split := agg.Comm{ID: 3, Size: 2}
	tests := []struct {
		name string
		rank Rank
		want hang.Rank
	}{
		{
			name: "computing",
			rank: Rank{Rank: 1, PID: 101, Host: "n1"},
			want: hang.Rank{Rank: 1, PID: 101, Host: "n1"},
		},
		{
			name: "ended",
			rank: Rank{Rank: 2, PID: 102, Host: "n1", Ended: "exited during status"},
			want: hang.Rank{Rank: 2, PID: 102, Host: "n1", Ended: "exited during status"},
		},
		{
			name: "one thread",
			rank: Rank{Rank: 0, PID: 100, Host: "n1", Threads: []Thread{
				{TID: 100, Call: "MPI_Allreduce", Comm: &world, Seq: 7, Since: 3 * time.Second, Site: "main+0x10 (a.c:3)"},
			}},
			want: hang.Rank{Rank: 0, PID: 100, Host: "n1", In: &hang.Call{
				Name: "MPI_Allreduce", Comm: &world, Seq: 7, Peer: -1, Since: 3 * time.Second, Site: "main+0x10 (a.c:3)"}},
		},
		{
			name: "the longest thread stands for the rank",
			rank: Rank{Rank: 0, PID: 100, Threads: []Thread{
				{TID: 100, Call: "MPI_Barrier", Since: time.Second, AtLeast: true},
				{TID: 101, Call: "MPI_Wait", Via: "MPI_Wait", Comm: &split, Since: 5 * time.Second, AtLeast: true, Site: "worker+0x4"},
				{TID: 102, Call: "MPI_Recv", Since: 2 * time.Second},
			}},
			want: hang.Rank{Rank: 0, PID: 100, In: &hang.Call{
				Name: "MPI_Wait", Comm: &split, Peer: -1, Since: 5 * time.Second, AtLeast: true, Site: "worker+0x4"}},
		},
		{
			name: "equal times: the first thread",
			rank: Rank{Rank: 0, PID: 100, Threads: []Thread{
				{TID: 100, Call: "MPI_Barrier", Since: time.Second},
				{TID: 101, Call: "MPI_Bcast", Since: time.Second},
			}},
			want: hang.Rank{Rank: 0, PID: 100, In: &hang.Call{Name: "MPI_Barrier", Peer: -1, Since: time.Second}},
		},
		{
			name: "a moving thread has no time inside",
			rank: Rank{Rank: 0, PID: 100, Threads: []Thread{
				{TID: 100, Call: "MPI_Test", Moving: true, Since: 4 * time.Second, AtLeast: true},
			}},
			want: hang.Rank{Rank: 0, PID: 100, In: &hang.Call{Name: "MPI_Test", Peer: -1, AtLeast: true}},
		},
		{
			name: "moving threads only",
			rank: Rank{Rank: 0, PID: 100, Threads: []Thread{
				{TID: 100, Call: "MPI_Test", Moving: true},
				{TID: 101, Call: "MPI_Iprobe", Moving: true},
			}},
			want: hang.Rank{Rank: 0, PID: 100, In: &hang.Call{Name: "MPI_Test", Peer: -1}},
		},
		{
			name: "counts merged per communicator",
			rank: Rank{Rank: 3, PID: 103, Counts: []CommCount{
				{Comm: world, Calls: map[string]uint64{"MPI_Barrier": 2, "MPI_Bcast": 1}},
				{Comm: split, Calls: map[string]uint64{"MPI_Allreduce": 9}},
				{Comm: world, Calls: map[string]uint64{"MPI_Barrier": 3, "MPI_Allreduce": 4}},
			}},
			want: hang.Rank{Rank: 3, PID: 103, Counts: map[agg.Comm]map[string]uint64{
				world: {"MPI_Barrier": 5, "MPI_Bcast": 1, "MPI_Allreduce": 4},
				split: {"MPI_Allreduce": 9},
			}},
		},
		{
			name: "empty history",
			rank: Rank{Rank: 3, PID: 103, Counts: []CommCount{}},
			want: hang.Rank{Rank: 3, PID: 103, Counts: map[agg.Comm]map[string]uint64{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := hangRank(tt.rank)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("hangRank = %s, want %s", describeRank(got), describeRank(tt.want))
			}
		})
	}
}

func describeRank(r hang.Rank) string {
	s := fmt.Sprintf("{Rank %d PID %d Host %q Ended %q Counts %v", r.Rank, r.PID, r.Host, r.Ended, r.Counts)
	if r.Counts == nil {
		s += " (nil)"
	}
	if r.In != nil {
		s += fmt.Sprintf(" In %+v", *r.In)
		if r.In.Comm != nil {
			s += fmt.Sprintf(" on %+v", *r.In.Comm)
		}
	}
	return s + "}"
}

func TestCounts(t *testing.T) {
	world := agg.Comm{ID: 0, Size: 4, Name: "WORLD"}
	es := []collstate.Entry{
		{PID: 1, Comm: world, Stats: []collstate.Stat{{Name: "MPI_Barrier", Calls: 2}, {Name: "MPI_Ibcast", Calls: 1, Pending: 1}}},
		{PID: 1, Comm: agg.Comm{ID: 9, Size: 2}},
	}
	got := counts(es)
	want := []CommCount{
		{Comm: world, Calls: map[string]uint64{"MPI_Barrier": 2, "MPI_Ibcast": 1}},
		{Comm: agg.Comm{ID: 9, Size: 2}, Calls: map[string]uint64{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("counts = %+v, want %+v", got, want)
	}
	if got := counts(nil); got != nil {
		t.Errorf("counts(nil) = %+v, want nil", got)
	}
}

func TestCompleting(t *testing.T) {
	world := agg.Comm{ID: 0, Size: 4, Name: "WORLD"}
	split := agg.Comm{ID: 3, Size: 2}
	ibcast := collstate.Stat{Name: "MPI_Ibcast", Calls: 3, Pending: 1, PendingSince: 1000}
	iallreduce := collstate.Stat{Name: "MPI_Iallreduce", Calls: 1, Pending: 1, PendingSince: 2000}
	barrier := collstate.Stat{Name: "MPI_Barrier", Calls: 5}
	done := collstate.Stat{Name: "MPI_Ireduce", Calls: 2, Completed: 2}
	one := []collstate.Entry{
		{PID: 1, Comm: world, Stats: []collstate.Stat{barrier, ibcast}},
		{PID: 1, Comm: split, Stats: []collstate.Stat{done}},
	}
	two := []collstate.Entry{
		{PID: 1, Comm: world, Stats: []collstate.Stat{ibcast}},
		{PID: 1, Comm: split, Stats: []collstate.Stat{iallreduce}},
	}
	twoOnOne := []collstate.Entry{
		{PID: 1, Comm: world, Stats: []collstate.Stat{ibcast, iallreduce}},
	}
	twice := []collstate.Entry{
		{PID: 1, Comm: world, Stats: []collstate.Stat{{Name: "MPI_Ibcast", Calls: 2, Pending: 2}}},
	}
	none := []collstate.Entry{
		{PID: 1, Comm: world, Stats: []collstate.Stat{barrier, done}},
	}
	tests := []struct {
		name      string
		hist      []collstate.Entry
		call      string
		wantComm  agg.Comm
		wantStat  collstate.Stat
		wantFound bool
	}{
		{"MPI_Wait for the only pending collective", one, "MPI_Wait", world, ibcast, true},
		{"MPI_Test", one, "MPI_Test", world, ibcast, true},
		{"MPI_Waitall", one, "MPI_Waitall", world, ibcast, true},
		{"MPI_Testall", one, "MPI_Testall", world, ibcast, true},
		{"MPI_Waitany", one, "MPI_Waitany", world, ibcast, true},
		{"MPI_Testany", one, "MPI_Testany", world, ibcast, true},
		{"MPI_Waitsome", one, "MPI_Waitsome", world, ibcast, true},
		{"MPI_Testsome", one, "MPI_Testsome", world, ibcast, true},
		{"not a completion call", one, "MPI_Barrier", agg.Comm{}, collstate.Stat{}, false},
		{"point-to-point receive", one, "MPI_Recv", agg.Comm{}, collstate.Stat{}, false},
		{"two pending on two communicators", two, "MPI_Wait", agg.Comm{}, collstate.Stat{}, false},
		{"two pending on one communicator", twoOnOne, "MPI_Waitall", agg.Comm{}, collstate.Stat{}, false},
		{"two requests of one collective count once", twice, "MPI_Wait", world, twice[0].Stats[0], true},
		{"nothing pending", none, "MPI_Wait", agg.Comm{}, collstate.Stat{}, false},
		{"no history", nil, "MPI_Wait", agg.Comm{}, collstate.Stat{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, st, ok := completing(tt.hist, Thread{TID: 1, Call: tt.call})
			if ok != tt.wantFound {
				t.Fatalf("completing(%s) found = %v, want %v", tt.call, ok, tt.wantFound)
			}
			if !ok {
				return
			}
			if e.Comm != tt.wantComm || st != tt.wantStat {
				t.Errorf("completing(%s) = %+v, %+v, want %+v, %+v", tt.call, e.Comm, st, tt.wantComm, tt.wantStat)
			}
		})
	}
}

func TestInFlight(t *testing.T) {
	world := agg.Comm{ID: 0, Size: 4, Name: "WORLD"}
	rowA := agg.Comm{ID: 3, Size: 2}
	rowB := agg.Comm{ID: 3, Size: 3} // the other half of a split: same id
	col := agg.Comm{ID: 5, Size: 2}
	inWorld := collstate.Stat{Name: "MPI_Allreduce", Calls: 4, Inside: 1, Since: 100}
	inRowA := collstate.Stat{Name: "MPI_Allreduce", Calls: 7, Inside: 1, Since: 200}
	inRowB := collstate.Stat{Name: "MPI_Allreduce", Calls: 8, Inside: 1, Since: 300}
	doneCol := collstate.Stat{Name: "MPI_Allreduce", Calls: 9}
	barrier := collstate.Stat{Name: "MPI_Barrier", Calls: 2, Inside: 1, Since: 50}

	single := []collstate.Entry{
		{PID: 1, Comm: world, Stats: []collstate.Stat{barrier}},
		{PID: 1, Comm: rowA, Stats: []collstate.Stat{inRowA}},
		{PID: 1, Comm: col, Stats: []collstate.Stat{doneCol}},
	}
	several := []collstate.Entry{
		{PID: 1, Comm: world, Stats: []collstate.Stat{inWorld}},
		{PID: 1, Comm: rowA, Stats: []collstate.Stat{inRowA}},
		{PID: 1, Comm: rowB, Stats: []collstate.Stat{inRowB}},
		{PID: 1, Comm: col, Stats: []collstate.Stat{doneCol}},
	}
	ptr := func(c agg.Comm) *agg.Comm { return &c }
	tests := []struct {
		name      string
		hist      []collstate.Entry
		th        Thread
		wantComm  agg.Comm
		wantStat  collstate.Stat
		wantFound bool
	}{
		{"the only one inside, communicator unknown", single, Thread{Call: "MPI_Allreduce"}, rowA, inRowA, true},
		{"the only one inside, communicator known", single, Thread{Call: "MPI_Allreduce", Comm: ptr(rowA)}, rowA, inRowA, true},
		{"another collective", single, Thread{Call: "MPI_Barrier"}, world, barrier, true},
		{"nothing inside under this name", single, Thread{Call: "MPI_Bcast"}, agg.Comm{}, collstate.Stat{}, false},
		{"several inside, communicator unknown", several, Thread{Call: "MPI_Allreduce"}, agg.Comm{}, collstate.Stat{}, false},
		{"several inside, the stack's communicator", several, Thread{Call: "MPI_Allreduce", Comm: ptr(world)}, world, inWorld, true},
		{"several inside, same id: the size tells", several, Thread{Call: "MPI_Allreduce", Comm: ptr(rowB)}, rowB, inRowB, true},
		{"several inside, communicator not among them", several, Thread{Call: "MPI_Allreduce", Comm: ptr(col)}, agg.Comm{}, collstate.Stat{}, false},
		{"no history", nil, Thread{Call: "MPI_Allreduce"}, agg.Comm{}, collstate.Stat{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, st, ok := inFlight(tt.hist, tt.th)
			if ok != tt.wantFound {
				t.Fatalf("inFlight(%s) found = %v (%+v, %+v), want %v", tt.th.Call, ok, e.Comm, st, tt.wantFound)
			}
			if !ok {
				return
			}
			if e.Comm != tt.wantComm || st != tt.wantStat {
				t.Errorf("inFlight(%s) = %+v, %+v, want %+v, %+v", tt.th.Call, e.Comm, st, tt.wantComm, tt.wantStat)
			}
		})
	}
}

// TestMPICHMembers reads the rank maps MPICH ch4 gives communicators:
// WORLD's halves of a split by parity (stride 2 from 0 and from 1), a
// reordered one (a lookup table), a block-strided one, and those it
// cannot map to WORLD.
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
		{"size beyond the bound", mapAt(1, 0, maxMembers+1, 0, 0, 0), nil},
		{"unreadable", image{}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := commReader{layout: l, mem: tt.m.read}
			if got := r.mpichMembers(comm); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("members = %v, want %v", got, tt.want)
			}
		})
	}
	r := commReader{layout: layoutOf(t, ompiBuild), mem: mapAt(1, 0, 4, 0, 0, 0).read}
	if got := r.mpichMembers(comm); got != nil {
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
		{"size beyond the bound", table(maxMembers+1, 1), nil},
		{"no table", image{}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := commReader{layout: l, mem: tt.m.read}
			if got := r.mpichMembers(comm); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("members = %v, want %v", got, tt.want)
			}
		})
	}
}
