package agent

import (
	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/kernel"
	"github.com/mpiprobe/mpiprobe/internal/metrics"
)

// collect builds the metric families from the agent's state. Finished jobs
// stay until MetricsTTL after their end, which bounds the label values.
func (a *agent) collect() []metrics.Family {
	a.mu.Lock()
	defer a.mu.Unlock()
	events := metrics.Family{Name: "mpiprobe_events_total", Kind: metrics.Counter,
		Help: "Unusual MPI library events counted, per job, rank and catalog event."}
	initT := metrics.Family{Name: "mpiprobe_mpi_init_seconds", Kind: metrics.Gauge,
		Help: "Time each rank spent in MPI_Init or MPI_Init_thread."}
	modex := metrics.Family{Name: "mpiprobe_modex_seconds", Kind: metrics.Gauge,
		Help: "Part of MPI_Init spent exchanging addresses (PMIx fence or UCX address exchange)."}
	var activeJobs, activeRanks float64
	for _, j := range a.t.jobs {
		sum := j.final
		if sum == nil {
			s := a.summaryOf(j)
			sum = &s
			activeJobs++
		}
		for _, job := range sum.Jobs {
			for _, r := range job.Ranks {
				labels := []metrics.Label{{Name: "host", Value: r.Host}, {Name: "job", Value: job.ID}, {Name: "rank", Value: r.Rank}}
				if r.End.Kind == agg.Running {
					activeRanks++
				}
				for _, e := range r.Events {
					events.Samples = append(events.Samples, metrics.Sample{
						Labels: append(append([]metrics.Label(nil), labels...), metrics.Label{Name: "event", Value: e.Event}),
						Value:  float64(e.Count)})
				}
				if r.Startup.Init > 0 {
					initT.Samples = append(initT.Samples, metrics.Sample{Labels: labels, Value: r.Startup.Init.Seconds()})
				}
				if r.Startup.Modex > 0 {
					modex.Samples = append(modex.Samples, metrics.Sample{Labels: labels, Value: r.Startup.Modex.Seconds()})
				}
			}
		}
	}
	unavailable := map[string]float64{}
	for _, st := range a.att.Status() {
		if !st.Attached {
			unavailable[st.Event]++
		}
	}
	unav := metrics.Family{Name: "mpiprobe_events_unavailable", Kind: metrics.Gauge,
		Help: "Library files in which a catalog event could not be attached (symbols missing in that build)."}
	for _, e := range a.cat.Events {
		unav.Samples = append(unav.Samples, metrics.Sample{Labels: []metrics.Label{{Name: "event", Value: e.ID}}, Value: unavailable[e.ID]})
	}
	drops := metrics.Family{Name: "mpiprobe_map_drops_total", Kind: metrics.Counter,
		Help: "Updates the BPF side could not record because a map was full."}
	for i, what := range kernel.DropReasons() {
		drops.Samples = append(drops.Samples, metrics.Sample{Labels: []metrics.Label{{Name: "what", Value: what}}, Value: float64(a.drops[i])})
	}
	gauge := func(name, help string, v float64) metrics.Family {
		return metrics.Family{Name: name, Help: help, Kind: metrics.Gauge, Samples: []metrics.Sample{{Value: v}}}
	}
	return []metrics.Family{
		events, initT, modex, unav, drops,
		gauge("mpiprobe_jobs_active", "MPI jobs with a running rank on this node.", activeJobs),
		gauge("mpiprobe_ranks_active", "Running MPI processes traced on this node.", activeRanks),
		{Name: "mpiprobe_jobs_finished_total", Kind: metrics.Counter, Help: "MPI jobs whose summary was written since the state directory was created.",
			Samples: []metrics.Sample{{Value: float64(a.finished)}}},
		gauge("mpiprobe_libraries_attached", "MPI library files with probes attached.", float64(len(a.files))),
		gauge("mpiprobe_probes_attached", "Probe links attached (pinned) by the agent.", float64(a.k.pinnedLinks())),
	}
}
