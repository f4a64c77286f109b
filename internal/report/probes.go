package report

import (
	"bytes"
	"fmt"
	"io"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/text"
	"github.com/mpiprobe/mpiprobe/probes"
)

// ProbeResult is what `mpiprobe probes` found for one process: every
// catalog entry, attached or unavailable.
type ProbeResult struct {
	PID     int
	Entries []probes.EntryStatus
	// Layouts are the struct layouts the probes read, field by field.
	Layouts []mpiabi.LayoutStatus
}

// WriteProbes writes, per process, the line "pid N: A of M entries
// attached" and a table of its entries (EVENT, LEVEL, LIBRARY, STATUS and
// FILE OR WHY: the file an attached entry is in, with why it is only
// partly attached and where its struct layout came from, or why an entry
// is unavailable), a blank line between processes. The tables are at most
// width columns wide (text.FitTable; 0: as wide as their cells).
func WriteProbes(w io.Writer, results []ProbeResult, width int) error {
	var buf bytes.Buffer
	for i, r := range results {
		if i > 0 {
			buf.WriteString("\n")
		}
		attached := 0
		var rows [][]string
		for _, e := range r.Entries {
			st, why := "unavailable", text.Line(e.Reason)
			if e.Attached {
				attached++
				st, why = "attached", text.Quote(e.File)
				if e.Reason != "" {
					why += " (partly: " + text.Line(e.Reason) + ")"
				}
				if e.Layout != "" {
					why += " (" + text.Line(e.Layout) + ")"
				}
			}
			rows = append(rows, []string{e.Event, string(e.Level), string(e.Library), st, why})
		}
		fmt.Fprintf(&buf, "pid %d: %d of %d entries attached\n", r.PID, attached, len(r.Entries))
		if err := text.FitTable(&buf, width, []string{"EVENT", "LEVEL", "LIBRARY", "STATUS", "FILE OR WHY"}, rows); err != nil {
			return fmt.Errorf("report: write probes: %w", err)
		}
		if err := writeLayouts(&buf, r.Layouts, width); err != nil {
			return fmt.Errorf("report: write probes: %w", err)
		}
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("report: write probes: %w", err)
	}
	return nil
}

// The probes document (kind "probes", docs/json.md).
type (
	jsonProbes struct {
		Envelope
		Processes []jsonProbeProc `json:"processes"`
	}
	jsonProbeProc struct {
		PID           int                   `json:"pid"`
		AttachedCount int                   `json:"attached_count"`
		Entries       []jsonEntry           `json:"entries"`
		Layouts       []mpiabi.LayoutStatus `json:"layouts"`
	}
	jsonEntry struct {
		Event    string `json:"event"`
		Level    string `json:"level"`
		Library  string `json:"library"`
		Attached bool   `json:"attached"`
		File     string `json:"file,omitempty"`
		Reason   string `json:"reason,omitempty"`
		Layout   string `json:"layout,omitempty"`
	}
)

// WriteProbesJSON writes results as one JSON document of kind "probes":
// processes, each with pid, attached_count and entries (event, level,
// library, attached, file, reason, layout).
func WriteProbesJSON(w io.Writer, results []ProbeResult) error {
	doc := jsonProbes{Envelope: NewEnvelope(KindProbes), Processes: make([]jsonProbeProc, 0, len(results))}
	for _, r := range results {
		p := jsonProbeProc{PID: r.PID, Entries: make([]jsonEntry, 0, len(r.Entries)), Layouts: r.Layouts}
		if p.Layouts == nil {
			p.Layouts = []mpiabi.LayoutStatus{}
		}
		for _, e := range r.Entries {
			if e.Attached {
				p.AttachedCount++
			}
			p.Entries = append(p.Entries, jsonEntry{Event: e.Event, Level: string(e.Level), Library: string(e.Library),
				Attached: e.Attached, File: e.File, Reason: e.Reason, Layout: e.Layout})
		}
		doc.Processes = append(doc.Processes, p)
	}
	return EncodeJSON(w, doc, "probes")
}

// writeLayouts writes the layouts as a table of fields (STRUCT, FIELD,
// VALUE, SOURCE, NOTE), after a line per file naming it and, for an
// inference, how long it took.
func writeLayouts(buf *bytes.Buffer, ls []mpiabi.LayoutStatus, width int) error {
	for _, l := range ls {
		head := fmt.Sprintf("%s layout of %s", text.Line(l.Struct), text.Quote(l.File))
		if l.BuildID != "" {
			head += fmt.Sprintf(" (build id %s)", text.Line(l.BuildID))
		}
		if l.TookSeconds > 0 {
			head += fmt.Sprintf(", inferred in %.1f ms", l.TookSeconds*1000)
		}
		fmt.Fprintf(buf, "\n%s\n", text.Wrap(head, width))
		if l.Reason != "" {
			fmt.Fprintf(buf, "%s\n", text.Wrap("  "+text.Line(l.Reason), width))
		}
		if len(l.Fields) == 0 {
			continue
		}
		var rows [][]string
		for _, f := range l.Fields {
			v := fmt.Sprintf("%#x", f.Value)
			if !f.Found() {
				v = "-"
			}
			rows = append(rows, []string{f.Name, v, string(f.How), text.Line(f.Note)})
		}
		if err := text.FitTable(buf, width, []string{"FIELD", "VALUE", "SOURCE", "NOTE"}, rows); err != nil {
			return err
		}
	}
	return nil
}
