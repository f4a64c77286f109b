package agg

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// Merge joins the summaries that the nodes of one job wrote, one per node,
// into one Summary holding that job only, with every node's ranks ordered as
// Build orders them (numeric rank, then PID, then host).
//
// job names the job to take from each summary; a summary without it
// contributes its host, interval and drops but no ranks (a note says so),
// and it is an error when no summary holds it. When job is "", every
// summary must hold exactly one job and all the same one; otherwise the
// error lists the ids found and asks for --job JOBID.
//
// Host of the result is the sorted distinct hosts of the inputs, joined by
// commas; Start is the earliest and End the latest of the inputs' (zero
// times ignored); drops are summed by What, in the order they are first
// seen, keeping the first non-empty Raise.
//
// A rank given more than once with the same host, rank and PID (the same
// node's summary given twice, or two snapshots of it) is kept once: the copy
// from the summary with the latest End. The same rank number on several
// hosts is kept on each, and a note says so: notes are the things a reader
// of the merged summary should know, one line each, and are never fatal.
func Merge(sums []Summary, job string) (Summary, []string, error) {
	if len(sums) == 0 {
		return Summary{}, nil, errors.New("agg: merge: no summaries")
	}
	if job == "" {
		id, err := onlyJob(sums)
		if err != nil {
			return Summary{}, nil, err
		}
		job = id
	}

	var (
		out    Summary
		notes  []string
		hosts  []string
		drops  = map[string]int{} // What -> index in out.Dropped
		found  bool
		picked = map[rankKey]int{} // -> index in ranks
		ranks  []Rank
		from   []int // ranks[i] came from sums[from[i]]
	)
	for i, s := range sums {
		for _, h := range strings.Split(s.Host, ",") {
			if h != "" && !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
		out.Start = Earliest(out.Start, s.Start)
		out.End = Latest(out.End, s.End)
		for _, d := range s.Dropped {
			k, ok := drops[d.What]
			if !ok {
				drops[d.What] = len(out.Dropped)
				out.Dropped = append(out.Dropped, d)
				continue
			}
			out.Dropped[k].Count += d.Count
			if out.Dropped[k].Raise == "" {
				out.Dropped[k].Raise = d.Raise
			}
		}

		jobIdx := slices.IndexFunc(s.Jobs, func(j Job) bool { return j.ID == job })
		if jobIdx < 0 {
			notes = append(notes, fmt.Sprintf("the summary of %s holds no ranks of job %s", hostName(s.Host), job))
			continue
		}
		found = true
		for _, r := range s.Jobs[jobIdx].Ranks {
			k := rankKey{host: r.Host, rank: r.Rank, pid: r.PID}
			if at, dup := picked[k]; dup {
				if s.End.After(sums[from[at]].End) {
					ranks[at], from[at] = r, i
				}
				continue
			}
			picked[k] = len(ranks)
			ranks = append(ranks, r)
			from = append(from, i)
		}
	}
	if !found {
		return Summary{}, nil, fmt.Errorf("agg: merge: no summary holds job %s", job)
	}

	slices.SortFunc(ranks, func(a, b Rank) int {
		if c := compareIDs(a.Rank, b.Rank); c != 0 {
			return c
		}
		if c := cmp.Compare(a.PID, b.PID); c != 0 {
			return c
		}
		return cmp.Compare(a.Host, b.Host)
	})
	notes = append(notes, sharedRanks(ranks)...)

	slices.Sort(hosts)
	out.Host = strings.Join(hosts, ",")
	out.Jobs = []Job{{ID: job, Ranks: ranks}}
	return out, notes, nil
}

// rankKey identifies one process across the summaries of a job.
type rankKey struct {
	host, rank string
	pid        int
}

// onlyJob returns the one job all summaries hold, or an error naming what
// they hold instead.
func onlyJob(sums []Summary) (string, error) {
	var ids []string
	for _, s := range sums {
		for _, j := range s.Jobs {
			if !slices.Contains(ids, j.ID) {
				ids = append(ids, j.ID)
			}
		}
	}
	if len(ids) == 0 {
		return "", errors.New("agg: merge: the summaries hold no job")
	}
	if len(ids) == 1 {
		for _, s := range sums {
			if len(s.Jobs) == 0 {
				return "", fmt.Errorf("agg: merge: the summary of %s holds no job; give --job JOBID to merge the others",
					hostName(s.Host))
			}
		}
		return ids[0], nil
	}
	slices.SortFunc(ids, compareIDs)
	return "", fmt.Errorf("agg: merge: the summaries hold %d jobs (%s), not one; give --job JOBID",
		len(ids), quoteAll(ids))
}

// sharedRanks notes each rank number that appears on several hosts; ranks
// must be sorted by rank.
func sharedRanks(ranks []Rank) []string {
	var notes []string
	for i := 0; i < len(ranks); {
		n := i + 1
		for n < len(ranks) && ranks[n].Rank == ranks[i].Rank {
			n++
		}
		var where []string
		var hosts []string
		for _, r := range ranks[i:n] {
			if !slices.Contains(hosts, r.Host) {
				hosts = append(hosts, r.Host)
			}
			where = append(where, fmt.Sprintf("%s (pid %d)", hostName(r.Host), r.PID))
		}
		if ranks[i].Rank != identity.Unknown && len(hosts) > 1 {
			notes = append(notes, fmt.Sprintf("rank %s appears on %s", text.Quote(ranks[i].Rank), andList(where)))
		}
		i = n
	}
	return notes
}

// andList joins "a", "a and b", "a, b and c".
func andList(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// hostName is a host for a message.
func hostName(h string) string {
	if h == "" {
		return "an unnamed host"
	}
	return text.Quote(h)
}

// quoteAll joins ids, each as text.Quote shows it, with ", ".
func quoteAll(ids []string) string {
	out := make([]string, len(ids))
	for i, s := range ids {
		out[i] = text.Quote(s)
	}
	return strings.Join(out, ", ")
}
