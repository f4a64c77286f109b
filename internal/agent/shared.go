package agent

import (
	"bytes"
	"os"
	"strings"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/hostlist"
	"github.com/mpiprobe/mpiprobe/internal/jobstore"
	"github.com/mpiprobe/mpiprobe/internal/report"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// nodeListVars are the variables of a rank's environment that give its
// job's node list, best first: Slurm's step list (the nodes this step's
// ranks run on), then the job's allocation. mpirun and hydra give none.
var nodeListVars = []string{"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"}

// nodeListOf reads a job's node list from a rank's environment: the list
// as written there (compact) once hostlist.Expand read it, the variable it
// came from, and the variable and error of a list that does not read
// (then no list).
func nodeListOf(env map[string]string) (list, from string, bad error) {
	for _, v := range nodeListVars {
		s, ok := env[v]
		if !ok || s == "" {
			continue
		}
		if _, err := hostlist.Expand(s); err != nil {
			return "", v, err
		}
		return s, v, nil
	}
	return "", "", nil
}

// noteNodeList records in a job the node list a new rank's environment
// gives, when the job has none yet.
func (a *agent) noteNodeList(j *jobState, env map[string]string) {
	if j == nil || j.NodeList != "" || a.cfg.SharedDir == "" {
		return
	}
	list, from, err := nodeListOf(env)
	if err != nil {
		a.cfg.Log.Warn("the job's node list does not parse; its part in the shared directory names no node list, so missing nodes cannot be named",
			"job", text.Quote(j.Key), "variable", from, "err", err)
		return
	}
	if list != "" {
		j.NodeList, j.NodeListFrom = list, from
	}
}

// checkSharedDir says at start, in one line, when the shared directory
// cannot take parts; the agent runs on (it may be mounted later) and says
// it again for each job whose part fails.
func (a *agent) checkSharedDir() {
	if a.cfg.SharedDir == "" {
		return
	}
	fi, err := os.Stat(a.cfg.SharedDir)
	switch {
	case err != nil:
		a.cfg.Log.Error("shared directory unusable: jobs' parts will not be written there until it is (mount or create it, or fix --shared-dir / shared_dir); the local summaries have everything",
			"dir", a.cfg.SharedDir, "err", err)
	case !fi.IsDir():
		a.cfg.Log.Error("shared directory is not a directory: fix --shared-dir / shared_dir; the local summaries have everything", "dir", a.cfg.SharedDir)
	}
}

// savePart writes this node's part of a job to the shared directory, when
// one is set and the job has an id (a process without one is no job of
// several nodes). A failure is logged once until a write succeeds again:
// nothing is lost, the local summary has it all.
func (a *agent) savePart(j *jobState, sum agg.Summary) {
	if a.cfg.SharedDir == "" || strings.HasPrefix(j.Key, "pid-") {
		return
	}
	p := report.Part{Node: a.cfg.Host, Job: j.Key, Written: a.cfg.Clock.Now(), Final: !j.Finished.IsZero(),
		NodeList: j.NodeList, NodeListFrom: j.NodeListFrom, Summary: sum}
	var buf bytes.Buffer
	err := report.WritePart(&buf, p)
	if err == nil {
		err = jobstore.Shared{Dir: a.cfg.SharedDir}.SavePart(j.Key, a.cfg.Host, buf.Bytes())
	}
	if err != nil {
		if !j.partFailed {
			a.cfg.Log.Error("job's part not written to the shared directory; the local summary has everything and the part is tried again at the job's next write (the agent must be able to write there: check the mount, its permissions, --shared-dir / shared_dir, and under systemd a ReadWritePaths= for it in a drop-in: systemctl edit mpiprobe)",
				"job", text.Quote(j.Key), "err", err)
		}
		j.partFailed = true
		return
	}
	if j.partFailed {
		a.cfg.Log.Info("job's part written to the shared directory after an earlier failure", "job", text.Quote(j.Key))
	}
	j.partFailed = false
}
