package status

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/status/hang"
)

// syntheticJob is the node facts of a hung job of ranks ranks on nodes
// nodes (ranks i*perNode.. on node i): every rank in one MPI_Allreduce on
// WORLD but a few in point-to-point calls: ranks 1-3 of each 1000 in
// MPI_Recv from the rank before them (a chain into the collective), and
// a cycle of MPI_Ssend through ranks 5, 15 and 25, each on its own node.
// Each node's facts are grouped as its node command groups them, and
// written as it writes them.
func syntheticJob(tb testing.TB, ranks, nodes int) (asked []string, docs [][]byte, ungrouped int) {
	world := &agg.Comm{ID: 0, Size: ranks, Name: "WORLD"}
	perNode := ranks / nodes
	cycle := map[int]int{5: 15, 15: 25, 25: 5}
	for n := range nodes {
		host := fmt.Sprintf("node%05d", n)
		asked = append(asked, host)
		var frs []FactRank
		for r := n * perNode; r < (n+1)*perNode; r++ {
			call := &hang.Call{Name: "MPI_Allreduce", Comm: world, Peer: -1, Since: 20 * time.Second, AtLeast: true, Site: "solver_step+0x1e4 (solver.c:212)"}
			switch to, inCycle := cycle[r]; {
			case inCycle:
				call = &hang.Call{Name: "MPI_Ssend", Comm: world, Peer: to, Since: 20 * time.Second, AtLeast: true, Site: "halo_exchange+0x51 (halo.c:88)",
					Waits: []hang.Wait{{Send: true, Peer: to, CommPeer: -1, Tag: 7, Comm: world, Known: true}}}
			case r%1000 >= 1 && r%1000 <= 3:
				call = &hang.Call{Name: "MPI_Recv", Comm: world, Peer: r - 1, Since: 20 * time.Second, AtLeast: true, Site: "gather_rows+0x9c (io.c:40)",
					Waits: []hang.Wait{{Peer: r - 1, CommPeer: -1, Tag: 3, Comm: world, Known: true}}}
			}
			frs = append(frs, FactRank{Rank: hang.Rank{Rank: r, PID: 100000 + r, Host: host, In: call}, CommRank: -1})
		}
		nf := NodeFacts{Host: host, Job: "4242.0", WindowSeconds: 1, RankCount: len(frs), Classes: groupFacts(frs, host), Notes: []string{}}
		nf.SchemaVersion, nf.Kind = 1, KindNodeFacts
		var b bytes.Buffer
		if err := WriteNodeFacts(&b, nf); err != nil {
			tb.Fatal(err)
		}
		docs = append(docs, b.Bytes())
		// The same facts, one class per rank, as without grouping.
		var one []FactClass
		for _, fr := range frs {
			one = append(one, groupFacts([]FactRank{fr}, host)...)
		}
		nf.Classes = one
		b.Reset()
		_ = WriteNodeFacts(&b, nf)
		ungrouped += b.Len()
	}
	return asked, docs, ungrouped
}

// BenchmarkMerge merges the node facts of 100,000 ranks on 10,000 nodes
// into one verdict, from the documents as read off the wire (read) and
// from documents already decoded (merge). Its metrics: the size of a
// node's document, grouped and ungrouped, per node and in all.
func BenchmarkMerge(b *testing.B) {
	const ranks, nodes = 100_000, 10_000
	asked, raw, ungrouped := syntheticJob(b, ranks, nodes)
	total := 0
	for _, d := range raw {
		total += len(d)
	}
	decode := func(b *testing.B) []NodeAnswer {
		answers := make([]NodeAnswer, len(raw))
		for i, d := range raw {
			docs, err := ReadNodeFacts(bytes.NewReader(d))
			if err != nil {
				b.Fatal(err)
			}
			answers[i] = NodeAnswer{Host: asked[i], Facts: docs}
		}
		return answers
	}
	check := func(b *testing.B, m Merged) {
		v := m.Report.Verdict
		if len(m.Ranks) != ranks || len(m.Missing) != 0 ||
			!strings.HasPrefix(v, "deadlock cycle: rank 5 waits for 15 (MPI_Ssend tag 7 at halo.c:88), rank 15 waits for 25") || !strings.Contains(v, "; cycle across nodes: rank 5 on node00000, rank 15 on node00001, rank 25 on node00002; knot across ") {
			b.Fatalf("%d ranks, missing %v, verdict %q", len(m.Ranks), m.Missing, v)
		}
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(total)/nodes, "B/node-doc")
		b.ReportMetric(float64(ungrouped)/nodes, "B/node-doc-ungrouped")
		b.ReportMetric(float64(total), "B/all-docs")
	}
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			check(b, Merge(asked, decode(b), time.Second))
		}
		report(b)
	})
	b.Run("merge", func(b *testing.B) {
		answers := decode(b)
		b.ReportAllocs()
		for b.Loop() {
			check(b, Merge(asked, answers, time.Second))
		}
		report(b)
	})
}
