package report

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/text"
)

// WriteShared writes a job merged from its nodes' parts: the summary as
// WriteTable writes it, then "Parts:" with a row per part taken (NODE,
// JOB, RANKS, WRITTEN, FINAL), then one line on the node list: the nodes
// missing and that the summary is partial, or that no launcher gave the
// node list (mpirun, hydra) so that missing nodes cannot be named.
func WriteShared(w io.Writer, ss SharedSummary) error {
	var buf bytes.Buffer
	if err := WriteTable(&buf, ss.Summary); err != nil {
		return err
	}
	cells := make([][]string, 0, len(ss.Parts))
	for _, p := range ss.Parts {
		final := "yes"
		if !p.Final {
			final = "no: the job ran"
		}
		cells = append(cells, []string{text.Quote(p.Node), text.Quote(p.Job), strconv.Itoa(p.Ranks), jobClock(p.Written), final})
	}
	buf.WriteString("\nParts:\n")
	if err := text.Table(&buf, []string{"NODE", "JOB", "RANKS", "WRITTEN", "FINAL"}, cells, 2); err != nil {
		return fmt.Errorf("report: write parts: %w", err)
	}
	buf.WriteString(sharedVerdict(ss) + "\n")
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("report: write parts: %w", err)
	}
	return nil
}

// sharedVerdict says in one line whether the merged summary is whole.
func sharedVerdict(ss SharedSummary) string {
	var notFinal, missing []string
	for _, p := range ss.Parts {
		if !p.Final {
			notFinal = append(notFinal, text.Quote(p.Node))
		}
	}
	for _, n := range ss.Missing {
		missing = append(missing, text.Quote(n))
	}
	var s string
	switch {
	case ss.NodeList == nil:
		s = fmt.Sprintf("Node list unknown (no launcher gave one: mpirun and hydra do not): %d node(s) wrote a part; missing nodes cannot be named", len(ss.Parts))
	case len(ss.Missing) > 0:
		s = fmt.Sprintf("PARTIAL: %d of the %d nodes of the job's node list (%s) wrote no part: %s", len(ss.Missing), len(ss.NodeList), ss.NodeListFrom, strings.Join(missing, ", "))
	default:
		s = fmt.Sprintf("All %d nodes of the job's node list (%s) wrote a part", len(ss.NodeList), ss.NodeListFrom)
	}
	if len(notFinal) > 0 {
		s += fmt.Sprintf("; PARTIAL: the part of %s was written while the job ran there", strings.Join(notFinal, ", "))
	}
	return s
}

// The "shared" object of a summary merged from parts (docs/json.md).
type (
	jsonSharedSummary struct {
		jsonSummary
		Shared jsonShared `json:"shared"`
	}
	jsonShared struct {
		Partial      bool           `json:"partial"`
		NodeList     []string       `json:"node_list"`
		NodeListFrom string         `json:"node_list_from"`
		Missing      []string       `json:"missing_nodes"`
		Parts        []jsonPartInfo `json:"parts"`
		Skipped      []jsonSkipped  `json:"skipped"`
	}
	jsonPartInfo struct {
		Node      string    `json:"node"`
		Job       string    `json:"job"`
		File      string    `json:"file"`
		Written   time.Time `json:"written"`
		Final     bool      `json:"final"`
		RankCount int       `json:"rank_count"`
	}
	jsonSkipped struct {
		File  string `json:"file"`
		Error string `json:"error"`
	}
)

// WriteSharedJSON writes a job merged from its nodes' parts as the summary
// document WriteJSON writes, with an object "shared": partial, node_list
// ([] when unknown), node_list_from, missing_nodes, parts (node, job,
// file, written, final, rank_count) and skipped (file, error).
func WriteSharedJSON(w io.Writer, ss SharedSummary) error {
	doc := jsonSharedSummary{jsonSummary: toJSON(ss.Summary), Shared: jsonShared{
		Partial: ss.Partial, NodeList: append([]string{}, ss.NodeList...), NodeListFrom: ss.NodeListFrom,
		Missing: append([]string{}, ss.Missing...), Parts: make([]jsonPartInfo, 0, len(ss.Parts)), Skipped: make([]jsonSkipped, 0, len(ss.Skipped)),
	}}
	for _, p := range ss.Parts {
		doc.Shared.Parts = append(doc.Shared.Parts, jsonPartInfo{Node: p.Node, Job: p.Job, File: p.File, Written: p.Written, Final: p.Final, RankCount: p.Ranks})
	}
	for _, s := range ss.Skipped {
		doc.Shared.Skipped = append(doc.Shared.Skipped, jsonSkipped{File: s.File, Error: s.Err})
	}
	return EncodeJSON(w, doc, "summary")
}
