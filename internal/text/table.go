package text

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

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
	return FitTable(w, 0, header, rows, right...)
}

// FitTable is Table at most width columns wide (0: as wide as its cells),
// for a terminal: the cells of the widest columns are wrapped, at spaces
// where they have some, onto more lines.
func FitTable(w io.Writer, width int, header []string, rows [][]string, right ...int) error {
	aligns := make([]tw.Align, len(header))
	for i := range aligns {
		aligns[i] = tw.AlignLeft
		if slices.Contains(right, i) {
			aligns[i] = tw.AlignRight
		}
	}
	// Render into a buffer: tablewriter does not report write errors.
	var buf bytes.Buffer
	if width > 0 {
		rows = fitRows(width, header, rows)
	}
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

// minColumn is the narrowest a column is made to fit a table in a width.
const minColumn = 8

// fitRows returns rows with the cells of the widest columns wrapped onto
// more lines, narrowing the widest column one at a time, so that the
// table, borders included, is at most width columns wide where it can
// be: a column is not made narrower than its header or minColumn.
func fitRows(width int, header []string, rows [][]string) [][]string {
	cols := make([]int, len(header))
	floor := make([]int, len(header))
	for i, h := range header {
		cols[i] = utf8.RuneCountInString(h)
		floor[i] = max(minColumn, cols[i])
	}
	for _, r := range rows {
		for i, c := range r {
			if i < len(cols) {
				cols[i] = max(cols[i], utf8.RuneCountInString(c))
			}
		}
	}
	natural := slices.Clone(cols)
	total := func() int {
		n := 3*len(cols) + 1 // "│ " before each cell, " " after, the last "│"
		for _, c := range cols {
			n += c
		}
		return n
	}
	for total() > width {
		widest := -1
		for i, c := range cols {
			if c > floor[i] && (widest < 0 || c > cols[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			break // as narrow as it gets
		}
		cols[widest]--
	}
	out := make([][]string, len(rows))
	for j, r := range rows {
		out[j] = slices.Clone(r)
		for i := range out[j] {
			if i < len(cols) && cols[i] < natural[i] {
				out[j][i] = Wrap(out[j][i], cols[i])
			}
		}
	}
	return out
}

// Wrap breaks s into lines of at most n runes, at the last space that
// keeps a line within n, else in the middle of a word; n <= 0 leaves s as
// it is.
func Wrap(s string, n int) string {
	if n <= 0 {
		return s
	}
	var lines []string
	r := []rune(s)
	for len(r) > n {
		cut := n
		if sp := strings.LastIndex(string(r[:n+1]), " "); sp > 0 {
			cut = utf8.RuneCountInString(string(r[:n+1])[:sp])
		}
		lines = append(lines, strings.TrimRight(string(r[:cut]), " "))
		r = []rune(strings.TrimLeft(string(r[cut:]), " "))
	}
	return strings.Join(append(lines, string(r)), "\n")
}
