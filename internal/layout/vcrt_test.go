package layout

import (
	"strings"
	"testing"
)

// ch3Objects builds WORLD and SELF of MPICH 3.4's ch3 shape as seen from
// rank of a job of size: dev.vcrt at 0x318 (and dev.local_vcrt after it,
// NULL), tables with their size at 8 and entries at 0x10, connections
// holding pg_rank at 0x18 and lpid at 0x1c.
func ch3Objects(rank, size int) ([]byte, []byte, fakeMem) {
	const tw, ts, vcs = 0x500000, 0x500800, 0x510000
	w, s := make([]byte, 0x340), make([]byte, 0x340)
	put64(w, 0x318, tw)
	put64(s, 0x318, ts)
	mem := fakeMem{tw: make([]byte, maxVCRTHeader+8*size), ts: make([]byte, maxVCRTHeader)}
	put32(mem[tw], 4, 1)
	put32(mem[tw], 8, uint32(size))
	put32(mem[ts], 8, 1)
	for i := range size {
		vc := make([]byte, 0x40)
		put32(vc, 4, 1)
		put64(vc, 0x10, 0x520000)
		put32(vc, 0x18, uint32(i))
		put32(vc, 0x1c, uint32(i))
		mem[vcs+0x100*uint64(i)] = vc
		put64(mem[tw], 0x10+8*i, vcs+0x100*uint64(i))
	}
	put64(mem[ts], 0x10, vcs+0x100*uint64(rank))
	return w, s, mem
}

func TestInferVCRT(t *testing.T) {
	tests := []struct {
		name       string
		rank, size int
		known      Known
		edit       func(w, s []byte)
		want       map[string]uint64
		unknown    []string
		noteHas    string
	}{
		{name: "ch3", rank: 2, size: 4, known: Known{2, 4},
			want: map[string]uint64{FieldVCRT: 0x318, FieldVCRTSize: 8, FieldVCRTEntries: 0x10, FieldVCRank: 0x18}},
		{name: "the rank unknown", rank: 1, size: 3, known: Known{-1, 3},
			want: map[string]uint64{FieldVCRT: 0x318, FieldVCRank: 0x18}},
		{name: "local_vcrt is the same table", rank: 0, size: 2, known: Known{0, 2},
			edit: func(w, s []byte) { copy(w[0x320:], w[0x318:0x320]); copy(s[0x320:], s[0x318:0x320]) },
			want: map[string]uint64{FieldVCRT: 0x318}, noteHas: "the first of 2"},
		{name: "the environment's rank is another connection", rank: 1, size: 3, known: Known{2, 3},
			unknown: []string{FieldVCRT}},
		{name: "the job's size is unknown", rank: 1, size: 3, known: Known{1, -1},
			unknown: []string{FieldVCRT}},
		{name: "a job of one process", rank: 0, size: 1, known: Known{0, 1},
			want: map[string]uint64{FieldVCRT: 0x318}, unknown: []string{FieldVCRank}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, s, mem := ch3Objects(tt.rank, tt.size)
			if tt.edit != nil {
				tt.edit(w, s)
			}
			var r Result
			inferVCRT(&r, w, s, tt.known, mem.read)
			for name, v := range tt.want {
				if f := r.Get(name); !f.Found() || f.Value != v {
					t.Errorf("%s = %+v, want %#x", name, f, v)
				}
			}
			for _, name := range tt.unknown {
				if f := r.Get(name); f.Found() {
					t.Errorf("%s = %+v, want unknown", name, f)
				}
			}
			if n := r.Get(FieldVCRT).Note; !strings.Contains(n, tt.noteHas) {
				t.Errorf("note %q lacks %q", n, tt.noteHas)
			}
		})
	}
}
