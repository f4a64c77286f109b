package status

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadNodeFacts feeds untrusted bytes, as a node (or whatever
// answers in its place) may print them, through the reader, the
// expansion and the merge: none may panic, and the verdict stays one
// line.
func FuzzReadNodeFacts(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "nodefacts", "*.json"))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(append(append([]byte{}, data...), data...))
	}
	f.Add([]byte(`{"schema_version":1,"kind":"node_facts","host":"n1","rank_count":2,"classes":[{"ranks":[[0,1]],"pids":[1,2],"since_seconds":1e300,"call":{"name":"MPI_Recv","peer":-3}}]}`))
	f.Add([]byte(`{"schema_version":1,"kind":"node_facts","host":"n1","rank_count":2,"classes":[{"ranks":[[9223372036854775806,9223372036854775807]],"pids":[1,2],"since_seconds_each":[1,2]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, _ := ReadNodeFacts(bytes.NewReader(data))
		for _, nf := range docs {
			if frs, err := nf.Expand(); err == nil && len(frs) != nf.RankCount {
				t.Fatalf("%d ranks expanded, rank_count %d", len(frs), nf.RankCount)
			}
		}
		m := Merge([]string{"n1", "n2"}, []NodeAnswer{{Facts: docs}}, factsWindow)
		if strings.ContainsAny(m.Report.Verdict, "\n\r") {
			t.Fatalf("verdict on several lines: %q", m.Report.Verdict)
		}
		for _, n := range m.Notes {
			if strings.ContainsAny(n, "\n\r") {
				t.Fatalf("note on several lines: %q", n)
			}
		}
	})
}
