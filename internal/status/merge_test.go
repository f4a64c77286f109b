package status

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/status/hang"
)

// The node facts in testdata/nodefacts are `mpiprobe status --node-facts`
// of corpus programs (testdata/deadlock) hung under Open MPI 4.1.4 on one
// node, and each .verdict is `mpiprobe status --json`'s verdict of the
// same job, taken right after.

func readFacts(t *testing.T, name string) (NodeFacts, string) {
	t.Helper()
	dir := filepath.Join("testdata", "nodefacts")
	data, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := ReadNodeFacts(bytes.NewReader(data))
	if err != nil || len(docs) != 1 {
		t.Fatalf("%s: %d documents, %v", name, len(docs), err)
	}
	v, err := os.ReadFile(filepath.Join(dir, name+".verdict"))
	if err != nil {
		t.Fatal(err)
	}
	return docs[0], strings.TrimSpace(string(v))
}

// split deals one node's ranks out to hosts by rank (rank i goes to
// hosts[i%len(hosts)]), each host's facts grouped again as its node
// command would group them.
func split(t *testing.T, nf NodeFacts, hosts ...string) []NodeAnswer {
	t.Helper()
	frs, err := nf.Expand()
	if err != nil {
		t.Fatal(err)
	}
	per := map[string][]FactRank{}
	for _, fr := range frs {
		h := hosts[fr.Rank.Rank%len(hosts)]
		fr.Host = h
		per[h] = append(per[h], fr)
	}
	var out []NodeAnswer
	for _, h := range hosts {
		d := nf
		d.Host, d.Classes, d.RankCount = h, groupFacts(per[h], h), len(per[h])
		out = append(out, NodeAnswer{Host: h, Facts: []NodeFacts{roundTrip(t, d)}})
	}
	return out
}

// roundTrip writes and reads nf back, as the fan-out does.
func roundTrip(t *testing.T, nf NodeFacts) NodeFacts {
	t.Helper()
	var b bytes.Buffer
	if err := WriteNodeFacts(&b, nf); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b.Bytes(), []byte("\n")); n != 1 {
		t.Fatalf("node facts on %d lines, want 1", n)
	}
	docs, err := ReadNodeFacts(&b)
	if err != nil || len(docs) != 1 {
		t.Fatalf("read back: %d documents, %v", len(docs), err)
	}
	return docs[0]
}

const factsWindow = time.Second

func TestMergeOneNodeIsStatus(t *testing.T) {
	for _, name := range []string{"ring_ssend_cycle", "any_source_barrier_knot", "missing_barrier_finalize", "missing_barrier_recv", "split_of_split_recv"} {
		t.Run(name, func(t *testing.T) {
			nf, want := readFacts(t, name)
			m := Merge([]string{nf.Host}, []NodeAnswer{{Host: nf.Host, Facts: []NodeFacts{nf}}}, factsWindow)
			if m.Report.Verdict != want {
				t.Errorf("merged verdict\n%s\nwant status's\n%s", m.Report.Verdict, want)
			}
			if len(m.Missing) != 0 || len(m.Notes) != 0 || len(m.Answered) != 1 {
				t.Errorf("missing %v, notes %v, answered %v", m.Missing, m.Notes, m.Answered)
			}
		})
	}
}

func TestMergeTwoNodes(t *testing.T) {
	for _, tc := range []struct {
		name, across string
	}{
		// A cycle and a knot through both nodes name each rank's host.
		{"ring_ssend_cycle", "; cycle across nodes: ranks 0,2 on n1, ranks 1,3 on n2"},
		{"any_source_barrier_knot", "; knot across 2 nodes: ranks 0,2 on n1, rank 1 on n2"},
		{"missing_barrier_recv", "; knot across 2 nodes: ranks 0,2 on n1, rank 1 on n2"},
		// No cycle or knot: the verdict is the one node's.
		{"missing_barrier_finalize", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nf, want := readFacts(t, tc.name)
			m := Merge([]string{"n1", "n2"}, split(t, nf, "n1", "n2"), factsWindow)
			if m.Report.Verdict != want+tc.across {
				t.Errorf("verdict\n%s\nwant\n%s", m.Report.Verdict, want+tc.across)
			}
			for _, fr := range m.Ranks {
				if want := []string{"n1", "n2"}[fr.Rank.Rank%2]; fr.Host != want {
					t.Errorf("rank %d on %s, want %s", fr.Rank.Rank, fr.Host, want)
				}
			}
		})
	}
}

func TestMergeMissingNodes(t *testing.T) {
	nf, _ := readFacts(t, "ring_ssend_cycle")
	answers := split(t, nf, "n1", "n2")
	bad := answers[1].Facts[0]
	bad.Classes[0].PIDs = bad.Classes[0].PIDs[:0]
	for _, tc := range []struct {
		name   string
		n2     NodeAnswer
		reason string
	}{
		{"failed", NodeAnswer{Host: "n2", Err: "exit status 255: ssh: connect to host n2 port 22: No route to host"}, "exit status 255: ssh: connect to host n2 port 22: No route to host"},
		{"timeout", NodeAnswer{Host: "n2", Err: "no answer within 6.0 s (the timeout: raise --fanout-timeout)"}, "no answer within 6.0 s"},
		{"silent", NodeAnswer{Host: "n2"}, "no node-facts document came from it"},
		{"bad facts", NodeAnswer{Host: "n2", Facts: []NodeFacts{bad}}, "its node facts are unusable: class 0: 1 ranks but 0 pids"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Merge([]string{"n1", "n2"}, []NodeAnswer{answers[0], tc.n2}, factsWindow)
			prefix := "partial: 1 of 2 nodes did not answer (n2: " + tc.reason
			if !strings.HasPrefix(m.Report.Verdict, prefix) {
				t.Errorf("verdict %q, want it to start %q", m.Report.Verdict, prefix)
			}
			// n1's ranks wait for n2's, which are not observed: no
			// cycle is claimed, and the missing ranks are counted.
			if len(m.Report.Cycles) != 0 || !strings.Contains(m.Report.Verdict, "2 of 4 ranks of WORLD are not observed here (ranks 1,3)") {
				t.Errorf("verdict %q: want no cycle and ranks 1,3 not observed", m.Report.Verdict)
			}
			if len(m.Missing) != 1 || m.Missing[0].Host != "n2" {
				t.Errorf("missing %v, want n2", m.Missing)
			}
		})
	}
}

func TestMergeDuplicates(t *testing.T) {
	nf, want := readFacts(t, "ring_ssend_cycle")
	other := split(t, nf, "n2")[0]
	for i := range other.Facts[0].Classes {
		for j := range other.Facts[0].Classes[i].PIDs {
			other.Facts[0].Classes[i].PIDs[j] += 1000
		}
	}
	for _, tc := range []struct {
		name    string
		answers []NodeAnswer
		note    string
	}{
		{"same node twice", []NodeAnswer{{Host: "n1", Facts: []NodeFacts{nf}}, {Host: "n2", Facts: []NodeFacts{nf}}},
			"ranks 0-3 are claimed by both n1 and n2: both are the same node (the same host name and pids): list it once in --hosts; the verdict uses n1's"},
		{"two jobs", []NodeAnswer{{Host: "n1", Facts: []NodeFacts{nf}}, other},
			"ranks 0-3 are claimed by both n1 and n2: two jobs share this job id on those nodes: give the job's own id (mpiprobe ps on each node); the verdict uses n1's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Merge([]string{"n1", "n2"}, tc.answers, factsWindow)
			if len(m.Notes) != 1 || m.Notes[0] != tc.note {
				t.Errorf("notes %q, want one: %q", m.Notes, tc.note)
			}
			if m.Report.Verdict != want {
				t.Errorf("verdict %q, want n1's alone %q", m.Report.Verdict, want)
			}
		})
	}
}

// A launcher that runs the node command on every node at once prints
// the documents one after the other, and may miss nodes.
func TestMergeOneRunForAll(t *testing.T) {
	nf, want := readFacts(t, "ring_ssend_cycle")
	var stream bytes.Buffer
	for _, a := range split(t, nf, "n1.cluster", "n2") {
		if err := WriteNodeFacts(&stream, a.Facts[0]); err != nil {
			t.Fatal(err)
		}
	}
	stream.WriteString("{\"schema_version\":1,\"kind\":\"node_fa\n") // a node's output cut short
	docs, err := ReadNodeFacts(&stream)
	if len(docs) != 2 || err == nil || !strings.Contains(err.Error(), "document 3: not node facts") {
		t.Fatalf("%d documents, error %v; want 2 and document 3 named", len(docs), err)
	}
	m := Merge([]string{"n1", "n2", "n3"}, []NodeAnswer{{Facts: docs, Err: "srun: error: n3: task 2: Exited with exit code 1"}}, factsWindow)
	prefix := "partial: 1 of 3 nodes did not answer (n3: srun: error: n3: task 2: Exited with exit code 1): deadlock cycle: "
	if !strings.HasPrefix(m.Report.Verdict, prefix) || !strings.HasSuffix(m.Report.Verdict, "; cycle across nodes: ranks 0,2 on n1, ranks 1,3 on n2") {
		t.Errorf("verdict %q, want it to start %q and name n1 (asked for n1.cluster) and n2", m.Report.Verdict, prefix)
	}
	if strings.TrimPrefix(strings.TrimSuffix(m.Report.Verdict, "; cycle across nodes: ranks 0,2 on n1, ranks 1,3 on n2"), strings.SplitN(prefix, ": deadlock", 2)[0]+": ") != want {
		t.Errorf("verdict %q, want the one node's %q inside", m.Report.Verdict, want)
	}
}

func TestNodeFactsClasses(t *testing.T) {
	nf, _ := readFacts(t, "missing_barrier_finalize")
	if len(nf.Classes) != 2 || len(nf.Classes[0].PIDs) != 3 || nf.Classes[0].Ranks[0] != [2]int{0, 2} || nf.Classes[0].SinceSeconds == nil {
		t.Fatalf("classes %+v: want ranks 0-2 in one class, 3 in another", nf.Classes)
	}
	frs, err := nf.Expand()
	if err != nil {
		t.Fatal(err)
	}
	again := groupFacts(frs, nf.Host)
	var a, b bytes.Buffer
	_ = WriteNodeFacts(&a, nf)
	nf.Classes = again
	_ = WriteNodeFacts(&b, nf)
	if a.String() != b.String() {
		t.Errorf("expanded and grouped again:\n%s\nwant\n%s", b.String(), a.String())
	}
}

// A peer known only by its rank in a communicator (as when the library
// gives no WORLD rank) is resolved across nodes: rank 2 on n1 receives
// from rank 0 of comm 4, which is rank 3, on n2.
func TestMergeResolvesCommPeersAcrossNodes(t *testing.T) {
	nf, want := readFacts(t, "split_of_split_recv")
	for i := range nf.Classes {
		c := nf.Classes[i].Call
		if c == nil || len(c.Waits) != 1 || c.Name != "MPI_Recv" {
			continue
		}
		// The peer as its rank in comm 4 only: 3 is rank 0 there, 2 rank 1.
		w := c.Waits[0]
		w.CommPeer, w.Peer = map[int]int{3: 0, 2: 1}[w.Peer], -1
		c.Waits = []hang.Wait{w}
		c.Peer = -1
	}
	m := Merge([]string{"n1", "n2"}, split(t, nf, "n1", "n2"), factsWindow)
	if !strings.HasPrefix(m.Report.Verdict, "deadlock cycle: rank 2 waits for 3 (MPI_Recv tag 21 on comm 4 (size 2) at main+0xc8), rank 3 waits for 2 ") ||
		!strings.Contains(m.Report.Verdict, "cycle across nodes: rank 2 on n1, rank 3 on n2") {
		t.Errorf("verdict %q\nwant the cycle of ranks 2 and 3 across n1 and n2, as on one node:\n%s", m.Report.Verdict, want)
	}
}
