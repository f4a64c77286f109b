package layout

import (
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// ob1Input builds what InferOB1 reads in the shape of Open MPI 4.1: the
// predefined requests (completion at 0x58, state at 0x60, MPI object at
// 0x98), the stores of mca_pml_ob1_irecv and _isend, WORLD and SELF
// (ompiObjects: group at 0xf8 and 0x100, size at 0x10 in the group) whose
// groups keep their processes at 0x20, and processes whose names (job id,
// vpid) are at 0x28.
func ob1Input(rank, size int) OB1 {
	const (
		world    = 0x600000
		procs    = 0x710000
		selfProc = 0x710800
		objs     = 0x720000
	)
	w, s, mem := ompiObjects(rank, size, 0x7f0000000000)
	null, empty := make([]byte, OB1RequestBytes), make([]byte, OB1RequestBytes)
	for i, b := range [][]byte{null, empty} {
		put64(b, 0, 0x7f0000123450) // the class
		put32(b, 8, 1)              // the reference count: a 64-bit 1 at 8 too
		put32(b, 0x40, uint32(-1-i))
		put32(b, 0x44, ^uint32(0))
		put64(b, 0x58, 1)
		put32(b, 0x60, uint32(1+i))
		put32(b, 0x6c, uint32(i))
		put64(b, 0x98, world)
	}
	imm := func(v, off int64, n int) Store { return Store{Arg: -1, Imm: v, Off: off, Bytes: n} }
	arg := func(a int, off int64, n int) Store { return Store{Arg: a, Off: off, Bytes: n} }
	arr, self := make([]byte, 8*size), make([]byte, 8)
	for i := range size {
		o := make([]byte, 0x100)
		put32(o, 0x28, 0x4c2e0001)
		put32(o, 0x2c, uint32(i))
		mem[objs+0x100*uint64(i)] = o
		put64(arr, 8*i, objs+0x100*uint64(i))
	}
	put64(self, 0, objs+0x100*uint64(rank))
	mem[procs], mem[selfProc] = arr, self
	put64(mem[0x700000], 0x20, procs)
	put64(mem[0x700100], 0x20, selfProc)
	return OB1{
		Null: null, Empty: empty, World: world,
		Irecv: []Store{imm(0, 0x10, 8), imm(1, 0x20, 4), imm(2, 0xa8, 4), imm(1, 0x60, 4), imm(0, 0x58, 8), imm(0, 0x88, 8),
			arg(5, 0x98, 8), arg(0, 0x1c8, 8), arg(3, 0x1d8, 4), arg(4, 0x1dc, 4), arg(5, 0xb0, 8)},
		Isend:      []Store{imm(1, 0x60, 4), arg(3, 0x1d8, 4), arg(6, 0x98, 8), arg(4, 0x1dc, 4), arg(6, 0xb0, 8), imm(2, 0x60, 4)},
		RemoteSize: Facts{Stores: []Access{{Arg: 1, Chain: []int64{0x100, 0x10}}}},
		WorldComm:  w, SelfComm: s, GroupOff: 0xf8, CountOff: 0x10,
		Mem: mem.read,
	}
}

func TestInferOB1(t *testing.T) {
	found := map[string]uint64{
		FieldReqComplete: 0x58, FieldReqDone: 1, FieldReqState: 0x60, FieldReqActive: 2, FieldReqObject: 0x98,
		FieldReqComm: 0xb0, FieldReqPeer: 0x1d8, FieldReqTag: 0x1dc, FieldReqType: 0xa8, FieldReqRecv: 2,
		FieldRemoteGroup: 0x100, FieldGroupProcs: 0x20, FieldProcVpid: 0x2c,
	}
	tests := []struct {
		name    string
		rank    int
		edit    func(*OB1)
		errHas  string
		want    map[string]uint64 // fields found, with their values
		unknown []string
		how     map[string]How
	}{
		{
			name: "Open MPI 4.1's shape", rank: 1, edit: func(*OB1) {}, want: found,
			how: map[string]How{FieldReqComplete: ObjectsCode, FieldReqState: ObjectsCode, FieldReqObject: ObjectsCode,
				FieldReqComm: CodeTwice, FieldReqPeer: CodeTwice, FieldReqType: CodeOnly, FieldRemoteGroup: ObjectsAccessor,
				FieldGroupProcs: ObjectsOnly, FieldProcVpid: ObjectsOnly},
		},
		{
			// Open MPI holds a sentinel with the vpid for a process not
			// set up yet; with one real process, its name says where
			// the vpid is.
			name: "processes not set up are sentinels", rank: 2,
			edit: func(in *OB1) { sentinels(in, 2); in.Name = 2<<32 | 0x4c2e0001 },
			want: found,
		},
		{
			name: "sentinels, and no name from the environment", rank: 2,
			edit:    func(in *OB1) { sentinels(in, 2) },
			want:    map[string]uint64{FieldGroupProcs: 0x20},
			unknown: []string{FieldProcVpid},
		},
		{
			name: "sentinels, and another job's name", rank: 2,
			edit:    func(in *OB1) { sentinels(in, 2); in.Name = 2<<32 | 0x4c2e0002 },
			unknown: []string{FieldProcVpid},
		},
		{
			name: "isend followed nowhere", rank: 0,
			edit: func(in *OB1) { in.Isend = nil },
			want: found, how: map[string]How{FieldReqComm: CodeOnly, FieldReqPeer: CodeOnly},
		},
		{
			name: "WORLD's and SELF's groups share one array", rank: 0,
			edit:    func(in *OB1) { in.Mem = fakeMemWith(in.Mem, 0x700100+0x20, []byte{0, 0, 0x71, 0, 0, 0, 0, 0}) },
			want:    map[string]uint64{FieldReqComm: 0xb0, FieldRemoteGroup: 0x100},
			unknown: []string{FieldGroupProcs, FieldProcVpid},
		},
		{
			name: "no remote group in the accessor or the objects: the local one", rank: 0,
			edit: func(in *OB1) { in.RemoteSize = Facts{}; put64(in.WorldComm, 0x100, 0) },
			want: map[string]uint64{FieldRemoteGroup: 0xf8},
		},
		{
			name: "irecv's constant before the communicator is not MCA_PML_REQUEST_RECV", rank: 0,
			edit:   func(in *OB1) { in.Irecv[2].Imm = 3 },
			errHas: "request type", unknown: []string{FieldReqType},
		},
		{
			name: "isend writes the peer elsewhere", rank: 0,
			edit:   func(in *OB1) { in.Isend[1].Off = 0x1e0 },
			errHas: "request peer", unknown: []string{FieldReqPeer},
		},
		{
			name: "the objects' state is not inactive and active", rank: 0,
			edit:   func(in *OB1) { put32(in.Empty, 0x60, 1) },
			errHas: "request state",
		},
		{
			name: "before MPI_Init", rank: 0,
			edit:   func(in *OB1) { in.Null, in.Empty = make([]byte, OB1RequestBytes), make([]byte, OB1RequestBytes) },
			errHas: "not initialized",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := ob1Input(tt.rank, 4)
			tt.edit(&in)
			r, err := InferOB1(in)
			switch {
			case tt.errHas == "" && err != nil:
				t.Fatalf("InferOB1: %v", err)
			case tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)):
				t.Fatalf("InferOB1 error %v, want one naming %q", err, tt.errHas)
			}
			for name, v := range tt.want {
				if f := r.Get(name); !f.Found() || f.Value != v {
					t.Errorf("%s = %+v, want %#x", name, f, v)
				}
			}
			for name, h := range tt.how {
				if f := r.Get(name); f.How != h {
					t.Errorf("%s found by %q, want %q", name, f.How, h)
				}
			}
			for _, name := range tt.unknown {
				if f := r.Get(name); f.Found() {
					t.Errorf("%s = %+v, want unknown", name, f)
				}
			}
		})
	}
}

// sentinels makes every process of WORLD's group of 4 but rank's a
// sentinel holding its vpid.
func sentinels(in *OB1, rank int) {
	arr := make([]byte, 8*4)
	for i := range 4 {
		put64(arr, 8*i, uint64(i)<<32|1)
	}
	put64(arr, 8*rank, 0x720000+0x100*uint64(rank))
	in.Mem = fakeMemWith(in.Mem, 0x710000, arr)
}

// fakeMemWith reads b at addr, and everything else from mem.
func fakeMemWith(mem procfs.Memory, addr uint64, b []byte) procfs.Memory {
	return func(a uint64, p []byte) error {
		if a >= addr && a+uint64(len(p)) <= addr+uint64(len(b)) {
			copy(p, b[a-addr:])
			return nil
		}
		if a < addr+uint64(len(b)) && addr < a+uint64(len(p)) {
			buf := make([]byte, len(p))
			if err := mem(a, buf); err != nil {
				return err
			}
			for i := range buf {
				if x := a + uint64(i); x >= addr && x < addr+uint64(len(b)) {
					buf[i] = b[x-addr]
				}
			}
			copy(p, buf)
			return nil
		}
		return mem(a, p)
	}
}

func FuzzInferOB1(f *testing.F) {
	in := ob1Input(1, 4)
	f.Add(in.Null, in.Empty, in.WorldComm, in.SelfComm)
	f.Fuzz(func(t *testing.T, null, empty, world, self []byte) {
		in := ob1Input(1, 4)
		in.Null, in.Empty, in.WorldComm, in.SelfComm = null, empty, world, self
		_, _ = InferOB1(in)
	})
}
