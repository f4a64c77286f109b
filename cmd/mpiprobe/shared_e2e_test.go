package main

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/jobstore"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/internal/report"
)

// sharedRun is one real agent with --shared-dir (through shared_dir in
// its configuration file) that traces one real flood job.
type sharedRun struct {
	id    string         // the job id
	ranks []int          // the ranks' pids
	local agentSummary   // the agent's local summary of the job
	part  report.Part    // its part in the shared directory, final
	want  map[int]uint64 // each rank's events, all counted, as the local summary has them
}

// runSharedAgent starts an agent writing parts to shared, runs a flood job
// of rounds rounds of impl (Open MPI or MPICH) under it (env before the
// launcher), waits for the job's final part and stops the agent.
func runSharedAgent(t *testing.T, bin, shared string, impl mpitest.Impl, rounds int, env ...string) sharedRun {
	t.Helper()
	flood := mpitest.Build(t, impl, "flood")
	d := mpitest.NewAgentDirs(t)
	cfg, err := os.ReadFile(d.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.Config, append(cfg, "shared_dir = "+shared+"\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	ag := mpitest.StartAgent(t, bin, d, "")
	time.Sleep(time.Second) // the agent attaches to new processes; give it its start
	var mca []string
	if impl.Name == "openmpi" {
		mca = floodMCA(true)
	}
	argv := impl.Command(2, mca, flood, "-n", strconv.Itoa(floodMessages), "-d", "600", "-r", strconv.Itoa(rounds))
	if len(env) > 0 {
		argv = slices.Concat([]string{"env"}, env, argv)
	}
	job := mpitest.StartJob(t, argv, flood, 2, impl.Lib)
	job.Wait(t)
	run := sharedRun{ranks: job.Ranks, local: finishedSummaries(t, d, ag, job.Ranks)[0], want: map[int]uint64{}}
	run.id = run.local.Jobs[0].Job
	for _, r := range run.local.Jobs[0].Ranks {
		for _, e := range r.Events {
			run.want[r.PID] += e.Count
		}
	}
	host, _ := os.Hostname()
	path := jobstore.Shared{Dir: shared}.PartPath(jobstore.Key(run.id), host)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if data, err := os.ReadFile(path); err == nil {
			if run.part, err = report.ReadPart(bytes.NewReader(data)); err != nil {
				t.Fatalf("the agent's part %s: %v", path, err)
			}
			if run.part.Final {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no final part at %s 30 s after the job ended; agent log:\n%s", path, ag.Log(t))
		}
		time.Sleep(200 * time.Millisecond)
	}
	ag.Stop(t, syscall.SIGTERM)
	return run
}

// TestSharedDirE2E runs two real agents, one after the other, each with a
// real flood job (Open MPI's mpirun, then MPICH's hydra), writing their
// parts to one shared directory; `report --job J --shared-dir` gives each
// job exactly its own ranks, with their hosts and the counts of the
// agent's local summary (for Open MPI the known 2 rounds x (messages -
// free list) within 2%), nothing of the other job. The first job's ranks
// say a Slurm node list naming two nodes that wrote no part: its summary
// is partial and names them; the second job's launcher (hydra) gives
// none, which the summary says.
//
// TestClusterSharedSummary merges the parts of one job from several
// (simulated) nodes.
func TestSharedDirE2E(t *testing.T) {
	ompi, mpich := mpitest.OpenMPI(), mpitest.MPICH()
	mpitest.RequireE2E(t, ompi, mpich)
	bin := mpitest.BuildMpiprobe(t)
	shared := t.TempDir()
	host, _ := os.Hostname()
	runs := []sharedRun{
		runSharedAgent(t, bin, shared, ompi, 2, "SLURM_STEP_NODELIST="+host+",ghost[1-2]"),
		runSharedAgent(t, bin, shared, mpich, 1),
	}
	if runs[0].id == runs[1].id {
		t.Fatalf("the two jobs have one id %s", runs[0].id)
	}
	if runs[0].part.NodeList != host+",ghost[1-2]" || runs[0].part.NodeListFrom != "SLURM_STEP_NODELIST" || runs[1].part.NodeList != "" {
		t.Errorf("node lists of the parts: %q from %q, and %q; want the first job's Slurm list, none for the second",
			runs[0].part.NodeList, runs[0].part.NodeListFrom, runs[1].part.NodeList)
	}
	doc := jsonDocKinds(t)
	for i, run := range runs {
		code, out, stderr := runOutput(t, bin, nil, "report", "--job", run.id, "--shared-dir", shared, "--json", "--save")
		if code != 0 {
			t.Fatalf("report --job %s --shared-dir: exit %d\n%s", run.id, code, stderr)
		}
		checkJSONStyle(t, doc, "summary", "report --shared-dir --json", out)
		var got struct {
			agentSummary
			Hosts  []string `json:"hosts"`
			Shared struct {
				Partial bool     `json:"partial"`
				Missing []string `json:"missing_nodes"`
				Parts   []struct {
					Node  string `json:"node"`
					Final bool   `json:"final"`
				} `json:"parts"`
				Skipped []any `json:"skipped"`
			} `json:"shared"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Jobs) != 1 || got.Jobs[0].Job != run.id || len(got.Jobs[0].Ranks) != 2 {
			t.Fatalf("job %s: merged %+v, want its 2 ranks only", run.id, got.Jobs)
		}
		var all uint64
		for _, r := range got.Jobs[0].Ranks {
			var n uint64
			for _, e := range r.Events {
				n += e.Count
			}
			all += n
			if !slices.Contains(run.ranks, r.PID) || r.Host != host || n != run.want[r.PID] {
				t.Errorf("job %s: rank %s pid %d on %q with %d events; want one of pids %v on %q with the local summary's %d",
					run.id, r.Rank, r.PID, r.Host, n, run.ranks, host, run.want[r.PID])
			}
		}
		if i == 0 {
			if total, want := got.total("ob1.send_pending.new"), uint64(2*(floodMessages-freeListMax)); !withinTolerance(total, want) {
				t.Errorf("job %s: %d queued sends, want %d within 2%%", run.id, total, want)
			}
		}
		if all == 0 {
			t.Errorf("job %s: no event counted", run.id)
		}
		if len(got.Shared.Parts) != 1 || got.Shared.Parts[0].Node != host || !got.Shared.Parts[0].Final || len(got.Shared.Skipped) != 0 {
			t.Errorf("job %s: parts %+v skipped %v, want this node's final part", run.id, got.Shared.Parts, got.Shared.Skipped)
		}
		if i == 0 && (!got.Shared.Partial || !slices.Equal(got.Shared.Missing, []string{"ghost1", "ghost2"})) {
			t.Errorf("job %s: partial %v, missing %q; want ghost1 and ghost2 missing", run.id, got.Shared.Partial, got.Shared.Missing)
		}
		if i == 1 && (got.Shared.Partial || len(got.Shared.Missing) != 0) {
			t.Errorf("job %s: partial %v, missing %q; want whole (no node list to miss)", run.id, got.Shared.Partial, got.Shared.Missing)
		}
		if saved, err := os.ReadFile(jobstore.Shared{Dir: shared}.JobDir(run.id) + "/" + jobstore.SummaryName); err != nil || string(saved) != out {
			t.Errorf("job %s: --save stored %d bytes (%v), want what --json printed", run.id, len(saved), err)
		}

		code, table, stderr := runOutput(t, bin, nil, "report", "--job", run.id, "--shared-dir", shared)
		verdict := "Node list unknown"
		if i == 0 {
			verdict = "PARTIAL: 2 of the 3 nodes of the job's node list (SLURM_STEP_NODELIST) wrote no part: ghost1, ghost2"
		}
		if fi, err := os.Stat(jobstore.Shared{Dir: shared}.PartPath(jobstore.Key(run.id), host)); err == nil {
			t.Logf("job %s: part of %d bytes; report --shared-dir:\n%s", run.id, fi.Size(), table)
		}
		if code != 0 || !strings.Contains(table, "Job "+run.id) || !strings.Contains(table, verdict) {
			t.Errorf("report --job %s --shared-dir: exit %d, want a table saying %q:\n%s%s", run.id, code, verdict, table, stderr)
		}
	}
}
