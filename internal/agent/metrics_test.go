package agent

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/kernel"
	"github.com/mpiprobe/mpiprobe/internal/metrics"
	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// rank is one process of a test job.
type rank struct {
	pid     int
	rank    string
	id      identity.Identity
	ended   bool
	init    time.Duration
	events  []agg.EventTotal
	noIdent bool // the process record is gone (pid reused)
	mpi     mpiabi.Flavour
}

// job builds the metrics view of one job of ranks.
func job(id string, ranks ...rank) jobMetrics {
	jm := jobMetrics{ids: map[int]identity.Identity{}, mpi: map[int]mpiabi.Flavour{}}
	j := agg.Job{ID: id}
	for _, r := range ranks {
		ar := agg.Rank{Rank: r.rank, PID: r.pid, Events: r.events, Startup: agg.Startup{Init: r.init}}
		if r.ended {
			ar.End.Kind = agg.Exited
		}
		j.Ranks = append(j.Ranks, ar)
		if !r.noIdent {
			jm.ids[r.pid] = r.id
			jm.mpi[r.pid] = r.mpi
		}
	}
	jm.sum = agg.Summary{Host: "vm", Jobs: []agg.Job{j}}
	return jm
}

func ev(event string, n uint64) agg.EventTotal { return agg.EventTotal{Event: event, Count: n} }

// page fills a page from st and returns its samples, after checking it
// with promtool; log receives the collector's problems.
func page(t *testing.T, st metricsState, maxSeries int, log *bytes.Buffer) map[string]float64 {
	t.Helper()
	fams := newFamilies()
	c := metrics.NewCollector(func(p *metrics.Page) { fams.fill(p, st) }, maxSeries, slog.New(slog.NewTextHandler(log, nil)))
	reg, err := metrics.NewRegistry(c)
	if err != nil {
		t.Fatal(err)
	}
	text := mpitest.GetPage(t, metrics.Handler(reg, nil))
	mpitest.CheckWithPromtool(t, []byte(text))
	return mpitest.ParseMetrics(t, text)
}

func TestMetricsPage(t *testing.T) {
	const (
		evNew   = "ob1.send_pending.new"
		evDrain = "ob1.send_pending.drain"
		evErr   = "mpi.error"
	)
	base := metricsState{
		events: []eventFiles{
			{id: evNew, attached: 2},
			{id: evDrain, attached: 1, unavailable: 1},
			{id: evErr, unavailable: 3},
		},
		// As the catalog's ProducedBy would say: ob1's events are Open
		// MPI's; a process of an unknown MPI gets every event.
		produced: map[mpiabi.Flavour][]string{
			mpiabi.NoFlavour: {evNew, evDrain, evErr},
			mpiabi.OpenMPI:   {evNew, evDrain, evErr},
			mpiabi.MPICH:     {evErr},
		},
		drops:    []uint64{0, 0, 5, 0},
		finished: 7, libs: 3, pins: 40,
	}
	srun := identity.FromEnv(map[string]string{"SLURM_JOB_ID": "812", "SLURM_STEP_ID": "3", "SLURM_PROCID": "1", "PMI_RANK": "1", "PMI_SIZE": "2"})
	inAlloc := identity.FromEnv(map[string]string{"SLURM_JOB_ID": "812", "OMPI_COMM_WORLD_RANK": "0", "PMIX_NAMESPACE": "prterun-vm-99@1"})
	series := mpitest.SeriesKey
	tests := []struct {
		name string
		jobs []jobMetrics
		want map[string]float64
		// absent are series that must not be on the page.
		absent []string
	}{
		{
			name: "two singletons without a job id",
			jobs: []jobMetrics{
				job("?", rank{pid: 101, rank: "?", init: time.Second}),
				job("?", rank{pid: 102, rank: "?", init: 2 * time.Second, events: []agg.EventTotal{ev(evNew, 4)}}),
			},
			want: map[string]float64{
				series("mpiprobe_mpi_init_seconds", "mpi_job", "?", "rank", "?", "pid", "101"):               1,
				series("mpiprobe_mpi_init_seconds", "mpi_job", "?", "rank", "?", "pid", "102"):               2,
				series("mpiprobe_events_total", "mpi_job", "?", "rank", "?", "pid", "101", "event", evNew):   0,
				series("mpiprobe_events_total", "mpi_job", "?", "rank", "?", "pid", "102", "event", evNew):   4,
				series("mpiprobe_events_total", "mpi_job", "?", "rank", "?", "pid", "102", "event", evDrain): 0,
				series("mpiprobe_jobs_active"):  2,
				series("mpiprobe_ranks_active"): 2,
			},
		},
		{
			// Whether an event is attached on the node does not matter (a
			// restarted agent does not attach the files its predecessor
			// did): mpi.error is attached nowhere, yet starts at 0.
			name: "counters start at 0 for the events the rank's MPI produces, details are summed",
			jobs: []jobMetrics{job("4242",
				rank{pid: 10, rank: "0", mpi: mpiabi.OpenMPI, events: []agg.EventTotal{ev(evErr, 1), ev(evErr, 2), ev(evNew, 9)}},
				rank{pid: 11, rank: "1", mpi: mpiabi.OpenMPI, ended: true},
			)},
			want: map[string]float64{
				series("mpiprobe_events_total", "mpi_job", "4242", "rank", "0", "event", evNew):   9,
				series("mpiprobe_events_total", "mpi_job", "4242", "rank", "0", "event", evDrain): 0,
				series("mpiprobe_events_total", "mpi_job", "4242", "rank", "0", "event", evErr):   3,
				series("mpiprobe_events_total", "mpi_job", "4242", "rank", "1", "event", evNew):   0,
				series("mpiprobe_events_total", "mpi_job", "4242", "rank", "1", "event", evDrain): 0,
				series("mpiprobe_events_total", "mpi_job", "4242", "rank", "1", "event", evErr):   0,
				series("mpiprobe_jobs_active"):  1,
				series("mpiprobe_ranks_active"): 1,
			},
		},
		{
			name: "an MPICH rank gets no series of Open MPI's events, unless counted",
			jobs: []jobMetrics{job("hydra-7",
				rank{pid: 60, rank: "0", mpi: mpiabi.MPICH},
				rank{pid: 61, rank: "1", mpi: mpiabi.MPICH, events: []agg.EventTotal{ev(evNew, 2)}},
			)},
			want: map[string]float64{
				series("mpiprobe_events_total", "mpi_job", "hydra-7", "rank", "0", "event", evErr): 0,
				series("mpiprobe_events_total", "mpi_job", "hydra-7", "rank", "1", "event", evErr): 0,
				series("mpiprobe_events_total", "mpi_job", "hydra-7", "rank", "1", "event", evNew): 2,
			},
			absent: []string{
				series("mpiprobe_events_total", "mpi_job", "hydra-7", "rank", "0", "event", evNew),
				series("mpiprobe_events_total", "mpi_job", "hydra-7", "rank", "0", "event", evDrain),
				series("mpiprobe_events_total", "mpi_job", "hydra-7", "rank", "1", "event", evDrain),
			},
		},
		{
			name: "two processes claim one rank: both keep their series, by pid",
			jobs: []jobMetrics{job("812/?",
				rank{pid: 20, rank: "0", init: time.Second},
				rank{pid: 21, rank: "0", init: 3 * time.Second},
			), job("77", rank{pid: 30, rank: "0", init: time.Second}, rank{pid: 31, rank: "0", ended: true, init: time.Second})},
			want: map[string]float64{
				series("mpiprobe_mpi_init_seconds", "mpi_job", "812/?", "rank", "0", "pid", "20"): 1,
				series("mpiprobe_mpi_init_seconds", "mpi_job", "812/?", "rank", "0", "pid", "21"): 3,
				series("mpiprobe_mpi_init_seconds", "mpi_job", "77", "rank", "0", "pid", "30"):    1,
				series("mpiprobe_mpi_init_seconds", "mpi_job", "77", "rank", "0", "pid", "31"):    1,
			},
		},
		{
			name: "Slurm job and step where the identity names them",
			jobs: []jobMetrics{
				job(srun.Job, rank{pid: 40, rank: "1", id: srun, init: time.Second}),
				job(inAlloc.Job, rank{pid: 41, rank: "0", id: inAlloc, init: time.Second}),
				job("812.4", rank{pid: 42, rank: "0", noIdent: true, init: time.Second}),
			},
			want: map[string]float64{
				series("mpiprobe_mpi_init_seconds", "mpi_job", "812.3", "rank", "1", "slurm_job", "812", "slurm_step", "3"): 1,
				series("mpiprobe_mpi_init_seconds", "mpi_job", "812/prterun-vm-99@1", "rank", "0", "slurm_job", "812"):      1,
				series("mpiprobe_mpi_init_seconds", "mpi_job", "812.4", "rank", "0"):                                        1,
			},
		},
		{
			name: "job ids with quotes, newlines and invalid UTF-8",
			jobs: []jobMetrics{
				job("a\"b\\c\nd", rank{pid: 50, rank: "0", init: time.Second}),
				job("bad\xff", rank{pid: 51, rank: "0", init: time.Second}),
				job("bad\xfe", rank{pid: 52, rank: "0", init: 2 * time.Second}),
			},
			want: map[string]float64{
				// Escaped in place (text.Escape): the newline and the
				// invalid bytes are written out, so bad\xff and bad\xfe
				// stay two jobs.
				series("mpiprobe_mpi_init_seconds", "mpi_job", `a"b\c\nd`, "rank", "0"): 1,
				series("mpiprobe_mpi_init_seconds", "mpi_job", `bad\xff`, "rank", "0"):  1,
				series("mpiprobe_mpi_init_seconds", "mpi_job", `bad\xfe`, "rank", "0"):  2,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := base
			st.jobs = tt.jobs
			var log bytes.Buffer
			got := page(t, st, 0, &log)
			want := map[string]float64{
				series("mpiprobe_jobs_finished_total"):                          7,
				series("mpiprobe_libraries_attached"):                           3,
				series("mpiprobe_probes_attached"):                              40,
				series("mpiprobe_events_unavailable", "event", evNew):           0,
				series("mpiprobe_events_unavailable", "event", evDrain):         1,
				series("mpiprobe_events_unavailable", "event", evErr):           3,
				series("mpiprobe_map_drops_total", "reason", "counts_full"):     0,
				series("mpiprobe_map_drops_total", "reason", "traced_full"):     0,
				series("mpiprobe_map_drops_total", "reason", "ring_full"):       5,
				series("mpiprobe_map_drops_total", "reason", "comm_slots_full"): 0,
				series(metrics.DroppedName, "reason", metrics.DroppedCap):       0,
				series(metrics.DroppedName, "reason", metrics.DroppedInvalid):   0,
			}
			for k, v := range tt.want {
				want[k] = v
			}
			for k, v := range want {
				if g, ok := got[k]; !ok || g != v {
					t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
				}
			}
			for _, k := range tt.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s is on the page", k)
				}
			}
			// Every family of the agent is on the page, and no other
			// mpiprobe_ family.
			names := MetricNames()
			for k := range got {
				name, _, _ := strings.Cut(k, "{")
				if strings.HasPrefix(name, "mpiprobe_") && !slices.Contains(names, name) {
					t.Errorf("%s is not in MetricNames", name)
				}
			}
			for _, name := range names {
				found := false
				for k := range got {
					found = found || strings.HasPrefix(k, name+"{")
				}
				if !found && name != "mpiprobe_mpi_init_seconds" && name != "mpiprobe_modex_seconds" && name != "mpiprobe_events_total" {
					t.Errorf("%s is not on the page", name)
				}
			}
		})
	}
}

// TestMetricsCap: the node's gauges come before the ranks, so the cap
// cuts ranks, and says how many series it cut.
func TestMetricsCap(t *testing.T) {
	st := metricsState{events: []eventFiles{{id: "ob1.send_pending.new", attached: 1}}, drops: make([]uint64, 4),
		produced: map[mpiabi.Flavour][]string{mpiabi.NoFlavour: {"ob1.send_pending.new"}}}
	for pid := range 10 {
		st.jobs = append(st.jobs, job("?", rank{pid: 100 + pid, rank: "?", init: time.Second}))
	}
	var log bytes.Buffer
	got := page(t, st, 12, &log)
	// 5 node gauges, 4 drop reasons and 1 unavailable event: 2 series left
	// for the 10 ranks' 20 (events and MPI_Init).
	if v := got[mpitest.SeriesKey(metrics.DroppedName, "reason", metrics.DroppedCap)]; v != 18 {
		t.Errorf("%v series cut, want 18", v)
	}
	if v, ok := got[mpitest.SeriesKey("mpiprobe_ranks_active")]; !ok || v != 10 {
		t.Errorf("mpiprobe_ranks_active = %v (present %v), want 10", v, ok)
	}
}

// TestDropReasons: the short reason labels name what session's drop
// sentences say, index by index.
func TestDropReasons(t *testing.T) {
	words := []string{"counts map", "traced map", "ring buffer", "communicator slot"}
	reasons := kernel.DropReasons()
	if len(reasons) != len(words) {
		t.Fatalf("session has %d drop reasons, the metrics name %d: add a label to dropReason", len(reasons), len(words))
	}
	seen := map[string]bool{}
	for i, what := range reasons {
		if !strings.Contains(what, words[i]) {
			t.Errorf("drop %d is %q, but its label %q was chosen for %q", i, what, dropReason(i), words[i])
		}
		if r := dropReason(i); seen[r] || strings.HasPrefix(r, "reason_") {
			t.Errorf("drop %d: label %q repeats or is a fallback", i, r)
		}
		seen[dropReason(i)] = true
	}
	if !strings.Contains(newFamilies().drops.Help, "ring_full = process notifications") {
		t.Errorf("the help text does not explain the reasons: %q", newFamilies().drops.Help)
	}
}

func TestSlurmOf(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		job, step string
	}{
		{"srun --mpi=pmi2", map[string]string{"SLURM_JOB_ID": "812", "SLURM_STEP_ID": "3", "SLURM_PROCID": "1", "PMI_RANK": "1"}, "812", "3"},
		{"srun --mpi=pmix", map[string]string{"PMIX_NAMESPACE": "slurm.pmix.900.0", "PMIX_RANK": "2"}, "900", "0"},
		{"mpirun in an allocation", map[string]string{"SLURM_JOB_ID": "812", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "OMPI_COMM_WORLD_RANK": "5", "PMIX_NAMESPACE": "prterun-x-1@1"}, "812", ""},
		{"hydra in an allocation, no mpiexec", map[string]string{"SLURM_JOB_ID": "812", "PMI_RANK": "0", "MPI_LOCALRANKID": "0"}, "812", ""},
		{"mpirun, no Slurm", map[string]string{"OMPI_COMM_WORLD_RANK": "0", "PMIX_NAMESPACE": "12.34"}, "", ""},
		{"another PMIx launcher, namespace with a slash", map[string]string{"PMIX_RANK": "0", "PMIX_NAMESPACE": "77/x"}, "", ""},
		{"another PMIx launcher in an allocation", map[string]string{"SLURM_JOB_ID": "812", "PMIX_RANK": "0", "PMIX_NAMESPACE": "ns"}, "", ""},
		{"singleton", map[string]string{}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := identity.FromEnv(tt.env)
			job, step := slurmOf(id)
			if job != tt.job || step != tt.step {
				t.Errorf("identity %+v: Slurm job %q step %q, want %q %q", id, job, step, tt.job, tt.step)
			}
		})
	}
}
