package tracefile

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Part is one node's trace of a job.
type Part struct {
	Name  string // its file, as messages show it (the caller makes it safe to print)
	Trace *Trace
}

// Merge makes one Trace of the traces of several nodes of one job, as if
// one recorder had traced every rank: calls are merged by name, call sites
// by their whole description (the same program at the same path on every
// node gives the same sites), ranks and their ends are appended part after
// part, and every event is renumbered into the merged tables.
//
// Times: each node's events count from its own Header.Start, which is the
// node's wall clock at its time zero (its monotonic clock, which cannot be
// compared across machines, converted once). Merge moves every part's
// events by the difference between its Start and the earliest Start,
// which becomes the merged Start; two nodes' events are therefore as well
// aligned as the nodes' wall clocks agree (NTP on a LAN: tens of
// microseconds to a millisecond; PTP: about a microsecond).
//
// Merge refuses, with an error of one line naming the files (the job, rank
// and host read from them Go-quoted), parts of
// different jobs (every rank of every part must have the job of the
// first part's first rank) and a rank present in two parts (the same MPI
// rank number, or the same process on the same host: one node's file given
// twice, or two nodes claiming one rank). The merged Host lists the
// parts' hosts in order, comma-separated, the merged Command is the first
// part's, and Complete holds when every part is complete. One part is
// returned as it is.
func Merge(parts []Part) (*Trace, error) {
	if len(parts) == 1 {
		return parts[0].Trace, nil
	}
	if err := checkOneJob(parts); err != nil {
		return nil, err
	}
	m := &Trace{Version: Version, Complete: true}
	start := parts[0].Trace.Header.Start
	var hosts []string
	for _, p := range parts {
		if p.Trace.Header.Start.Before(start) {
			start = p.Trace.Header.Start
		}
		if h := p.Trace.Header.Host; !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	m.Header = Header{Host: strings.Join(hosts, ","), Start: start, Command: parts[0].Trace.Header.Command}
	callIdx := map[string]int{}
	siteIdx := map[Site]int{}
	n := 0
	for _, p := range parts {
		n += len(p.Trace.Events)
	}
	m.Events = make([]Event, 0, n)
	for _, p := range parts {
		t := p.Trace
		m.Complete = m.Complete && t.Complete
		calls := renumber(callIdx, &m.Calls, t.Calls)
		sites := renumber(siteIdx, &m.Sites, t.Sites)
		base := len(m.Ranks)
		m.Ranks = append(m.Ranks, t.Ranks...)
		for _, e := range t.Ends {
			e.Rank += base
			m.Ends = append(m.Ends, e)
		}
		shift := int64(t.Header.Start.Sub(start) / time.Nanosecond)
		for _, e := range t.Events {
			e.Rank += base
			e.Call = calls[e.Call]
			e.Site = sites[e.Site]
			e.Enter += shift
			e.Exit += shift
			m.Events = append(m.Events, e)
		}
	}
	return m, nil
}

// renumber gives each of items its index in all, appending the items not
// in all yet (idx maps an item to its index in all).
func renumber[K comparable](idx map[K]int, all *[]K, items []K) []int {
	out := make([]int, len(items))
	for i, it := range items {
		j, ok := idx[it]
		if !ok {
			j = len(*all)
			idx[it] = j
			*all = append(*all, it)
		}
		out[i] = j
	}
	return out
}

// checkOneJob returns an error of one line if the parts are not of one job
// or a rank is in two of them.
func checkOneJob(parts []Part) error {
	job, jobFile := "", ""
	type proc struct {
		host string
		pid  int
	}
	rankFile := map[string]string{}
	procFile := map[proc]string{}
	for _, p := range parts {
		seenRank := map[string]bool{}
		seenProc := map[proc]bool{}
		for _, r := range p.Trace.Ranks {
			switch {
			case jobFile == "":
				job, jobFile = r.Job, p.Name
			case r.Job != job:
				return fmt.Errorf("%s holds job %q, %s job %q: give the trace files of one job", p.Name, r.Job, jobFile, job)
			}
			if f, ok := rankFile[r.Rank]; ok && r.Rank != "?" && !seenRank[r.Rank] {
				return fmt.Errorf("rank %q is in both %s and %s (one node's file given twice, or two nodes claiming one rank): give each node's file once",
					r.Rank, f, p.Name)
			}
			k := proc{r.Host, r.PID}
			if f, ok := procFile[k]; ok && !seenProc[k] {
				return fmt.Errorf("process %d of host %q is in both %s and %s (one node's file given twice?): give each node's file once",
					r.PID, r.Host, f, p.Name)
			}
			seenRank[r.Rank], seenProc[k] = true, true
			if _, ok := rankFile[r.Rank]; !ok {
				rankFile[r.Rank] = p.Name
			}
			if _, ok := procFile[k]; !ok {
				procFile[k] = p.Name
			}
		}
	}
	return nil
}

// SumDamage is the damage of several files read as one trace (Merge): the
// events and chunks read and the events written summed (Written -1 when a
// file's closing record was not read), every damaged range (each in its own
// file's offsets), Unclosed when a file was cut short.
func SumDamage(des []*DamageError) *DamageError {
	s := &DamageError{}
	for _, d := range des {
		s.Events += d.Events
		s.Chunks += d.Chunks
		if s.Written >= 0 && d.Written >= 0 {
			s.Written += d.Written
		} else {
			s.Written = -1
		}
		s.Size += d.Size
		s.Damage = append(s.Damage, d.Damage...)
		s.Unclosed = s.Unclosed || d.Unclosed
	}
	return s
}
