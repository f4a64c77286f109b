package report

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/identity"
)

// clock is how FIRST and LAST are shown, in local time.
const clock = "15:04:05.000"

// noteWidth is where notes below a job's table are wrapped.
const noteWidth = 100

// WriteTable writes s for people: a line naming the host and interval, then
// per job a header line "Job <id> on <host> — N ranks", a table with one row
// per rank and event (a rank without events gets one row with event "-"),
// and numbered notes giving each event's message and advice, which the
// ADVICE column refers to. Rank, PID and ENDED are shown on a rank's first
// row only. Totals per event and a WARNING line per dropped-counter entry
// follow the jobs. Counts carry thousands separators, times are local.
//
// When ranks of a job have startup times (agg.Rank.Startup), a section
// "Startup (MPI_Init, of which modex; MPI_Finalize):" follows the job's
// notes with a row per rank (RANK, PID, ENDED, MPI_INIT, MODEX, FINALIZE;
// "-" where unknown), what MODEX measured, and, for 4 ranks or more, the
// rank slowest in MPI_Init against the median.
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
			evw = max(evw, len(t.Event))
		}
		for _, t := range tot {
			line := fmt.Sprintf("  %*s  %-*s", cw, thousands(t.Count), evw, t.Event)
			if t.Message != t.Event {
				line += "  " + t.Message
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

// title is the summary's first line.
func title(s agg.Summary) string {
	t := "mpiprobe on " + s.Host
	if !s.Start.IsZero() && !s.End.IsZero() {
		t += fmt.Sprintf(", %s to %s (%s)", clockOf(s.Start), clockOf(s.End),
			s.End.Sub(s.Start).Round(time.Millisecond))
	}
	return t
}

// writeJob writes one job's header line, table and notes.
func writeJob(ew *errWriter, host string, j agg.Job) error {
	n := len(j.Ranks)
	ranks := "ranks"
	if n == 1 {
		ranks = "rank"
	}
	ew.printf("Job %s on %s — %d %s", j.ID, jobHost(host, j), n, ranks)
	if j.ID == identity.Unknown {
		ew.printf(" (no MPI job identity)")
	}
	ew.printf("\n")

	// Notes are numbered by the job's own event totals, most frequent first.
	notes := agg.Summary{Jobs: []agg.Job{j}}.Totals()
	key := make(map[string]string, len(notes))
	for i, e := range notes {
		key[e.Event] = "[" + strconv.Itoa(i+1) + "]"
	}

	// Render into a buffer: tablewriter does not report write errors.
	var buf bytes.Buffer
	tbl := tablewriter.NewTable(&buf,
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{
			Global: tw.AlignLeft,
			PerColumn: []tw.Align{
				tw.AlignRight, tw.AlignRight, tw.AlignLeft, tw.AlignLeft,
				tw.AlignRight, tw.AlignLeft, tw.AlignLeft, tw.AlignLeft,
			},
		}),
	)
	tbl.Header("RANK", "PID", "ENDED", "EVENT", "COUNT", "FIRST", "LAST", "ADVICE")
	for _, r := range j.Ranks {
		first := []string{r.Rank, strconv.Itoa(r.PID), EndString(r.End)}
		if len(r.Events) == 0 {
			if err := tbl.Append(append(first, "-", "0", "-", "-", "")); err != nil {
				return fmt.Errorf("report: job %s: %w", j.ID, err)
			}
			continue
		}
		for i, e := range r.Events {
			lead := first
			if i > 0 {
				lead = []string{"", "", ""}
			}
			row := append(slices.Clone(lead), e.Event, thousands(e.Count), clockOf(e.First), clockOf(e.Last), key[e.Event])
			if err := tbl.Append(row); err != nil {
				return fmt.Errorf("report: job %s: %w", j.ID, err)
			}
		}
	}
	if err := tbl.Render(); err != nil {
		return fmt.Errorf("report: render job %s: %w", j.ID, err)
	}
	ew.write(buf.Bytes())

	for _, e := range notes {
		head := key[e.Event] + " " + e.Event
		if e.Message != e.Event {
			head += ": " + e.Message
		} else {
			head += " (not in the event catalog)"
		}
		ew.printf("%s\n", wrap(head, "", "    ", noteWidth))
		if e.Advice != "" {
			ew.printf("%s\n", wrap("Advice: "+e.Advice, "    ", "    ", noteWidth))
		}
	}
	writeStartup(ew, j)
	writeCollectives(ew, j)
	return nil
}

// jobHost names the host(s) of a job's ranks, or host when none is known.
func jobHost(host string, j agg.Job) string {
	var hosts []string
	for _, r := range j.Ranks {
		if r.Host != "" && r.Host != identity.Unknown && !slices.Contains(hosts, r.Host) {
			hosts = append(hosts, r.Host)
		}
	}
	if len(hosts) == 0 {
		return host
	}
	slices.Sort(hosts)
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
