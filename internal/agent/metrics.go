package agent

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/discover"
	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/kernel"
	"github.com/mpiprobe/mpiprobe/internal/metrics"
	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// families are the agent's metric families; docs/metrics.md describes
// them and their labels.
type families struct {
	events, initT, modex, unavailable, drops          metrics.Family
	jobsActive, ranksActive, jobsFinished, libs, pins metrics.Family
}

func newFamilies() families {
	gauge := func(name, help string) metrics.Family {
		return metrics.Family{Name: name, Help: help, Kind: metrics.Gauge}
	}
	var drops strings.Builder
	drops.WriteString("Updates the BPF side could not record because a map was full, by reason:")
	for i, what := range kernel.DropReasons() {
		fmt.Fprintf(&drops, " %s = %s;", dropReason(i), what)
	}
	return families{
		events: metrics.Family{Name: "mpiprobe_events_total", Kind: metrics.Counter,
			Help: "Unusual MPI library events counted, per MPI job, rank and catalog event; 0 from the rank's appearance on. Series of processes without a job or rank, or sharing one, carry a pid label."},
		initT: gauge("mpiprobe_mpi_init_seconds", "Time each rank spent in MPI_Init or MPI_Init_thread."),
		modex: gauge("mpiprobe_modex_seconds", "Part of MPI_Init spent exchanging addresses (PMIx fence or UCX address exchange)."),
		unavailable: gauge("mpiprobe_events_unavailable",
			"Library files in which a catalog event could not be attached (symbols missing in that build)."),
		drops:        metrics.Family{Name: "mpiprobe_map_drops_total", Kind: metrics.Counter, Help: strings.TrimSuffix(drops.String(), ";") + "."},
		jobsActive:   gauge("mpiprobe_jobs_active", "MPI jobs with a running rank on this node."),
		ranksActive:  gauge("mpiprobe_ranks_active", "Running MPI processes traced on this node."),
		jobsFinished: metrics.Family{Name: "mpiprobe_jobs_finished_total", Kind: metrics.Counter, Help: "MPI jobs whose summary was written since the state directory was created."},
		libs:         gauge("mpiprobe_libraries_attached", "MPI library files with probes attached."),
		pins:         gauge("mpiprobe_probes_attached", "Probe links attached (pinned) by the agent."),
	}
}

func (f families) all() []metrics.Family {
	return []metrics.Family{f.events, f.initT, f.modex, f.unavailable, f.drops, f.jobsActive, f.ranksActive, f.jobsFinished, f.libs, f.pins}
}

// MetricNames returns the names of the metric families the agent's page
// holds besides those of the Go runtime, the process and promhttp (go_*,
// process_*, promhttp_*), sorted.
func MetricNames() []string {
	names := []string{metrics.BuildInfoName, metrics.DroppedName}
	for _, f := range newFamilies().all() {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

// dropReason is the reason label of drop index i of kernel.DropReasons:
// short, stable values for PromQL; the sentences are in the help text.
func dropReason(i int) string {
	switch i {
	case 0:
		return "counts_full"
	case 1:
		return "traced_full"
	case 2:
		return "ring_full"
	case 3:
		return "comm_slots_full"
	}
	return "reason_" + strconv.Itoa(i)
}

// The label names of the agent's series.
const (
	labelJob       = "mpi_job"
	labelRank      = "rank"
	labelPID       = "pid"
	labelSlurmJob  = "slurm_job"
	labelSlurmStep = "slurm_step"
	labelEvent     = "event"
	labelReason    = "reason"
)

// metricsState is what the page is made of, copied under the agent's lock
// so that the page is written without it.
type metricsState struct {
	jobs []jobMetrics
	// events are the catalog's events in catalog order, with the number
	// of library files where each is attached and where it is not.
	events []eventFiles
	// produced are the ids of the catalog's events a process of each MPI
	// can produce (probes.Event.ProducedBy), in catalog order: each rank
	// gets a series of each, 0 from its first page on.
	produced map[mpiabi.Flavour][]string
	drops    []uint64
	finished uint64
	libs     int
	pins     int
}

// jobMetrics is one job as the metrics see it.
type jobMetrics struct {
	sum agg.Summary
	// ids are the identities of the job's processes, by pid.
	ids map[int]identity.Identity
	// mpi are the MPIs of the job's processes, by pid (absent: unknown).
	mpi map[int]mpiabi.Flavour
}

// eventFiles counts the library files where an event is attached and
// where it is not.
type eventFiles struct {
	id                    string
	attached, unavailable int
}

// metricsHandler returns the handler of the agent's metrics page.
func (a *agent) metricsHandler() (http.Handler, error) {
	fams := newFamilies()
	c := metrics.NewCollector(func(p *metrics.Page) { fams.fill(p, a.metricsState()) }, a.cfg.MaxSeries, a.cfg.Log)
	reg, err := metrics.NewRegistry(c)
	if err != nil {
		return nil, err
	}
	return metrics.Handler(reg, a.cfg.Log), nil
}

// metricsState reads what the page needs under the agent's lock. Finished
// jobs stay until MetricsTTL after their end, which bounds the label
// values.
func (a *agent) metricsState() metricsState {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := metricsState{drops: slices.Clone(a.drops), finished: a.finished, libs: len(a.files), pins: a.k.pinnedLinks()}
	for _, j := range a.t.jobs {
		jm := jobMetrics{ids: map[int]identity.Identity{}, mpi: map[int]mpiabi.Flavour{}}
		if j.final != nil {
			jm.sum = *j.final
		} else {
			jm.sum = a.summaryOf(j)
		}
		for _, pid := range j.PIDs {
			if p, ok := a.t.procs[pid]; ok && p.Job == j.Key {
				jm.ids[pid] = p.Identity
				if p.mpi == mpiabi.NoFlavour && p.End.Kind == agg.Running {
					p.mpi = mpiOf(a.cfg.Proc, pid) // restored from a previous agent's state
				}
				jm.mpi[pid] = p.mpi
			}
		}
		st.jobs = append(st.jobs, jm)
	}
	// By job, so that the series cap cuts the same jobs at every scrape.
	slices.SortFunc(st.jobs, func(x, y jobMetrics) int { return cmp.Compare(jobOrder(x.sum), jobOrder(y.sum)) })
	files := map[string]*eventFiles{}
	st.produced = map[mpiabi.Flavour][]string{}
	for _, e := range a.cat.Events {
		st.events = append(st.events, eventFiles{id: e.ID})
		for _, fl := range []mpiabi.Flavour{mpiabi.NoFlavour, mpiabi.OpenMPI, mpiabi.MPICH} {
			if e.ProducedBy(fl) {
				st.produced[fl] = append(st.produced[fl], e.ID)
			}
		}
	}
	for i := range st.events {
		files[st.events[i].id] = &st.events[i]
	}
	for _, s := range a.att.Status() {
		if f := files[s.Event]; f != nil && s.Attached {
			f.attached++
		} else if f != nil {
			f.unavailable++
		}
	}
	return st
}

// jobOrder sorts the jobs of the page: by their first job id, then pid.
func jobOrder(s agg.Summary) string {
	if len(s.Jobs) == 0 || len(s.Jobs[0].Ranks) == 0 {
		return ""
	}
	return s.Jobs[0].ID + "\x00" + strconv.Itoa(s.Jobs[0].Ranks[0].PID)
}

// fill writes st to the page: the node's gauges first, then per job and
// rank, so that the series cap drops ranks rather than the node's view.
func (f families) fill(p *metrics.Page, st metricsState) {
	var activeJobs, activeRanks float64
	for _, j := range st.jobs {
		running := false
		for _, job := range j.sum.Jobs {
			for _, r := range job.Ranks {
				if r.End.Kind == agg.Running {
					activeRanks++
					running = true
				}
			}
		}
		if running {
			activeJobs++
		}
	}
	p.Add(f.jobsActive, activeJobs)
	p.Add(f.ranksActive, activeRanks)
	p.Add(f.jobsFinished, float64(st.finished))
	p.Add(f.libs, float64(st.libs))
	p.Add(f.pins, float64(st.pins))
	for i, n := range st.drops {
		p.Add(f.drops, float64(n), metrics.Label{Name: labelReason, Value: dropReason(i)})
	}
	for _, e := range st.events {
		p.Add(f.unavailable, float64(e.unavailable), metrics.Label{Name: labelEvent, Value: e.id})
	}

	shared := sharedRanks(st.jobs)
	for _, j := range st.jobs {
		for _, job := range j.sum.Jobs {
			for _, r := range job.Ranks {
				labels := rankLabels(job.ID, r, j.ids[r.PID], shared[[2]string{job.ID, r.Rank}] > 1)
				counts := map[string]uint64{}
				for _, e := range r.Events { // one per detail: summed
					counts[e.Event] += e.Count
				}
				// The events the rank's MPI can produce start at 0.
				for _, id := range st.produced[j.mpi[r.PID]] {
					p.Add(f.events, float64(counts[id]), withEvent(labels, id)...)
					delete(counts, id)
				}
				for _, e := range r.Events { // counted all the same
					if n, ok := counts[e.Event]; ok {
						p.Add(f.events, float64(n), withEvent(labels, e.Event)...)
						delete(counts, e.Event)
					}
				}
				if r.Startup.Init > 0 {
					p.Add(f.initT, r.Startup.Init.Seconds(), labels...)
				}
				if r.Startup.Modex > 0 {
					p.Add(f.modex, r.Startup.Modex.Seconds(), labels...)
				}
			}
		}
	}
}

// mpiOf reads which MPI a process runs from the MPI C library it maps;
// NoFlavour when it maps none or is gone.
func mpiOf(pfs procfs.FS, pid int) mpiabi.Flavour {
	maps, err := pfs.Maps(pid)
	if err != nil {
		return mpiabi.NoFlavour
	}
	for _, m := range discover.Discover(maps) {
		if fl := m.Library.Flavour(); fl != mpiabi.NoFlavour {
			return fl
		}
	}
	return mpiabi.NoFlavour
}

func withEvent(labels []metrics.Label, event string) []metrics.Label {
	return append(slices.Clip(labels), metrics.Label{Name: labelEvent, Value: event})
}

// sharedRanks counts the processes of each (job, rank) on the page.
func sharedRanks(jobs []jobMetrics) map[[2]string]int {
	n := map[[2]string]int{}
	for _, j := range jobs {
		for _, job := range j.sum.Jobs {
			for _, r := range job.Ranks {
				n[[2]string{job.ID, r.Rank}]++
			}
		}
	}
	return n
}

// rankLabels are the labels of a rank's series: mpi_job and rank, the
// Slurm job and step when the identity names them, and the pid when the
// job or the rank is unknown or shared with another process (so that two
// such processes never make the same series).
func rankLabels(job string, r agg.Rank, id identity.Identity, shared bool) []metrics.Label {
	labels := []metrics.Label{{Name: labelJob, Value: job}, {Name: labelRank, Value: r.Rank}}
	sj, ss := slurmOf(id)
	if sj != "" {
		labels = append(labels, metrics.Label{Name: labelSlurmJob, Value: sj})
	}
	if ss != "" {
		labels = append(labels, metrics.Label{Name: labelSlurmStep, Value: ss})
	}
	if shared || anonymous(job, r.Rank) {
		labels = append(labels, metrics.Label{Name: labelPID, Value: strconv.Itoa(r.PID)})
	}
	return labels
}

// anonymous reports whether a process's job or rank is not known: no job
// (identity.Unknown, or a launcher job unknown inside a Slurm allocation,
// "<allocation>/?") or no rank.
func anonymous(job, rank string) bool {
	return job == "" || job == identity.Unknown || strings.HasSuffix(job, "/"+identity.Unknown) ||
		rank == "" || rank == identity.Unknown
}

// slurmOf returns the Slurm job and step ids that id's job names, per
// package identity's decision table: a task of srun (launcher slurm) is
// the job "<SLURM_JOB_ID>.<SLURM_STEP_ID>"; Open MPI's and hydra's own job
// inside an allocation is "<SLURM_JOB_ID>/<job>", whose step is not the
// ranks' own, so only the job is returned. Either is "" when not known.
// The job of another PMIx launcher (launcher "") is its namespace, which
// may hold a slash of its own: no Slurm id is read from it.
func slurmOf(id identity.Identity) (job, step string) {
	switch id.Launcher {
	case identity.LauncherSlurm:
		if j, s, ok := strings.Cut(id.Job, "."); ok && text.IsDigits(j) && text.IsDigits(s) {
			return j, s
		}
	case identity.LauncherOpenMPI, identity.LauncherHydra:
		if j, _, ok := strings.Cut(id.Job, "/"); ok && text.IsDigits(j) {
			return j, ""
		}
	}
	return "", ""
}
