package text

import (
	"bytes"
	"fmt"
	"io"
	"slices"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// Table writes rows under header to w as a boxed table, the style of every
// table mpiprobe prints: box-drawing borders, a rule under the centered
// header, cells left-aligned except in the columns whose indexes right
// lists (counts, amounts), which are right-aligned. Cells are written as
// they are: callers pass strings from outside through Quote or Line first.
// The table is written with a single Write.
func Table(w io.Writer, header []string, rows [][]string, right ...int) error {
	aligns := make([]tw.Align, len(header))
	for i := range aligns {
		aligns[i] = tw.AlignLeft
		if slices.Contains(right, i) {
			aligns[i] = tw.AlignRight
		}
	}
	// Render into a buffer: tablewriter does not report write errors.
	var buf bytes.Buffer
	tbl := tablewriter.NewTable(&buf,
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{Global: tw.AlignLeft, PerColumn: aligns}),
	)
	tbl.Header(header)
	for _, r := range rows {
		if err := tbl.Append(r); err != nil {
			return fmt.Errorf("table: %w", err)
		}
	}
	if err := tbl.Render(); err != nil {
		return fmt.Errorf("table: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}
