package agent

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/jobstore"
	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/probes"
)

// procState is a traced process as the agent knows it.
type procState struct {
	agg.Proc
	// StartTicks is the process's start time (/proc/PID/stat field 22): with
	// the pid it tells a process from a later one that reuses the pid.
	StartTicks uint64 `json:"start_ticks"`
	// Job is the key of the job the process belongs to (see jobKey).
	Job string `json:"job"`
	// mpi is the MPI the process runs, read from its memory map when the
	// agent first sees it (NoFlavour until then): it decides which events'
	// series the process gets.
	mpi mpiabi.Flavour
}

// jobState is one MPI job's ranks on this node.
type jobState struct {
	Key  string `json:"key"`
	PIDs []int  `json:"pids"`
	// Started is when the job's first rank on this node started (its
	// /proc/PID/stat start time), or, when that is unknown, when the agent
	// first saw a rank of the job. A restarted agent that finds the job
	// running keeps it: it does not depend on when the agent came.
	Started time.Time `json:"started"`
	// Finished is when its last rank ended; zero while one runs.
	Finished time.Time `json:"finished,omitzero"`
	// Unsaved is set while the summary of the finished job could not be
	// stored (e.g. a full state directory): the job, its kernel entries
	// and its counts are kept, also across a restart, until it is.
	Unsaved bool `json:"unsaved,omitzero"`
	// NodeList is the job's node list as its ranks' launcher gave it
	// (Slurm's compact form, checked by hostlist.Expand), "" when none
	// did; NodeListFrom names the variable. Read only when parts are
	// written to a shared directory.
	NodeList     string `json:"node_list,omitempty"`
	NodeListFrom string `json:"node_list_from,omitempty"`
	// partFailed is set while the job's part cannot be written to the
	// shared directory (logged once).
	partFailed bool
	// final is the summary made when the job finished (for metrics
	// until the job ages out).
	final *agg.Summary
}

// jobKey groups processes into jobs by their identity. A process without a
// job identity is a job of its own, keyed "pid-" and its pid; a job id is
// keyed by jobstore.Key, which never starts with "pid-", so that a job a
// user named "pid-4242" is never merged with the unidentified process
// 4242.
func jobKey(id identity.Identity, pid int) string {
	if id.Job == "" || id.Job == identity.Unknown {
		return "pid-" + strconv.Itoa(pid)
	}
	return jobstore.Key(id.Job)
}

// tracker groups traced processes into jobs and notices when a job's last
// local rank has ended. It is pure: the agent feeds it what it reads.
type tracker struct {
	procs map[int]*procState
	jobs  map[string]*jobState
}

func newTracker() *tracker {
	return &tracker{procs: map[int]*procState{}, jobs: map[string]*jobState{}}
}

// add registers a process and returns it and whether it is new. A process
// already known keeps its record; its identity is filled in if it was
// unknown before. A new rank of a finished job reopens the job. started is
// when the process started (zero if unknown), now when it is seen: a job
// starts with the earliest start of its ranks, or when first seen.
func (t *tracker) add(p agg.Proc, ticks uint64, started, now time.Time) (*procState, bool) {
	if started.IsZero() || started.After(now) {
		started = now
	}
	if old, ok := t.procs[p.PID]; ok && (old.StartTicks == ticks || ticks == 0 || old.End.Kind == agg.Running) {
		if old.Identity.Rank == identity.Unknown && p.Identity.Rank != identity.Unknown && old.Job == jobKey(p.Identity, p.PID) {
			old.Identity = p.Identity
		}
		if old.Comm == "" {
			old.Comm = p.Comm
		}
		return old, false
	} else if ok {
		// The pid was reused by a new process: the old one stays in its
		// job under its own record until that job is forgotten.
		t.detach(old)
	}
	ps := &procState{Proc: p, StartTicks: ticks, Job: jobKey(p.Identity, p.PID)}
	t.procs[p.PID] = ps
	j, ok := t.jobs[ps.Job]
	if !ok {
		j = &jobState{Key: ps.Job, Started: started}
		t.jobs[ps.Job] = j
	}
	if !j.Finished.IsZero() {
		j.Finished, j.final = time.Time{}, nil
	}
	if started.Before(j.Started) {
		j.Started = started
	}
	if !slices.Contains(j.PIDs, p.PID) {
		j.PIDs = append(j.PIDs, p.PID)
	}
	return ps, true
}

// detach removes a process from its job (pid reuse).
func (t *tracker) detach(p *procState) {
	if j, ok := t.jobs[p.Job]; ok {
		j.PIDs = slices.DeleteFunc(j.PIDs, func(pid int) bool { return pid == p.PID })
		if len(j.PIDs) == 0 {
			delete(t.jobs, p.Job)
		}
	}
	delete(t.procs, p.PID)
}

// end records how a process ended. It returns the process's job when that
// was the job's last running rank, once.
func (t *tracker) end(pid int, e agg.End) *jobState {
	p, ok := t.procs[pid]
	if !ok || p.End.Kind != agg.Running {
		return nil
	}
	p.End = e
	j := t.jobs[p.Job]
	if j == nil || !j.Finished.IsZero() {
		return nil
	}
	for _, q := range j.PIDs {
		if t.procs[q].End.Kind == agg.Running {
			return nil
		}
	}
	j.Finished = e.At
	return j
}

// procsOf returns a job's processes in the order they were added.
func (t *tracker) procsOf(j *jobState) []agg.Proc {
	out := make([]agg.Proc, 0, len(j.PIDs))
	for _, pid := range j.PIDs {
		out = append(out, t.procs[pid].Proc)
	}
	return out
}

// running returns the jobs with a running rank, by key.
func (t *tracker) running() []*jobState {
	return t.jobsWhere(func(j *jobState) bool { return j.Finished.IsZero() })
}

// kept returns the jobs a next agent takes over, by key: those with a
// running rank and the finished ones whose summary is not stored yet.
func (t *tracker) kept() []*jobState {
	return t.jobsWhere(func(j *jobState) bool { return j.Finished.IsZero() || j.Unsaved })
}

// jobsWhere returns the jobs for which ok is true, by key.
func (t *tracker) jobsWhere(ok func(*jobState) bool) []*jobState {
	var out []*jobState
	for _, j := range t.jobs {
		if ok(j) {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b *jobState) int { return cmp.Compare(a.Key, b.Key) })
	return out
}

// forget drops a job and its processes.
func (t *tracker) forget(j *jobState) {
	for _, pid := range j.PIDs {
		if p, ok := t.procs[pid]; ok && p.Job == j.Key {
			delete(t.procs, pid)
		}
	}
	delete(t.jobs, j.Key)
}

// startupOf turns the CLOCK_MONOTONIC marks of one process into durations;
// wall converts a mark to wall-clock time. A duration whose marks are
// missing or out of order stays zero (unknown).
func startupOf(ns [probes.NumMarks]uint64, wall func(uint64) time.Time) agg.Startup {
	span := func(from, to probes.Mark) time.Duration {
		a, b := ns[from], ns[to]
		if a == 0 || b <= a {
			return 0
		}
		return time.Duration(b - a)
	}
	var s agg.Startup
	if ns[probes.MarkInitEnter] != 0 {
		s.InitStart = wall(ns[probes.MarkInitEnter])
	}
	s.Init = span(probes.MarkInitEnter, probes.MarkInitExit)
	if d := span(probes.MarkPMIxStart, probes.MarkPMIxEnd); d > 0 {
		s.Modex, s.ModexVia = d, "PMIx fence"
	} else if d := span(probes.MarkUCXStart, probes.MarkUCXEnd); d > 0 {
		s.Modex, s.ModexVia = d, "UCX address exchange"
	}
	if s.Init > 0 && s.Modex > s.Init {
		// Marks from another phase (e.g. a UCX endpoint made later): not the modex.
		s.Modex, s.ModexVia = 0, ""
	}
	s.Finalize = span(probes.MarkFinEnter, probes.MarkFinExit)
	return s
}
