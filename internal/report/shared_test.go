package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/jobstore"
)

// nodePart is node's part of job with one rank per pid, rank = first+i,
// each with count sends queued as pending.
func nodePart(node, job string, written time.Time, final bool, list string, first int, counts ...uint64) Part {
	var procs []agg.Proc
	var samples []agg.Sample
	end := agg.End{Kind: agg.Running}
	if final {
		end = agg.End{Kind: agg.Exited, At: written}
	}
	for i, c := range counts {
		pid := 1000 + first + i
		procs = append(procs, agg.Proc{PID: pid, Comm: "flood", End: end,
			Identity: identity.Identity{Host: node, Job: job, Rank: strconv.Itoa(first + i), Size: "6"}})
		samples = append(samples, agg.Sample{PID: uint32(pid), Event: "ob1.send_pending.new", Count: c, First: t0, Last: written})
	}
	p := Part{Node: node, Job: job, Written: written, Final: final, NodeList: list,
		Summary: agg.Build(node, t0, written, procs, samples, catalog, nil)}
	if list != "" {
		p.NodeListFrom = "SLURM_STEP_NODELIST"
	}
	return p
}

// saveParts writes parts into a shared directory as the agents do.
func saveParts(t testing.TB, sh jobstore.Shared, parts ...Part) {
	t.Helper()
	for _, p := range parts {
		var buf bytes.Buffer
		if err := WritePart(&buf, p); err != nil {
			t.Fatal(err)
		}
		if err := sh.SavePart(p.Job, p.Node, buf.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
}

// rankCounts is each merged rank's "host/rank/pid" with its count.
func rankCounts(s agg.Summary) map[string]uint64 {
	out := map[string]uint64{}
	for _, j := range s.Jobs {
		for _, r := range j.Ranks {
			var n uint64
			for _, e := range r.Events {
				n += e.Count
			}
			out[j.ID+" "+r.Host+"/"+r.Rank+"/"+strconv.Itoa(r.PID)] = n
		}
	}
	return out
}

func TestMergeParts(t *testing.T) {
	list, all := "n[1-4]", []string{"n1", "n2", "n3", "n4"}
	w := at(5000)
	for _, tc := range []struct {
		name    string
		parts   []Part
		want    map[string]uint64
		missing []string
		partial bool
		list    []string
		notes   int
	}{{
		name: "three of four nodes, one written twice",
		parts: []Part{
			nodePart("n1", "7.0", w, true, list, 0, 10, 20),
			nodePart("n2", "7.0", at(1000), false, list, 2, 1, 1), // periodic...
			nodePart("n2", "7.0", w, true, list, 2, 30, 40),       // ...then final: the latest wins
			nodePart("n3", "7.0", w, true, list, 4, 50, 60),
		},
		want: map[string]uint64{"7.0 n1/0/1000": 10, "7.0 n1/1/1001": 20, "7.0 n2/2/1002": 30, "7.0 n2/3/1003": 40,
			"7.0 n3/4/1004": 50, "7.0 n3/5/1005": 60},
		missing: []string{"n4"}, partial: true, list: all,
	}, {
		name:  "the final part given first",
		parts: []Part{nodePart("n2", "7.0", w, true, "n2", 2, 30), nodePart("n2", "7.0", at(1000), false, "n2", 2, 1)},
		want:  map[string]uint64{"7.0 n2/2/1002": 30}, list: all[1:2],
	}, {
		name:  "a part while the job runs",
		parts: []Part{nodePart("n1", "7.0", w, true, "n[1-2]", 0, 1), nodePart("n2.cluster", "7.0", w, false, "n[1-2]", 1, 2)},
		want:  map[string]uint64{"7.0 n1/0/1000": 1, "7.0 n2.cluster/1/1001": 2}, partial: true, list: all[:2],
	}, {
		name:  "no node list (mpirun)",
		parts: []Part{nodePart("a", "1417805825", w, true, "", 0, 3), nodePart("b", "1417805825", w, true, "", 1, 4)},
		want:  map[string]uint64{"1417805825 a/0/1000": 3, "1417805825 b/1/1001": 4},
	}, {
		name:  "a node list that does not read",
		parts: []Part{nodePart("a", "9.0", w, true, "n[1-", 0, 3)},
		want:  map[string]uint64{"9.0 a/0/1000": 3}, notes: 1,
	}, {
		name:  "two steps of one Slurm job",
		parts: []Part{nodePart("n1", "7.0", w, true, "n1", 0, 5), nodePart("n1", "7.1", w, true, "n1", 0, 6)},
		want:  map[string]uint64{"7.0 n1/0/1000": 5, "7.1 n1/0/1000": 6}, list: all[:1],
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ss, err := MergeParts(tc.parts, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := rankCounts(ss.Summary); !mapsEqual(got, tc.want) {
				t.Errorf("ranks and counts %v, want %v", got, tc.want)
			}
			var sum uint64
			for _, want := range tc.want {
				sum += want
			}
			var total uint64
			for _, e := range ss.Summary.Totals() {
				total += e.Count
			}
			if total != sum {
				t.Errorf("totals %d, want %d", total, sum)
			}
			if !slices.Equal(ss.Missing, tc.missing) || ss.Partial != tc.partial || !slices.Equal(ss.NodeList, tc.list) || len(ss.Notes) != tc.notes {
				t.Errorf("missing %q partial %v list %q notes %q; want %q %v %q, %d notes", ss.Missing, ss.Partial, ss.NodeList, ss.Notes, tc.missing, tc.partial, tc.list, tc.notes)
			}
		})
	}
}

func mapsEqual(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestReadShared: three nodes' parts of a job in a shared directory, one
// node of its list missing, a node's part rewritten (periodic, then
// final), a corrupt part and a part of another job: the corrupt one is
// named and skipped, the other job's does not mix in, and the table and
// the JSON say the summary is partial.
func TestReadShared(t *testing.T) {
	sh := jobstore.Shared{Dir: t.TempDir()}
	list := "n[1-4]"
	saveParts(t, sh,
		nodePart("n1", "7.0", at(5000), true, list, 0, 10, 20),
		nodePart("n2", "7.0", at(1000), false, list, 2, 1, 1),
		nodePart("n2", "7.0", at(5000), true, list, 2, 30, 40), // rewritten: replaces the one above
		nodePart("n1", "8.0", at(5000), true, list, 0, 999),    // another job
		nodePart("n1", "70.0", at(5000), true, list, 0, 998),   // and one whose id starts as 7's
	)
	corrupt := sh.PartPath("7.0", "n3")
	if err := os.WriteFile(corrupt, []byte(`{"schema_version":1,"kind":"job_part","node":"n3"`), 0o640); err != nil {
		t.Fatal(err)
	}
	// The merged summary and a temporary file next to the parts are not parts.
	for _, name := range []string{jobstore.SummaryName, ".mpiprobe-x.tmp"} {
		if err := os.WriteFile(filepath.Join(sh.JobDir("7.0"), name), []byte("{}"), 0o640); err != nil {
			t.Fatal(err)
		}
	}

	for _, job := range []string{"7.0", "7"} { // the step, and the bare Slurm job id
		ss, err := ReadShared(context.Background(), sh, job)
		if err != nil {
			t.Fatalf("ReadShared(%s): %v", job, err)
		}
		want := map[string]uint64{"7.0 n1/0/1000": 10, "7.0 n1/1/1001": 20, "7.0 n2/2/1002": 30, "7.0 n2/3/1003": 40}
		if got := rankCounts(ss.Summary); !mapsEqual(got, want) {
			t.Errorf("%s: ranks and counts %v, want %v", job, got, want)
		}
		if len(ss.Skipped) != 1 || ss.Skipped[0].File != corrupt || !strings.Contains(ss.Skipped[0].Err, "unexpected end of JSON input") {
			t.Errorf("%s: skipped %+v, want the corrupt part", job, ss.Skipped)
		}
		if !ss.Partial || !slices.Equal(ss.Missing, []string{"n3", "n4"}) {
			t.Errorf("%s: partial %v missing %q, want n3 and n4 missing", job, ss.Partial, ss.Missing)
		}
		var tbl bytes.Buffer
		if err := WriteShared(&tbl, ss); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(tbl.String(), "PARTIAL: 2 of the 4 nodes of the job's node list (SLURM_STEP_NODELIST) wrote no part: n3, n4") {
			t.Errorf("%s: table:\n%s", job, tbl.String())
		}
		var js bytes.Buffer
		if err := WriteSharedJSON(&js, ss); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Kind   string
			Jobs   []struct{ Ranks []json.RawMessage }
			Shared struct {
				Partial bool
				Missing []string `json:"missing_nodes"`
				Parts   []struct{ Node string }
				Skipped []struct{ File string }
			}
		}
		if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Kind != KindSummary || len(doc.Jobs) != 1 || len(doc.Jobs[0].Ranks) != 4 || !doc.Shared.Partial ||
			len(doc.Shared.Missing) != 2 || len(doc.Shared.Parts) != 2 || len(doc.Shared.Skipped) != 1 {
			t.Errorf("%s: JSON %+v", job, doc)
		}
	}

	if _, err := ReadShared(context.Background(), sh, "9"); err == nil || !strings.Contains(err.Error(), "no node wrote a part") {
		t.Errorf("a job without parts: %v", err)
	}
}

// TestReadSharedMisplaced: a part copied under another node's name is
// not taken as that node's.
func TestReadSharedMisplaced(t *testing.T) {
	sh := jobstore.Shared{Dir: t.TempDir()}
	saveParts(t, sh, nodePart("n1", "7.0", at(5000), true, "", 0, 10))
	data, err := os.ReadFile(sh.PartPath("7.0", "n1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sh.PartPath("7.0", "n2"), data, 0o640); err != nil {
		t.Fatal(err)
	}
	ss, err := ReadShared(context.Background(), sh, "7.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(ss.Parts) != 1 || len(ss.Skipped) != 1 || !strings.Contains(ss.Skipped[0].Err, "not this file's") {
		t.Errorf("parts %+v skipped %+v", ss.Parts, ss.Skipped)
	}
}

func TestPartRoundTrip(t *testing.T) {
	in := nodePart("n1", "7.0", at(5000), true, "n[1-2]", 0, 10, 20)
	var buf bytes.Buffer
	if err := WritePart(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadPart(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := WritePart(&again, out); err != nil {
		t.Fatal(err)
	}
	if buf.String() != again.String() {
		t.Errorf("written again differs:\n%s\nfirst\n%s", again.String(), buf.String())
	}
	for _, bad := range []struct{ doc, err string }{
		{`{"schema_version":1,"kind":"summary","jobs":[]}`, "not a job part"},
		{`{"schema_version":9,"kind":"job_part"}`, "newer than this mpiprobe reads"},
		{`{"schema_version":1,"kind":"job_part","node":"n1"}`, "no node or no job"},
		{`{"schema_version":1,"kind":"job_part","node":"n1","job":"7.0"}`, "no summary"},
		{`{"schema_version":1,"kind":"job_part","node":"n1","job":"7.0","summary":{"schema_version":1,"kind":"summary","jobs":[]}}`, "holds 0 jobs"},
		{strings.Replace(buf.String(), `"job": "7.0"`, `"job": "8.0"`, 1), `is of job 7.0, not 8.0`},
		{`[]`, "read part"},
	} {
		_, err := ReadPart(strings.NewReader(bad.doc))
		if err == nil || !strings.Contains(err.Error(), bad.err) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ReadPart(%.60s): %v, want one line with %q", bad.doc, err, bad.err)
		}
	}
}

func FuzzReadPart(f *testing.F) {
	var buf bytes.Buffer
	if err := WritePart(&buf, nodePart("n1", "7.0", at(5000), true, "n[1-2]", 0, 10, 20)); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"schema_version":1,"kind":"job_part","node":"n1","job":"7.0","summary":{"schema_version":1,"kind":"summary","jobs":[{"job":"7.0","ranks":[]}]}}`))
	f.Add([]byte(`{"schema_version":1,"kind":"job_part"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ReadPart(bytes.NewReader(data))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %q", err)
			}
			return
		}
		if p.Node == "" || p.Job == "" || len(p.Summary.Jobs) != 1 {
			t.Fatalf("read %+v", p)
		}
		// What reads merges.
		if _, err := MergeParts([]Part{p, p}, nil); err != nil {
			t.Fatalf("merge of a part read: %v", err)
		}
	})
}
