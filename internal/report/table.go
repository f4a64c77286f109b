package report

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/ranks"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// clock is how FIRST and LAST are shown, in local time.
const clock = "15:04:05.000"

// noteWidth is where notes below a job's table are wrapped.
const noteWidth = 100

// WriteTable writes s for people. The first line names the host and the
// traced interval. Then, per job:
//
//   - a header line "Job <id> on <host> — N ranks";
//   - an events table with the columns LAYER, RANKS, EVENT, DETAIL, COUNT,
//     PEAK, FIRST, LAST and ADVICE. DETAIL is left out when no event of the
//     job names an instance, PEAK when none carries a peak value. Events are
//     grouped by layer in the order pml, btl, pal, ucx, errors, then other
//     layers alphabetically, then events without a layer under "-"; LAYER is
//     shown on a layer's first row only. Within a layer, (event, detail)
//     pairs are ordered by their total over the job, largest first, then by
//     event id and detail. Ranks whose (event, detail, count, peak) are the
//     same share one row whose RANKS cell is their compact rank set
//     ("0-63", "0,2,5-7"; ranks that are not numbers are shown as "pid N",
//     after the numbers), whose COUNT is what each of them counted, and whose
//     FIRST and LAST are the earliest and the latest of them; such rows are
//     ordered by COUNT descending, then by lowest rank. When one (event,
//     detail) would still take more than 8 rows, they are replaced by a
//     single row for all its ranks with COUNT "min–max per rank, sum S"
//     ("n per rank, sum S" when the counts are equal and only the peaks
//     differ), the highest PEAK and the earliest FIRST and latest LAST.
//     Ranks without any event share a last row with LAYER and EVENT "-" and
//     COUNT 0. ADVICE holds the key "[n]" of the row's note. When a row of
//     the table stands for more than one process, the line "COUNT is per
//     rank: ..." follows the table;
//   - a processes table with the columns RANKS, PIDS and ENDED: ranks whose
//     End.String is the same share a row, rows ordered by lowest rank; PIDS
//     lists their pids in rank order, runs of consecutive pids as "a-b",
//     and after 8 such items "… (+N more)" with N the pids left out;
//   - numbered notes, one per (event, detail) in the events table's order:
//     "[n] event (detail): message" (" (detail)" only when there is one; an
//     event the catalog does not know reads "[n] event (not in the event
//     catalog)"), followed by an indented "Advice: ..." line when there is
//     advice;
//   - when ranks of the job have startup times (agg.Rank.Startup), a section
//     "Startup (MPI_Init, of which modex; MPI_Finalize):" with a row per rank
//     (RANK, PID, ENDED, MPI_INIT, MODEX, FINALIZE; "-" where unknown), what
//     MODEX measured, and, for 4 ranks or more, the rank slowest in MPI_Init
//     against the median;
//   - when collective calls were tracked, a section with the calls per
//     communicator.
//
// After the jobs, "Totals over all ranks:" lists each (event, detail) with
// its count summed over all jobs, largest first ("event (detail)" when the
// detail is set), and a WARNING line follows per dropped-counter entry.
// Details, read from the traced processes, are shown escaped (text.Escape).
// Counts and peaks carry thousands separators; times are local wall clocks
// ("-" when unknown).
func WriteTable(w io.Writer, s agg.Summary) error {
	ew := &errWriter{w: w}
	ew.printf("%s\n", title(s))
	if len(s.Jobs) == 0 {
		ew.printf("\nNo MPI processes were traced.\n")
	}
	for _, j := range s.Jobs {
		ew.printf("\n")
		if err := writeJob(ew, s.Host, j); err != nil {
			return err
		}
	}
	if tot := s.Totals(); len(tot) > 0 {
		ew.printf("\nTotals over all ranks:\n")
		cw := 0
		evw := 0
		for _, t := range tot {
			cw = max(cw, len(thousands(t.Count)))
			evw = max(evw, utf8.RuneCountInString(eventLabel(t.Event, t.Detail)))
		}
		for _, t := range tot {
			line := fmt.Sprintf("  %*s  %-*s", cw, thousands(t.Count), evw, eventLabel(t.Event, t.Detail))
			if t.Message != t.Event {
				line += "  " + text.Escape(t.Message)
			}
			ew.printf("%s\n", strings.TrimRight(line, " "))
		}
	}
	if len(s.Dropped) > 0 {
		ew.printf("\n")
	}
	for _, d := range s.Dropped {
		raise := d.Raise
		if raise == "" {
			raise = "the BPF map size"
		}
		ew.printf("WARNING: %s counter updates dropped (%s): raise %s; the counts above are lower bounds\n",
			thousands(d.Count), d.What, raise)
	}
	if ew.err != nil {
		return fmt.Errorf("report: write table: %w", ew.err)
	}
	return nil
}

// eventLabel names an event and, when set, its instance: "event (detail)",
// the detail escaped as showDetail escapes it.
func eventLabel(event, detail string) string {
	if detail == "" {
		return event
	}
	return event + " (" + showDetail(detail) + ")"
}

// showDetail returns an event's instance name as tables and warning lines
// show it: the name is read from the traced process, so every character
// of it that does not print is escaped (text.Escape); a plain name is
// shown as it is.
func showDetail(detail string) string { return text.Escape(detail) }

// title is the summary's first line.
func title(s agg.Summary) string {
	t := "mpiprobe on " + text.Line(s.Host) // merged summaries join hosts with ","
	if !s.Start.IsZero() && !s.End.IsZero() {
		t += fmt.Sprintf(", %s to %s (%s)", clockOf(s.Start), clockOf(s.End),
			s.End.Sub(s.Start).Round(time.Millisecond))
	}
	return t
}

// perRankLine is written under an events table in which a row stands for
// several ranks.
const perRankLine = "COUNT is per rank: a row for several ranks means each of them counted that many."

// writeJob writes one job's header line, events and processes tables,
// notes, and startup and collectives sections.
func writeJob(ew *errWriter, host string, j agg.Job) error {
	n := len(j.Ranks)
	word := "ranks"
	if n == 1 {
		word = "rank"
	}
	ew.printf("Job %s on %s — %d %s", text.Quote(j.ID), jobHost(host, j), n, word)
	if j.ID == identity.Unknown {
		ew.printf(" (no MPI job identity)")
	}
	ew.printf("\n")

	et := buildEvents(j)
	// Render into a buffer, written at once with the processes table.
	var buf bytes.Buffer
	if err := renderEvents(&buf, et); err != nil {
		return fmt.Errorf("report: job %s: %w", j.ID, err)
	}
	if et.perRank {
		buf.WriteString(perRankLine + "\n")
	}
	if err := renderProcs(&buf, j); err != nil {
		return fmt.Errorf("report: job %s: %w", j.ID, err)
	}
	ew.write(buf.Bytes())

	for i, e := range et.notes {
		head := "[" + strconv.Itoa(i+1) + "] " + eventLabel(e.Event, e.Detail)
		if e.Message != e.Event {
			head += ": " + text.Escape(e.Message)
		} else {
			head += " (not in the event catalog)"
		}
		ew.printf("%s\n", wrap(head, "", "    ", noteWidth))
		if e.Advice != "" {
			ew.printf("%s\n", wrap("Advice: "+text.Escape(e.Advice), "    ", "    ", noteWidth))
		}
	}
	writeStartup(ew, j)
	writeCollectives(ew, j)
	return nil
}

// maxRowsPerEvent is how many rows one (event, detail) may take in a job's
// events table; beyond it they become one summary row.
const maxRowsPerEvent = 8

// maxPIDItems is how many pids or pid runs a PIDS cell lists.
const maxPIDItems = 8

// layerOrder is the order of the known layers in the events table.
var layerOrder = []string{"pml", "btl", "pal", "ucx", "errors"}

// compareLayers orders layers as layerOrder, then other layers
// alphabetically, then the empty layer.
func compareLayers(a, b string) int {
	rank := func(l string) int {
		if i := slices.Index(layerOrder, l); i >= 0 {
			return i
		}
		if l == "" {
			return len(layerOrder) + 1
		}
		return len(layerOrder)
	}
	if c := cmp.Compare(rank(a), rank(b)); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

// member is one process of a job as the tables name it.
type member struct {
	rank string
	pid  int
}

// number returns the member's rank as a number when it is one, written
// the canonical way ("7", not "07" or "+7").
func (m member) number() (int, bool) {
	n, err := strconv.Atoi(m.rank)
	if err != nil || n < 0 || strconv.Itoa(n) != m.rank {
		return 0, false
	}
	return n, true
}

// compareMembers orders numeric ranks numerically before the others, which
// are ordered by pid.
func compareMembers(a, b member) int {
	an, aok := a.number()
	bn, bok := b.number()
	switch {
	case aok && bok:
		if c := cmp.Compare(an, bn); c != 0 {
			return c
		}
	case aok:
		return -1
	case bok:
		return 1
	}
	return cmp.Compare(a.pid, b.pid)
}

// rankSet formats the ranks of ms compactly: numeric ranks sorted, runs of
// consecutive ranks as "a-b" ("0-63", "0,2,5-7"), then the others as
// "pid N" in pid order.
func rankSet(ms []member) string {
	var nums, pids []int
	for _, m := range ms {
		if n, ok := m.number(); ok {
			nums = append(nums, n)
		} else {
			pids = append(pids, m.pid)
		}
	}
	var parts []string
	if len(nums) > 0 {
		parts = append(parts, ranks.Format(nums))
	}
	slices.Sort(pids)
	for _, p := range slices.Compact(pids) {
		parts = append(parts, "pid "+strconv.Itoa(p))
	}
	return strings.Join(parts, ",")
}

// pidList lists pids in the given order, runs of consecutive pids as
// "a-b", and after maxPIDItems items "… (+N more)" with N the pids left out.
func pidList(pids []int) string {
	type run struct{ lo, hi int }
	var runs []run
	for _, p := range pids {
		if n := len(runs); n > 0 && p == runs[n-1].hi+1 {
			runs[n-1].hi = p
			continue
		}
		runs = append(runs, run{p, p})
	}
	var parts []string
	for i, r := range runs {
		if i == maxPIDItems {
			more := 0
			for _, r := range runs[i:] {
				more += r.hi - r.lo + 1
			}
			return strings.Join(parts, ",") + " … (+" + strconv.Itoa(more) + " more)"
		}
		if r.lo == r.hi {
			parts = append(parts, strconv.Itoa(r.lo))
		} else {
			parts = append(parts, strconv.Itoa(r.lo)+"-"+strconv.Itoa(r.hi))
		}
	}
	return strings.Join(parts, ",")
}

// eventKey is an event and its instance.
type eventKey struct{ event, detail string }

// eventRow is a row of the events table: ranks that counted the same.
type eventRow struct {
	key     eventKey
	members []member
	// count is what each member counted; countText, when set, replaces it
	// in the table (summary rows).
	count       uint64
	countText   string
	peak        uint64
	first, last time.Time
}

// layerRows are a layer's rows in table order.
type layerRows struct {
	layer string
	rows  []eventRow
}

// eventsTable is a job's events table before rendering.
type eventsTable struct {
	layers []layerRows
	// notes are the job's (event, detail) totals in table order; a row's
	// note key is its index in notes plus one.
	notes []agg.EventTotal
	// noteOf maps an (event, detail) to its note number.
	noteOf map[eventKey]int
	// idle are the ranks without events.
	idle []member
	// detail and peak say whether the DETAIL and PEAK columns are shown.
	detail, peak bool
	// perRank says whether some row stands for several ranks.
	perRank bool
}

// buildEvents groups a job's events into the rows of its events table.
func buildEvents(j agg.Job) eventsTable {
	et := eventsTable{noteOf: map[eventKey]int{}}
	type rowKey struct {
		eventKey
		count, peak uint64
	}
	rows := map[rowKey]*eventRow{}
	byKey := map[eventKey][]*eventRow{}
	for _, r := range j.Ranks {
		m := member{rank: r.Rank, pid: r.PID}
		if len(r.Events) == 0 {
			et.idle = append(et.idle, m)
			continue
		}
		for _, e := range r.Events {
			k := rowKey{eventKey{e.Event, e.Detail}, e.Count, e.Peak}
			row, ok := rows[k]
			if !ok {
				row = &eventRow{key: k.eventKey, count: e.Count, peak: e.Peak}
				rows[k] = row
				byKey[k.eventKey] = append(byKey[k.eventKey], row)
			}
			row.members = append(row.members, m)
			row.first = agg.Earliest(row.first, e.First)
			row.last = agg.Latest(row.last, e.Last)
		}
	}

	totals := agg.Summary{Jobs: []agg.Job{j}}.Totals()
	slices.SortStableFunc(totals, func(a, b agg.EventTotal) int {
		return compareLayers(a.Layer, b.Layer) // Totals is already by count, event, detail
	})
	for _, t := range totals {
		k := eventKey{t.Event, t.Detail}
		et.notes = append(et.notes, t)
		et.noteOf[k] = len(et.notes)
		if n := len(et.layers); n == 0 || et.layers[n-1].layer != t.Layer {
			et.layers = append(et.layers, layerRows{layer: t.Layer})
		}
		lr := &et.layers[len(et.layers)-1]

		var krows []eventRow
		for _, row := range byKey[k] {
			slices.SortFunc(row.members, compareMembers)
			krows = append(krows, *row)
		}
		slices.SortFunc(krows, func(a, b eventRow) int {
			if c := cmp.Compare(b.count, a.count); c != 0 {
				return c
			}
			return compareMembers(a.members[0], b.members[0])
		})
		if len(krows) > maxRowsPerEvent {
			krows = []eventRow{summarize(k, krows)}
		}
		for _, row := range krows {
			et.detail = et.detail || row.key.detail != ""
			et.peak = et.peak || row.peak > 0
			et.perRank = et.perRank || len(row.members) > 1
		}
		lr.rows = append(lr.rows, krows...)
	}
	et.perRank = et.perRank || len(et.idle) > 1
	return et
}

// summarize replaces the rows of one (event, detail) by one row for all
// their ranks: the range of counts per rank and their sum, the highest
// peak, the earliest first and the latest last hit.
func summarize(k eventKey, rows []eventRow) eventRow {
	out := eventRow{key: k}
	lo, hi, sum := rows[0].count, rows[0].count, uint64(0)
	for _, r := range rows {
		out.members = append(out.members, r.members...)
		lo, hi = min(lo, r.count), max(hi, r.count)
		sum += r.count * uint64(len(r.members))
		out.peak = max(out.peak, r.peak)
		out.first = agg.Earliest(out.first, r.first)
		out.last = agg.Latest(out.last, r.last)
	}
	slices.SortFunc(out.members, compareMembers)
	out.count = hi
	if lo == hi {
		out.countText = thousands(lo) + " per rank, sum " + thousands(sum)
	} else {
		out.countText = thousands(lo) + "–" + thousands(hi) + " per rank, sum " + thousands(sum)
	}
	return out
}

// renderEvents writes the events table.
func renderEvents(buf *bytes.Buffer, et eventsTable) error {
	type col struct {
		name  string
		right bool
		show  bool
	}
	cols := []col{
		{"LAYER", false, true},
		{"RANKS", false, true},
		{"EVENT", false, true},
		{"DETAIL", false, et.detail},
		{"COUNT", true, true},
		{"PEAK", true, et.peak},
		{"FIRST", false, true},
		{"LAST", false, true},
		{"ADVICE", false, true},
	}
	var header []string
	var right []int
	for _, c := range cols {
		if c.show {
			if c.right {
				right = append(right, len(header))
			}
			header = append(header, c.name)
		}
	}
	// cells picks the shown columns of a full row.
	cells := func(full ...string) []string {
		var out []string
		for i, c := range cols {
			if c.show {
				out = append(out, full[i])
			}
		}
		return out
	}

	var rows [][]string
	for _, lr := range et.layers {
		layer := lr.layer
		if layer == "" {
			layer = "-"
		}
		for i, r := range lr.rows {
			if i > 0 {
				layer = ""
			}
			count := r.countText
			if count == "" {
				count = thousands(r.count)
			}
			peak := "-"
			if r.peak > 0 {
				peak = thousands(r.peak)
			}
			note := "[" + strconv.Itoa(et.noteOf[r.key]) + "]"
			rows = append(rows, cells(layer, rankSet(r.members), r.key.event, showDetail(r.key.detail), count, peak,
				clockOf(r.first), clockOf(r.last), note))
		}
	}
	if len(et.idle) > 0 {
		rows = append(rows, cells("-", rankSet(et.idle), "-", "", "0", "-", "-", "-", ""))
	}
	return text.Table(buf, header, rows, right...)
}

// renderProcs writes the processes table: the job's ranks grouped by how
// they ended.
func renderProcs(buf *bytes.Buffer, j agg.Job) error {
	type proc struct {
		member
		end string
	}
	procs := make([]proc, 0, len(j.Ranks))
	for _, r := range j.Ranks {
		procs = append(procs, proc{member{rank: r.Rank, pid: r.PID}, r.End.String()})
	}
	slices.SortStableFunc(procs, func(a, b proc) int { return compareMembers(a.member, b.member) })
	var ends []string
	groups := map[string][]member{}
	for _, p := range procs {
		if _, ok := groups[p.end]; !ok {
			ends = append(ends, p.end)
		}
		groups[p.end] = append(groups[p.end], p.member)
	}

	var rows [][]string
	for _, end := range ends {
		ms := groups[end]
		pids := make([]int, len(ms))
		for i, m := range ms {
			pids[i] = m.pid
		}
		rows = append(rows, []string{rankSet(ms), pidList(pids), end})
	}
	return text.Table(buf, []string{"RANKS", "PIDS", "ENDED"}, rows)
}

// jobHost names the host(s) of a job's ranks, or host when none is known,
// each as text.Quote shows it.
func jobHost(host string, j agg.Job) string {
	var hosts []string
	for _, r := range j.Ranks {
		if r.Host != "" && r.Host != identity.Unknown && !slices.Contains(hosts, r.Host) {
			hosts = append(hosts, r.Host)
		}
	}
	if len(hosts) == 0 {
		return text.Quote(host)
	}
	slices.Sort(hosts)
	for i, h := range hosts {
		hosts[i] = text.Quote(h)
	}
	return strings.Join(hosts, ",")
}

// clockOf formats t as a local wall clock, or "-" when it is unknown.
func clockOf(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(clock)
}

// Thousands formats n with comma thousands separators, as the table shows
// counts: 1,234,567.
func Thousands(n uint64) string { return thousands(n) }

// thousands formats n with comma thousands separators: 1,234,567.
func thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// wrap breaks text at spaces into lines of at most width bytes where
// possible, the first prefixed by first and the others by rest.
func wrap(text, first, rest string, width int) string {
	var b strings.Builder
	line := first
	empty := true
	for _, word := range strings.Fields(text) {
		if !empty && len(line)+1+len(word) > width {
			b.WriteString(line)
			b.WriteByte('\n')
			line, empty = rest, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	b.WriteString(line)
	return b.String()
}

// errWriter keeps the first write error and skips writes after it.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) write(p []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(p)
	}
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
