package agent

import (
	"encoding/json"
	"errors"
	"os"
	"time"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/atomicfile"
	"github.com/mpiprobe/mpiprobe/internal/counters"
	"github.com/mpiprobe/mpiprobe/internal/jobstore"
	"github.com/mpiprobe/mpiprobe/thresholds"
)

// stateVersion is the version of agent-state.json's layout.
const stateVersion = 1

// savedState is what an agent leaves for the next one in
// <state dir>/agent-state.json: the processes and jobs it knew and what
// the C/T rule had reported. The counts themselves stay in the pinned maps.
type savedState struct {
	Version  int                                 `json:"version"`
	Build    string                              `json:"build"`
	Saved    time.Time                           `json:"saved"`
	Procs    []procState                         `json:"procs"`
	Jobs     []*jobState                         `json:"jobs"`
	Limiter  []thresholds.KeyState[counters.Key] `json:"limiter"`
	Finished uint64                              `json:"finished"`
}

// stateFile is agent-state.json in the state directory, written with the
// same atomic replace as the job summaries.
func (a *agent) stateFile() jobstore.Store { return jobstore.Store{Dir: a.cfg.StateDir} }

func (a *agent) statePath() string { return a.stateFile().Path(stateName) }

const stateName = "agent-state"

// saveState writes agent-state.json atomically. Finished jobs are left out
// when their summaries are written already.
func (a *agent) saveState() {
	a.lastSave = a.cfg.Clock.Now()
	st := savedState{Version: stateVersion, Build: bpf.BuildID(), Saved: a.lastSave, Limiter: a.limiter.Snapshot(), Finished: a.finished}
	for _, j := range a.t.kept() {
		st.Jobs = append(st.Jobs, j)
		for _, pid := range j.PIDs {
			st.Procs = append(st.Procs, *a.t.procs[pid])
		}
	}
	b, err := json.Marshal(st)
	if err == nil {
		err = a.stateFile().Save(stateName, b)
	}
	if err != nil {
		a.cfg.Log.Warn("save agent state", "err", err)
	}
}

// restore takes over the jobs a previous agent was following. Processes
// that ended meanwhile are found in the exits map (read at the first poll)
// or, failing that, are marked vanished. The C/T rule's state is kept only
// when the counts are too, that is when the pinned maps were reused.
func (a *agent) restore() {
	b, err := a.readState()
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var st savedState
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil || st.Version != stateVersion {
		a.cfg.Log.Warn("previous agent state unreadable; starting afresh", "file", a.statePath(), "err", err)
		return
	}
	for _, j := range st.Jobs {
		a.t.jobs[j.Key] = j
	}
	for i := range st.Procs {
		p := st.Procs[i]
		a.t.procs[p.PID] = &p
	}
	a.finished = st.Finished
	if a.k.reused && st.Build == bpf.BuildID() {
		a.limiter.Restore(st.Limiter)
	} else if len(st.Jobs) > 0 {
		a.cfg.Log.Warn("the pinned counters of the previous agent are gone (reboot, cleanup or another build): its jobs' counts before now are lost", "jobs", len(st.Jobs))
	}
	// Processes whose end the kernel could not record for us (endVanished
	// takes the recorded exits first).
	a.endVanished(a.cfg.Clock.Now())
	a.cfg.Log.Info("previous agent state restored", "jobs", len(st.Jobs), "processes", len(st.Procs), "saved", st.Saved)
}

// readState reads agent-state.json, not through a symbolic link planted in
// its place.
func (a *agent) readState() ([]byte, error) { return atomicfile.ReadFile(a.statePath()) }
