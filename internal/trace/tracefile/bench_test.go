package tracefile

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"
)

// benchEvents is a mix like a real job: 8 ranks of 2 threads, a few calls and
// sites, point-to-point and collective arguments.
func benchEvents(n int) []Event {
	rng := rand.New(rand.NewPCG(3, 4))
	ev := make([]Event, n)
	var now [16]int64
	for i := range ev {
		s := rng.IntN(16)
		now[s] += 200 + rng.Int64N(2000)
		d := 300 + rng.Int64N(5000)
		e := Event{Rank: s / 2, TID: int32(1000*(s/2) + s%2), Call: rng.IntN(4), Site: rng.IntN(6),
			Enter: now[s], Exit: now[s] + d, Peer: NoValue, Root: NoValue, Count: NoValue}
		now[s] += d
		switch e.Call {
		case 0, 1:
			e.Peer, e.Count, e.ElemSize = int32((s/2+1)%8), 4096, 8
		case 2:
			e.Root, e.Count, e.ElemSize = 0, 1, 4
		}
		ev[i] = e
	}
	return ev
}

func writeBench(b *testing.B, buf *bytes.Buffer, ev []Event) {
	w, err := NewWriter(buf, Header{Host: "node1", Start: time.Unix(1700000000, 0), Command: []string{"mpirun", "./app"}})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []string{"MPI_Send", "MPI_Recv", "MPI_Bcast", "MPI_Barrier"} {
		w.AddCall(c)
	}
	for i := range 6 {
		w.AddSite(Site{Object: "/opt/app", Offset: uint64(0x401000 + 16*i)})
	}
	for range 8 {
		w.AddRank(Rank{PID: 1, Host: "node1", Job: "1", Rank: "0", Exe: "/opt/app"})
	}
	const batch = 256 // as events come off the ring buffer
	for i := 0; i < len(ev); i += batch {
		if err := w.WriteEvents(ev[i:min(i+batch, len(ev))]); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(nil); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWriteRead writes and reads back 10^6 events per iteration.
func BenchmarkWriteRead(b *testing.B) {
	const n = 1000000
	ev := benchEvents(n)
	var buf bytes.Buffer
	for _, mode := range []string{"write", "read", "write+read"} {
		b.Run(mode, func(b *testing.B) {
			buf.Reset()
			writeBench(b, &buf, ev)
			size := buf.Len()
			data := bytes.Clone(buf.Bytes())
			b.ResetTimer()
			for b.Loop() {
				if mode != "read" {
					buf.Reset()
					writeBench(b, &buf, ev)
				}
				if mode != "write" {
					tr, err := Read(bytes.NewReader(data))
					if err != nil || len(tr.Events) != n {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/event")
			b.ReportMetric(float64(size)/n, "bytes/event")
		})
	}
}

// BenchmarkMerge merges the traces of 8 nodes, 125000 events each (10^6 in
// all, 8 ranks a node), as trace show and export do with 8 files.
func BenchmarkMerge(b *testing.B) {
	parts := make([]Part, 8)
	for n := range parts {
		t := &Trace{Header: Header{Host: "node" + string(rune('0'+n)), Start: time.Unix(1700000000, int64(n)*1000)},
			Calls: []string{"MPI_Send", "MPI_Recv", "MPI_Bcast", "MPI_Barrier"}, Events: benchEvents(125000), Complete: true}
		for i := range 6 {
			t.Sites = append(t.Sites, Site{Object: "/opt/app", Offset: uint64(0x401000 + 16*i)})
		}
		for r := range 8 {
			t.Ranks = append(t.Ranks, Rank{PID: 100 + r, Host: t.Header.Host, Job: "1", Rank: string(rune('0'+n)) + "." + string(rune('0'+r)), Exe: "/opt/app"})
		}
		parts[n] = Part{Name: t.Header.Host + ".trace", Trace: t}
	}
	b.ReportAllocs()
	for b.Loop() {
		m, err := Merge(parts)
		if err != nil || len(m.Events) != 1_000_000 {
			b.Fatal(err, len(m.Events))
		}
	}
}
