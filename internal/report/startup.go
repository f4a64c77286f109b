package report

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/ranks"
)

// minRanksForSlowest is how many ranks with a known MPI_Init time it takes
// to name the slowest one against the median.
const minRanksForSlowest = 4

// writeStartup writes the job's MPI_Init, modex and MPI_Finalize times, one
// row per rank, when any rank has them: what modex stands for, then, with
// enough ranks, the slowest MPI_Init against the median.
func writeStartup(ew *errWriter, j agg.Job) {
	if !slices.ContainsFunc(j.Ranks, func(r agg.Rank) bool { return !r.Startup.IsZero() }) {
		return
	}
	rows := [][]string{{"RANK", "PID", "ENDED", "MPI_INIT", "MODEX", "FINALIZE"}}
	for _, r := range j.Ranks {
		rows = append(rows, []string{r.Rank, strconv.Itoa(r.PID), r.End.String(),
			duration(r.Startup.Init), duration(r.Startup.Modex), duration(r.Startup.Finalize)})
	}
	right := []bool{true, true, false, true, true, true}
	widths := make([]int, len(right))
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	ew.printf("\nStartup (MPI_Init, of which modex; MPI_Finalize):\n")
	for _, row := range rows {
		cells := make([]string, len(row))
		for i, c := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if right[i] {
				cells[i] = pad + c
			} else {
				cells[i] = c + pad
			}
		}
		ew.printf("%s\n", strings.TrimRight("  "+strings.Join(cells, "  "), " "))
	}
	if via := modexVia(j.Ranks); via != "" {
		ew.printf("  MODEX: time inside %s\n", via)
	}
	if line := slowestInit(j); line != "" {
		ew.printf("  %s\n", line)
	}
}

// duration shows a startup time to three significant digits, "-" when it
// was not observed.
func duration(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return short(d).String()
}

// short rounds d to three significant digits, but not beyond whole
// seconds: 1.25s, 417ms, 2.5ms, 17m3s.
func short(d time.Duration) time.Duration {
	unit := time.Duration(1)
	for v := d.Abs(); v >= 1000 && unit < time.Second; v /= 10 {
		unit *= 10
	}
	return d.Round(unit)
}

// modexVia says what bracketed the modex times: "PMIx fence", or, when
// ranks differ, "PMIx fence (ranks 0-2), UCX address exchange (rank 3)".
func modexVia(rs []agg.Rank) string {
	var vias []string
	who := map[string][]string{}
	for _, r := range rs {
		v := r.Startup.ModexVia
		if v == "" {
			continue
		}
		if _, ok := who[v]; !ok {
			vias = append(vias, v)
		}
		who[v] = append(who[v], r.Rank)
	}
	if len(vias) == 1 {
		return vias[0]
	}
	var parts []string
	for _, v := range vias {
		parts = append(parts, v+" ("+rankNames(who[v])+")")
	}
	return strings.Join(parts, ", ")
}

// rankNames says "rank 3" or "ranks 0-2,5", non-numeric ranks last.
func rankNames(rs []string) string {
	var nums []int
	var others []string
	for _, r := range rs {
		if n, err := strconv.Atoi(r); err == nil && n >= 0 {
			nums = append(nums, n)
		} else if !slices.Contains(others, r) {
			others = append(others, r)
		}
	}
	slices.Sort(nums)
	nums = slices.Compact(nums)
	var parts []string
	if len(nums) > 0 {
		parts = append(parts, ranks.Format(nums))
	}
	parts = append(parts, others...)
	word := "ranks "
	if len(nums)+len(others) == 1 {
		word = "rank "
	}
	return word + strings.Join(parts, ",")
}

// slowestInit names the rank that spent longest in MPI_Init and how much
// longer than the median that was, when at least minRanksForSlowest ranks
// have an MPI_Init time and the slowest exceeds the median; "" otherwise.
func slowestInit(j agg.Job) string {
	var inits []time.Duration
	slowest := -1
	for i, r := range j.Ranks {
		d := r.Startup.Init
		if d <= 0 {
			continue
		}
		inits = append(inits, d)
		if slowest < 0 || d > j.Ranks[slowest].Startup.Init {
			slowest = i
		}
	}
	if len(inits) < minRanksForSlowest {
		return ""
	}
	slices.SortFunc(inits, cmp.Compare)
	n := len(inits)
	median := inits[n/2]
	if n%2 == 0 {
		median = inits[n/2-1] + (inits[n/2]-inits[n/2-1])/2
	}
	r := j.Ranks[slowest]
	if r.Startup.Init <= median {
		return ""
	}
	where := "pid " + strconv.Itoa(r.PID)
	if jobHost("", j) != r.Host && r.Host != "" && r.Host != identity.Unknown {
		where += " on " + r.Host
	}
	return "Slowest MPI_Init: rank " + r.Rank + " (" + where + "), " + duration(r.Startup.Init) + ", " +
		duration(r.Startup.Init-median) + " slower than the median of " + strconv.Itoa(n) + " ranks (" + duration(median) + ")."
}
