package hang

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
)

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

var (
	world8 = agg.Comm{ID: 0, Size: 8, Name: "WORLD"}
	self   = agg.Comm{ID: 1, Size: 1, Name: "SELF"}
)

func world(size int) agg.Comm { return agg.Comm{Size: size, Name: "WORLD"} }

// coll is a call of a collective on c.
func coll(name string, c agg.Comm, seq uint64, since float64) *Call {
	return &Call{Name: name, Comm: &c, Seq: seq, Peer: -1, Since: sec(since)}
}

// p2p is a point-to-point call with peer on WORLD of size 8.
func p2p(name string, peer int, since float64) *Call { return p2pOn(name, world8, peer, since) }

// p2pOn is a point-to-point call with peer on c.
func p2pOn(name string, c agg.Comm, peer int, since float64) *Call {
	return &Call{Name: name, Comm: &c, Peer: peer, Since: sec(since)}
}

// counts builds Rank.Counts from (Comm, name, count) triples.
func counts(triples ...any) map[agg.Comm]map[string]uint64 {
	if len(triples)%3 != 0 {
		panic("counts: want (agg.Comm, name, count) triples")
	}
	m := make(map[agg.Comm]map[string]uint64)
	for i := 0; i < len(triples); i += 3 {
		c := triples[i].(agg.Comm)
		if m[c] == nil {
			m[c] = make(map[string]uint64)
		}
		m[c][triples[i+1].(string)] = uint64(triples[i+2].(int))
	}
	return m
}

// job makes n ranks with f.
func job(n int, f func(i int) Rank) []Rank {
	out := make([]Rank, n)
	for i := range out {
		out[i] = f(i)
		out[i].Rank = i
		out[i].PID = 1000 + i
		out[i].Host = fmt.Sprintf("node%d", i/4)
	}
	return out
}

// hungAllreduce is the example of the brief: ranks 0..n-2 in
// MPI_Allreduce #42 on WORLD, the last rank in MPI_Recv from rank 3 after 41
// calls.
func hungAllreduce(n int) []Rank {
	w := world(n)
	return job(n, func(i int) Rank {
		if i == n-1 {
			call := &Call{Name: "MPI_Recv", Comm: &w, Peer: 3, Since: sec(20)}
			return Rank{In: call, Counts: counts(w, "MPI_Allreduce", 41, w, "MPI_Bcast", 2)}
		}
		return Rank{
			In:     coll("MPI_Allreduce", w, 42, 12.3+float64(i)/100),
			Counts: counts(w, "MPI_Allreduce", 42, w, "MPI_Bcast", 2),
		}
	})
}

// checkSays fails t when verdict lacks a text of say or has one of notSay.
func checkSays(t *testing.T, verdict string, say, notSay []string) {
	t.Helper()
	for _, s := range say {
		if !strings.Contains(verdict, s) {
			t.Errorf("verdict lacks %q:\n%s", s, verdict)
		}
	}
	for _, s := range notSay {
		if strings.Contains(verdict, s) {
			t.Errorf("verdict has %q:\n%s", s, verdict)
		}
	}
}
