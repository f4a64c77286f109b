package report

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/atomicfile"
	"github.com/mpiprobe/mpiprobe/internal/hostlist"
	"github.com/mpiprobe/mpiprobe/internal/jobstore"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// KindPart is the kind of a node's part of a job in a shared directory
// (jobstore.Shared): not a --json output, a file the agents write and
// `mpiprobe report --shared-dir` reads (docs/json.md).
const KindPart = "job_part"

// maxPart bounds the size of a part ReadPart reads.
const maxPart = 64 << 20

// Part is one node's part of a job's summary.
type Part struct {
	// Node is the node that wrote it, Job the job's key (jobstore.Key).
	Node, Job string
	// Written is when it was written; Final says that the job had ended
	// on the node then (otherwise it was a periodic write while it ran).
	Written time.Time
	Final   bool
	// NodeList is the job's node list as the ranks' launcher gave it, in
	// its compact form (Slurm's "n[1-3,5]", package hostlist), "" when it
	// gave none; NodeListFrom names where it came from, e.g.
	// "SLURM_STEP_NODELIST". Compact, a part stays small on a job of many
	// nodes, and a merge expands each distinct list once.
	NodeList     string
	NodeListFrom string
	// Summary is the node's summary of the job: its ranks, pids, hosts and
	// counts.
	Summary agg.Summary
}

// jsonPart is the part document.
type jsonPart struct {
	Envelope
	Node         string          `json:"node"`
	Job          string          `json:"job"`
	Written      time.Time       `json:"written"`
	Final        bool            `json:"final"`
	NodeList     string          `json:"node_list"`
	NodeListFrom string          `json:"node_list_from"`
	Summary      json.RawMessage `json:"summary"`
}

// WritePart writes p as one JSON document of kind "job_part": node, job,
// written, final, node_list (compact, "" when unknown), node_list_from and summary
// (a summary document, as WriteJSON writes it).
func WritePart(w io.Writer, p Part) error {
	var sum bytes.Buffer
	if err := WriteJSON(&sum, p.Summary); err != nil {
		return err
	}
	doc := jsonPart{Envelope: NewEnvelope(KindPart), Node: p.Node, Job: p.Job, Written: p.Written, Final: p.Final,
		NodeList: p.NodeList, NodeListFrom: p.NodeListFrom, Summary: sum.Bytes()}
	return EncodeJSON(w, doc, "job part")
}

// ReadPart reads a part WritePart wrote. It refuses, in one line, what is
// not one: another document, a later schema, no node or job, a summary
// that does not read or holds another job than the part's.
func ReadPart(r io.Reader) (Part, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxPart+1))
	if err != nil {
		return Part{}, fmt.Errorf("report: read part: %w", err)
	}
	if len(data) > maxPart {
		return Part{}, fmt.Errorf("report: read part: larger than %d MiB", maxPart>>20)
	}
	var doc jsonPart
	if err := json.Unmarshal(data, &doc); err != nil {
		err := decodeErr(err) // worded for summaries: say part
		return Part{}, errors.New(strings.Replace(err.Error(), "read summary", "read part", 1))
	}
	switch {
	case doc.SchemaVersion > SchemaVersion:
		return Part{}, fmt.Errorf("report: read part: schema_version %d is newer than this mpiprobe reads (%d); use a later mpiprobe", doc.SchemaVersion, SchemaVersion)
	case doc.Kind != KindPart || doc.SchemaVersion < 1:
		return Part{}, fmt.Errorf("report: read part: not a job part (kind %s, schema_version %d)", text.Quote(doc.Kind), doc.SchemaVersion)
	case doc.Node == "" || doc.Job == "":
		return Part{}, errors.New("report: read part: no node or no job")
	case len(doc.Summary) == 0:
		return Part{}, errors.New("report: read part: no summary")
	}
	sum, err := ReadJSON(bytes.NewReader(doc.Summary))
	if err != nil {
		return Part{}, fmt.Errorf("report: read part: %w", err)
	}
	if len(sum.Jobs) != 1 {
		return Part{}, fmt.Errorf("report: read part: its summary holds %d jobs, not one", len(sum.Jobs))
	}
	if id := sum.Jobs[0].ID; jobstore.Key(id) != doc.Job {
		return Part{}, fmt.Errorf("report: read part: its summary is of job %s, not %s", text.Quote(id), text.Quote(doc.Job))
	}
	return Part{Node: doc.Node, Job: doc.Job, Written: doc.Written, Final: doc.Final,
		NodeList: doc.NodeList, NodeListFrom: doc.NodeListFrom, Summary: sum}, nil
}

// PartInfo is what a merged summary says of one part it took.
type PartInfo struct {
	Node, Job, File string
	Written         time.Time
	Final           bool
	Ranks           int
}

// Skipped is a part file that was not taken, and why.
type Skipped struct {
	File, Err string
}

// SharedSummary is a job merged from its nodes' parts.
type SharedSummary struct {
	// Summary holds the merged job (one agg.Job per job key: the steps
	// of a Slurm job asked for by its bare id).
	Summary agg.Summary
	// Notes are agg.Merge's notes.
	Notes []string
	// Parts are the parts taken, by job and node; Skipped those not.
	Parts   []PartInfo
	Skipped []Skipped
	// NodeList is the job's node list as the parts say (their union, in
	// order), nil when none said one; NodeListFrom where it came from.
	NodeList     []string
	NodeListFrom string
	// Missing are the nodes of NodeList without a part.
	Missing []string
	// Partial is set when a node is missing or a part was written while
	// the job still ran on its node.
	Partial bool
}

// MergeParts merges parts into one summary of their jobs. A node's part
// given more than once (a periodic write, then the final one; a copy)
// counts once: the latest written wins, a final one on a tie. The nodes
// of the node list without a part are Missing. files, when not nil, are
// the parts' files, for PartInfo.
func MergeParts(parts []Part, files []string) (SharedSummary, error) {
	var out SharedSummary
	if len(parts) == 0 {
		return out, errors.New("report: merge parts: no parts")
	}
	latest := map[[2]string]int{} // job, node -> index in parts
	for i, p := range parts {
		k := [2]string{p.Job, p.Node}
		at, ok := latest[k]
		if !ok || p.Written.After(parts[at].Written) || (p.Written.Equal(parts[at].Written) && p.Final && !parts[at].Final) {
			latest[k] = i
		}
	}
	idx := make([]int, 0, len(latest))
	for _, i := range latest {
		idx = append(idx, i)
	}
	slices.SortFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(parts[a].Job, parts[b].Job), cmp.Compare(parts[a].Node, parts[b].Node))
	})
	byJob := map[string][]agg.Summary{}
	var jobs []string
	listed := map[string]bool{}
	expanded := map[string][]string{} // each distinct node list, expanded once
	wrote := map[string]bool{}        // the nodes with a part, by name and by first label
	for _, i := range idx {
		p := parts[i]
		if _, ok := byJob[p.Job]; !ok {
			jobs = append(jobs, p.Job)
		}
		byJob[p.Job] = append(byJob[p.Job], p.Summary)
		info := PartInfo{Node: p.Node, Job: p.Job, Written: p.Written, Final: p.Final}
		if files != nil {
			info.File = files[i]
		}
		for _, j := range p.Summary.Jobs {
			info.Ranks += len(j.Ranks)
		}
		out.Parts = append(out.Parts, info)
		out.Partial = out.Partial || !p.Final
		wrote[p.Node], wrote[firstLabel(p.Node)] = true, true
		names, ok := expanded[p.NodeList]
		if !ok && p.NodeList != "" {
			var err error
			if names, err = hostlist.Expand(p.NodeList); err != nil {
				out.Notes = append(out.Notes, fmt.Sprintf("the node list of %s's part does not read (%v): its nodes cannot be named missing", text.Quote(p.Node), err))
			}
			expanded[p.NodeList] = names
		}
		for _, n := range names {
			if !listed[n] {
				listed[n] = true
				out.NodeList = append(out.NodeList, n)
			}
		}
		if out.NodeListFrom == "" {
			out.NodeListFrom = p.NodeListFrom
		}
	}
	for _, n := range out.NodeList {
		if !wrote[n] && !wrote[firstLabel(n)] {
			out.Missing = append(out.Missing, n)
		}
	}
	out.Partial = out.Partial || len(out.Missing) > 0
	for _, job := range jobs {
		m, notes, err := agg.Merge(byJob[job], "")
		if err != nil {
			return SharedSummary{}, fmt.Errorf("report: merge the parts of job %s: %w", text.Quote(job), err)
		}
		out.Notes = append(out.Notes, notes...)
		out.Summary = joinJobs(out.Summary, m)
	}
	return out, nil
}

// joinJobs adds the merged summary of one job to out, which holds other
// jobs' (the steps of one Slurm job): hosts joined, interval widened, the
// drops, which are each node's agent's and so the same in every step, kept
// at their largest.
func joinJobs(out, m agg.Summary) agg.Summary {
	if out.Jobs == nil {
		return m
	}
	hosts := strings.Split(out.Host, ",")
	for _, h := range strings.Split(m.Host, ",") {
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	slices.Sort(hosts)
	out.Host = strings.Join(hosts, ",")
	out.Start, out.End = agg.Earliest(out.Start, m.Start), agg.Latest(out.End, m.End)
	out.Jobs = append(out.Jobs, m.Jobs...)
	for _, d := range m.Dropped {
		i := slices.IndexFunc(out.Dropped, func(o agg.Drop) bool { return o.What == d.What })
		if i < 0 {
			out.Dropped = append(out.Dropped, d)
		} else if d.Count > out.Dropped[i].Count {
			out.Dropped[i].Count = d.Count
		}
	}
	return out
}

// firstLabel is a host name's first label: "n1" of "n1.cluster". A node
// of the node list and a part's node are one node when they are equal or
// one's first label is the other's.
func firstLabel(host string) string {
	h, _, _ := strings.Cut(host, ".")
	return h
}

// JobsOf returns the jobs of shared that job names: the job whose key is
// jobstore.Key(job), and the jobs "job.STEP" (the steps of a Slurm job
// given by its bare id).
func JobsOf(shared jobstore.Shared, job string) ([]string, error) {
	all, err := shared.Jobs()
	if err != nil {
		return nil, err
	}
	key := jobstore.Key(job)
	var out []string
	for _, k := range all {
		if k == key || strings.HasPrefix(k, job+".") {
			out = append(out, k)
		}
	}
	return out, nil
}

// ReadShared reads and merges the parts of job in shared (see JobsOf and
// MergeParts). A part that cannot be read, or that names another job or
// node than its file, is Skipped; it is an error only when no part is
// left.
func ReadShared(ctx context.Context, shared jobstore.Shared, job string) (SharedSummary, error) {
	keys, err := JobsOf(shared, job)
	if err != nil {
		return SharedSummary{}, err
	}
	var (
		parts   []Part
		files   []string
		skipped []Skipped
	)
	for _, key := range keys {
		paths, err := shared.Parts(key)
		if err != nil {
			return SharedSummary{}, err
		}
		for _, f := range paths {
			if err := ctx.Err(); err != nil {
				return SharedSummary{}, err
			}
			p, err := readPartFile(f)
			if err == nil && (p.Job != key || shared.PartPath(p.Job, p.Node) != f) {
				err = fmt.Errorf("it is the part of node %s for job %s, which is not this file's", text.Quote(p.Node), text.Quote(p.Job))
			}
			if err != nil {
				skipped = append(skipped, Skipped{File: f, Err: text.Line(err.Error())})
				continue
			}
			parts, files = append(parts, p), append(files, f)
		}
	}
	if len(parts) == 0 {
		why := "no node wrote a part of it (is the agents' --shared-dir / shared_dir this directory?)"
		if len(skipped) > 0 {
			why = fmt.Sprintf("none of its %d parts reads: %s: %s", len(skipped), skipped[0].File, skipped[0].Err)
		}
		return SharedSummary{}, fmt.Errorf("job %s in %s: %s", text.Quote(job), shared.Dir, why)
	}
	out, err := MergeParts(parts, files)
	out.Skipped = skipped
	return out, err
}

// readPartFile reads one part's file, a symbolic link not followed.
func readPartFile(path string) (Part, error) {
	data, err := atomicfile.ReadFile(path)
	if err != nil {
		return Part{}, err
	}
	return ReadPart(bytes.NewReader(data))
}
