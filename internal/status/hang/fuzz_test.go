package hang

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
)

// byteSource hands out fuzz bytes, then zeros.
type byteSource struct {
	data []byte
}

func (s *byteSource) next() byte {
	if len(s.data) == 0 {
		return 0
	}
	b := s.data[0]
	s.data = s.data[1:]
	return b
}

func pick[T any](s *byteSource, from []T) T { return from[int(s.next())%len(from)] }

var (
	fuzzComms = []*agg.Comm{
		nil,
		{ID: 0, Size: 8, Name: "WORLD"},
		{ID: 0, Size: 4, Name: "WORLD"},
		{ID: 0x44000000, Size: 8, Name: "WORLD", Local: true},
		{ID: 1, Size: 1, Name: "SELF"},
		{ID: 3, Size: 4},
		{ID: 3, Size: 5},
		{ID: 5, Size: 2},
		{ID: 7, Size: 1},
		{ID: 9, Size: 0},
		{ID: 9, Size: -3},
		{ID: 11, Size: 1 << 40},
		{ID: 0x7f12, Size: 4, Local: true},
		{ID: 0x7f13, Size: 8, Local: true},
		{ID: math.MaxUint64, Size: math.MaxInt, Name: "x\ny"},
	}
	fuzzNames = []string{
		"MPI_Allreduce", "MPI_Barrier", "PMPI_Bcast", "MPI_Recv", "MPI_Send",
		"MPI_Sendrecv", "MPI_Wait", "MPI_Iallreduce", "MPIX_Thing", "",
		"MPI_Finalize", "bad\nname\r", "MPI_Init", "MPI_Win_fence", "MPI_Reduce",
	}
	fuzzSites = []string{"", "main+0x1e4 (app.c:32)", "x\u2028y", strings.Repeat("s", 300)}
	fuzzEnds  = []string{"exit 0", "killed by SIGKILL", "\n"}
)

// fuzzRanks decodes random rank states from data.
func fuzzRanks(data []byte) []Rank {
	s := &byteSource{data: data}
	n := int(s.next()) % 40
	ranks := make([]Rank, n)
	for i := range ranks {
		r := &ranks[i]
		r.Rank = int(s.next())%48 - 2
		mode := s.next()
		if mode&1 != 0 {
			c := &Call{
				Name:  pick(s, fuzzNames),
				Comm:  pick(s, fuzzComms),
				Seq:   uint64(s.next() % 4),
				Peer:  int(s.next())%14 - 3,
				Since: time.Duration(int8(s.next())) * 250 * time.Millisecond,
				Site:  pick(s, fuzzSites),
			}
			if b := s.next(); b%3 == 0 {
				c.Args = &Args{Root: int(b%5) - 1, Count: int64(b % 7), Datatype: pick(s, fuzzSites)}
			}
			switch s.next() % 16 {
			case 0:
				c.Seq = math.MaxUint64
			case 1:
				c.Since = math.MinInt64
			case 2:
				c.Since = math.MaxInt64
			}
			r.In = c
		}
		if mode&2 != 0 {
			r.Ended = pick(s, fuzzEnds)
		}
		if mode&0x80 != 0 {
			r.Unreadable = pick(s, fuzzSites)
		}
		switch mode >> 2 % 4 {
		case 1:
			r.Counts = map[agg.Comm]map[string]uint64{}
		case 2, 3:
			r.Counts = map[agg.Comm]map[string]uint64{}
			for range int(s.next() % 6) {
				c := pick(s, fuzzComms)
				if c == nil {
					r.Counts[agg.Comm{ID: 3, Size: 4}] = nil
					continue
				}
				if r.Counts[*c] == nil {
					r.Counts[*c] = map[string]uint64{}
				}
				v := uint64(s.next() % 5)
				if v == 4 {
					v = math.MaxUint64
				}
				r.Counts[*c][pick(s, fuzzNames)] = v
			}
		}
	}
	return ranks
}

func FuzzDiagnose(f *testing.F) {
	f.Add([]byte{}, int64(5*time.Second))
	f.Add([]byte{8, 0, 1, 0, 1, 0, 5, 40, 1, 0}, int64(5*time.Second))
	f.Add([]byte{20, 1, 13, 0, 1, 3, 8, 50, 1, 3, 2, 5, 1, 0, 3, 13, 0, 6, 2, 60, 0, 0, 3, 5, 0, 1, 3}, int64(time.Second))
	f.Add([]byte("\x10\x00\x0d\x00\x05\x01\x04\x7f\x00\x00\x01\x0d\x03\x05\x01\x04\x7f\x00\x00\x02\x03\x0c"), int64(0))
	f.Add([]byte("a long random seed with many different bytes in it 0123456789 !@#$%^&*()"), int64(-1))
	f.Add([]byte{39, 0, 0x0d, 0, 12, 2, 0, 100, 0, 0, 1, 0x0d, 0, 12, 2, 0, 100, 0, 0}, int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, data []byte, minWait int64) {
		ranks := fuzzRanks(data)
		rep := Diagnose(ranks, time.Duration(minWait))
		v := rep.Verdict
		if v == "" || strings.ContainsAny(v, "\n\r\v\f\u0085\u2028\u2029") {
			t.Fatalf("verdict is not a single line: %q", v)
		}
		if rep.Threshold != time.Duration(minWait) {
			t.Fatalf("Threshold = %v", rep.Threshold)
		}
		strictlySorted := func(name string, rs []int) {
			for i, r := range rs {
				if r < 0 || (i > 0 && rs[i-1] >= r) {
					t.Fatalf("%s not sorted distinct ranks: %v", name, rs)
				}
			}
		}
		strictlySorted("Waiting", rep.Waiting)
		strictlySorted("Odd", rep.Odd)
		for _, r := range rep.Odd {
			if _, found := slices.BinarySearch(rep.Waiting, r); found {
				t.Fatalf("rank %d both waiting and odd", r)
			}
		}
		if len(rep.Odd) > 0 && len(rep.Waiting) == 0 {
			t.Fatalf("odd ranks %v without a waiting group", rep.Odd)
		}
		for _, d := range rep.Divergent {
			if d.Count == d.Others {
				t.Fatalf("divergence without a difference: %+v", d)
			}
		}
		strictlySorted("Suspects", rep.Suspects)
		for _, a := range rep.Absent {
			if slices.Contains(a.Waiting, a.Rank) {
				t.Fatalf("rank %d both absent from and waiting in %s", a.Rank, a.Call)
			}
		}
		for _, m := range rep.Mismatches {
			if len(m.Sides) < 2 {
				t.Fatalf("mismatch of one side: %+v", m)
			}
			seen := map[int]bool{}
			for _, sd := range m.Sides {
				for _, r := range sd.Ranks {
					if seen[r] {
						t.Fatalf("rank %d on two sides of %+v", r, m)
					}
					seen[r] = true
				}
			}
		}
		// Map iteration order must not leak into the result.
		again := Diagnose(ranks, time.Duration(minWait))
		if !reflect.DeepEqual(again.Suspects, rep.Suspects) || !reflect.DeepEqual(again.Lead, rep.Lead) ||
			!reflect.DeepEqual(again.Absent, rep.Absent) || !reflect.DeepEqual(again.Mismatches, rep.Mismatches) {
			t.Fatalf("facts not deterministic:\n%+v\n%+v", rep, again)
		}
		if again.Verdict != v || !slices.Equal(again.Divergent, rep.Divergent) {
			t.Fatalf("not deterministic:\n%q\n%q", v, again.Verdict)
		}
	})
}
