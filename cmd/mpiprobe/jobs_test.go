package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/jobstore"
	"github.com/mpiprobe/mpiprobe/internal/report"
)

var jobsT0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.Local)

// jobsRank is a rank of a test summary: its number, pid and end.
type jobsRank struct {
	rank string
	pid  int
	end  agg.End
}

// jobsSummary is what a node's agent writes for job on host: the ranks,
// each with one event counted pid times, and startup times.
func jobsSummary(host, job string, ranks ...jobsRank) agg.Summary {
	var procs []agg.Proc
	var samples []agg.Sample
	for _, r := range ranks {
		procs = append(procs, agg.Proc{PID: r.pid, Comm: "app", End: r.end,
			Identity: identity.Identity{Host: host, Job: job, Rank: r.rank},
			Startup:  agg.Startup{Init: time.Duration(r.pid) * time.Millisecond, Finalize: time.Millisecond}})
		samples = append(samples, agg.Sample{PID: uint32(r.pid), Event: "ob1.send_pending.new", Count: uint64(r.pid),
			First: jobsT0.Add(time.Second), Last: jobsT0.Add(2 * time.Second)})
	}
	info := func(string, string, uint64) (agg.EventInfo, bool) {
		return agg.EventInfo{Message: "send queued as pending"}, true
	}
	return agg.Build(host, jobsT0, jobsT0.Add(time.Minute), procs, samples, info, nil)
}

// jobsStore writes s as job's summary in stateDir, last modified at mod.
func jobsStore(t *testing.T, stateDir, job string, s agg.Summary, mod time.Time) string {
	t.Helper()
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, s); err != nil {
		t.Fatal(err)
	}
	return jobsStoreRaw(t, stateDir, job, buf.Bytes(), mod)
}

func jobsStoreRaw(t *testing.T, stateDir, job string, data []byte, mod time.Time) string {
	t.Helper()
	st := jobstore.Store{Dir: jobstore.JobsDir(stateDir)}
	if err := st.Save(job, data); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(st.Path(job), mod, mod); err != nil {
		t.Fatal(err)
	}
	return st.Path(job)
}

// jobsRun runs the subcommand main ("jobs" or "report") and returns its
// exit code, stdout and stderr.
func jobsRun(main string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := execute(context.Background(), append([]string{main}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// jobsState is a state dir with job 100 finished (3 exited, one of them
// with 1, 1 killed), job 200 running, and job 300's file corrupt, newest first:
// 300, 200, 100.
func jobsState(t *testing.T) (dir string, files map[string]string) {
	dir = t.TempDir()
	exited := func(code int) agg.End { return agg.End{Kind: agg.Exited, Code: code, At: jobsT0.Add(time.Minute)} }
	files = map[string]string{
		"100": jobsStore(t, dir, "100", jobsSummary("n1", "100",
			jobsRank{"0", 10, exited(0)}, jobsRank{"1", 11, exited(0)}, jobsRank{"2", 12, exited(1)},
			jobsRank{"3", 13, agg.End{Kind: agg.Signaled, Signal: 9, At: jobsT0.Add(30 * time.Second)}}),
			jobsT0.Add(time.Hour)),
		"200": jobsStore(t, dir, "200", jobsSummary("n1", "200",
			jobsRank{"0", 1000, agg.End{}}, jobsRank{"1", 1001, exited(0)}),
			jobsT0.Add(2*time.Hour)),
		"300": jobsStoreRaw(t, dir, "300", []byte(`{"host": "n1", "jobs": [`), jobsT0.Add(3*time.Hour)),
	}
	return dir, files
}

func TestJobsList(t *testing.T) {
	dir, files := jobsState(t)
	code, out, errs := jobsRun("jobs", "--state-dir", dir)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	clock := func(d time.Duration) string { return jobsT0.Add(d).Format("2006-01-02 15:04:05") }
	want := "┌─────┬────────────┬───────┬────────────────────────────────────────────────┬────────┬─────────────────────┬─────────────────────┐\n" +
		"│ JOB │   STATE    │ RANKS │                     ENDED                      │ EVENTS │        START        │     LAST UPDATE     │\n" +
		"├─────┼────────────┼───────┼────────────────────────────────────────────────┼────────┼─────────────────────┼─────────────────────┤\n" +
		"│ 300 │ unreadable │     - │ -                                              │      - │ -                   │ " + clock(3*time.Hour) + " │\n" +
		"│ 200 │ running    │     2 │ 1 running, 1 exited                            │  2,001 │ " + clock(0) + " │ " + clock(2*time.Hour) + " │\n" +
		"│ 100 │ finished   │     4 │ 2 exited, 1 exited with 1, 1 killed by SIGKILL │     46 │ " + clock(0) + " │ " + clock(time.Hour) + " │\n" +
		"└─────┴────────────┴───────┴────────────────────────────────────────────────┴────────┴─────────────────────┴─────────────────────┘\n" +
		"\nUnreadable summaries:\n" +
		"  300: " + files["300"] + ": report: read summary: unexpected end of JSON input\n"
	if out != want {
		t.Errorf("output =\n%s\nwant\n%s", out, want)
	}

	code, out, errs = jobsRun("jobs", "--json", "--state-dir", dir)
	if code != 0 || errs != "" {
		t.Fatalf("--json: exit %d, stderr %q", code, errs)
	}
	type ended struct {
		State  string `json:"state"`
		Code   *int   `json:"code"`
		Signal *int   `json:"signal"`
		Count  int    `json:"count"`
	}
	var doc struct {
		SchemaVersion int    `json:"schema_version"`
		Kind          string `json:"kind"`
		Jobs          []struct {
			Job        string    `json:"job"`
			File       string    `json:"file"`
			State      string    `json:"state"`
			RankCount  *int      `json:"rank_count"`
			Ended      []ended   `json:"ended"`
			EndedText  string    `json:"ended_text"`
			EventCount *uint64   `json:"event_count"`
			Start      time.Time `json:"start"`
			LastUpdate time.Time `json:"last_update"`
			Error      string    `json:"error"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.SchemaVersion != 1 || doc.Kind != "jobs" || len(doc.Jobs) != 3 {
		t.Fatalf("schema_version %d, kind %q, %d jobs, want 1, jobs, 3:\n%s", doc.SchemaVersion, doc.Kind, len(doc.Jobs), out)
	}
	r := doc.Jobs[2]
	one, zero, kill := 1, 0, 9
	wantEnded := []ended{{"exited", &zero, nil, 2}, {"exited", &one, nil, 1}, {"signaled", nil, &kill, 1}}
	if r.Job != "100" || r.File != files["100"] || r.State != "finished" || r.RankCount == nil || *r.RankCount != 4 ||
		r.EventCount == nil || *r.EventCount != 46 || !reflect.DeepEqual(r.Ended, wantEnded) ||
		r.EndedText != "2 exited, 1 exited with 1, 1 killed by SIGKILL" || !r.Start.Equal(jobsT0) || !r.LastUpdate.Equal(jobsT0.Add(time.Hour)) || r.Error != "" {
		t.Errorf("row of job 100 = %+v", r)
	}
	if u := doc.Jobs[0]; u.State != "unreadable" || !strings.Contains(u.Error, "unexpected end of JSON input") || u.RankCount != nil || u.EventCount != nil || u.Ended == nil {
		t.Errorf("row of job 300 = %+v", u)
	}
	for _, key := range []string{`"job"`, `"file"`, `"state"`, `"rank_count": null`, `"ended": []`, `"event_count": null`, `"start"`, `"last_update"`, `"error"`} {
		if !strings.Contains(out, key) {
			t.Errorf("json lacks %s", key)
		}
	}
}

func TestJobsListEmpty(t *testing.T) {
	// A state dir without jobs/ (no job seen yet), and one with jobs/ empty.
	for name, dir := range map[string]string{"no jobs dir": t.TempDir(), "empty": t.TempDir()} {
		if name == "empty" {
			if err := os.Mkdir(jobstore.JobsDir(dir), 0o750); err != nil {
				t.Fatal(err)
			}
		}
		code, out, errs := jobsRun("jobs", "--state-dir", dir)
		want := "No job summaries yet in " + filepath.Join(dir, "jobs") + " (is mpiprobe agent running? systemctl status mpiprobe)\n"
		if code != 0 || out != want || errs != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 0 and %q", name, code, out, errs, want)
		}
		code, out, errs = jobsRun("jobs", "--state-dir", dir, "--json")
		if want := "{\n  \"schema_version\": 1,\n  \"kind\": \"jobs\",\n  \"jobs\": []\n}\n"; code != 0 || out != want || !strings.Contains(errs, "no job summaries yet") {
			t.Errorf("%s --json: exit %d, stdout %q, stderr %q; want 0, %q and a note", name, code, out, errs, want)
		}
	}
}

// TestJobsMissingStateDir: a state dir that does not exist is not an empty
// one: jobs and report fail in one line naming it and where the agent's
// state dir is set.
func TestJobsMissingStateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"jobs", "--state-dir", dir}, "mpiprobe jobs: state dir " + dir + " does not exist: give the agent's state dir with --state-dir DIR (the agent's --state-dir, or state_dir in /etc/mpiprobe/config.conf)\n"},
		{[]string{"jobs", "--json", "--state-dir", dir}, "mpiprobe jobs: state dir " + dir + " does not exist: "},
		{[]string{"report", "--state-dir", dir, "7"}, "mpiprobe report: state dir " + dir + " does not exist: "},
		{[]string{"jobs", "--state-dir", file}, "mpiprobe jobs: state dir " + file + " is not a directory: "},
	} {
		code, out, errs := jobsRun(tc.args[0], tc.args[1:]...)
		if code != 1 || out != "" || !strings.HasPrefix(errs, tc.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 1 and %q", tc.args, code, out, errs, tc.want)
		}
	}
}

func TestJobsReport(t *testing.T) {
	dir, files := jobsState(t)
	stored, err := os.ReadFile(files["100"])
	if err != nil {
		t.Fatal(err)
	}
	sum, err := report.ReadJSON(bytes.NewReader(stored))
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := report.WriteTable(&table, sum); err != nil {
		t.Fatal(err)
	}
	code, out, errs := jobsRun("report", "100", "--state-dir", dir) // flags after the job too
	if code != 0 || errs != "" || out != table.String() {
		t.Errorf("exit %d, stderr %q, output\n%s\nwant\n%s", code, errs, out, table.String())
	}
	for _, want := range []string{"Job 100 on n1 — 4 ranks", "killed by SIGKILL", "Startup (MPI_Init, of which modex; MPI_Finalize):"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	code, out, errs = jobsRun("report", "--json", "--state-dir", dir, "--", "100")
	if code != 0 || errs != "" || out != string(stored) {
		t.Errorf("--json: exit %d, stderr %q, output not the stored file:\n%s", code, errs, out)
	}
}

// jobsNodes writes job 7's summaries of two nodes, two ranks each, as a
// state dir of n1 and a state dir of n2 that also holds job 8.
func jobsNodes(t *testing.T) (n1, n2 string) {
	n1, n2 = t.TempDir(), t.TempDir()
	exited := agg.End{Kind: agg.Exited, At: jobsT0.Add(time.Minute)}
	jobsStore(t, n1, "7", jobsSummary("n1", "7", jobsRank{"0", 100, exited}, jobsRank{"1", 101, exited}), jobsT0)
	jobsStore(t, n2, "7", jobsSummary("n2", "7", jobsRank{"3", 200, exited}, jobsRank{"2", 201, exited}), jobsT0)
	jobsStore(t, n2, "8", jobsSummary("n2", "8", jobsRank{"0", 300, exited}), jobsT0)
	return n1, n2
}

// jobsRanksOf returns "rank/pid" for each process in the processes table
// (RANKS, PIDS, ENDED) of a job's report, ordered by rank and pid: a row's
// rank set and pid list are expanded and paired, the pids being listed in
// rank order. A row whose cells do not pair up is returned as "RANKS/PIDS".
func jobsRanksOf(out string) []string {
	// expand lists "0-2,5" as 0 1 2 5, and "pid 7" as ? (a rank that is
	// not a number); ok is false for what is not such a list.
	expand := func(cell string, pids bool) (items []string, ok bool) {
		for _, part := range strings.Split(cell, ",") {
			if p, found := strings.CutPrefix(part, "pid "); found && !pids {
				if _, err := strconv.Atoi(p); err != nil {
					return nil, false
				}
				items = append(items, identity.Unknown)
				continue
			}
			lo, hi, isRun := strings.Cut(part, "-")
			if !isRun {
				hi = lo
			}
			l, err1 := strconv.Atoi(lo)
			h, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil || h < l {
				return nil, false
			}
			for n := l; n <= h; n++ {
				items = append(items, strconv.Itoa(n))
			}
		}
		return items, true
	}
	type pair struct{ rank, pid string }
	var got []pair
	inProcs := false
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "│") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "│"), "│")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) == 3 && cells[0] == "RANKS" && cells[1] == "PIDS" && cells[2] == "ENDED" {
			inProcs = true
			continue
		}
		if !inProcs || len(cells) != 3 {
			inProcs = false
			continue
		}
		rs, rok := expand(cells[0], false)
		ps, pok := expand(cells[1], true)
		if !rok || !pok || len(rs) != len(ps) {
			got = append(got, pair{cells[0], cells[1]})
			continue
		}
		for i := range rs {
			got = append(got, pair{rs[i], ps[i]})
		}
	}
	// number orders ranks and pids numerically, anything else last.
	number := func(s string) int {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
		return math.MaxInt
	}
	slices.SortStableFunc(got, func(a, b pair) int {
		if c := cmp.Compare(number(a.rank), number(b.rank)); c != 0 {
			return c
		}
		return cmp.Compare(number(a.pid), number(b.pid))
	})
	out2 := make([]string, len(got))
	for i, p := range got {
		out2[i] = p.rank + "/" + p.pid
	}
	return out2
}

func TestJobsMerge(t *testing.T) {
	n1, n2 := jobsNodes(t)
	// A single file copied from n1, and n2's jobs dir.
	copied := filepath.Join(t.TempDir(), "from-n1.json")
	data, err := os.ReadFile(filepath.Join(n1, "jobs", "7.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copied, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--merge", "--job", "7", n1, n2},
		{"--merge", copied, filepath.Join(n2, "jobs"), "--job", "7"},
		{"--merge", "--job", "7", n1, n2, copied}, // n1 twice: its ranks are kept once
	} {
		code, out, errs := jobsRun("report", args...)
		if code != 0 || errs != "" {
			t.Errorf("report %q: exit %d, stderr %q", args, code, errs)
			continue
		}
		if first := strings.SplitN(out, "\n", 2)[0]; first != "mpiprobe on n1,n2, 12:00:00.000 to 12:01:00.000 (1m0s)" {
			t.Errorf("report %q: title %q", args, first)
		}
		if !strings.Contains(out, "\nJob 7 on n1,n2 — 4 ranks\n") {
			t.Errorf("report %q: no header for 4 ranks:\n%s", args, out)
		}
		if got, want := strings.Join(jobsRanksOf(out), " "), "0/100 1/101 2/201 3/200"; got != want {
			t.Errorf("report %q: ranks %s, want %s\n%s", args, got, want, out)
		}
		if !strings.Contains(out, "Totals over all ranks:\n  602  ob1.send_pending.new") {
			t.Errorf("report %q: totals wrong:\n%s", args, out)
		}
	}

	// One job per dir: no --job needed; JSON output.
	code, out, errs := jobsRun("report", "--merge", "--json", n1, copied)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	merged, err := report.ReadJSON(strings.NewReader(out))
	if err != nil || merged.Host != "n1" || len(merged.Jobs) != 1 || len(merged.Jobs[0].Ranks) != 2 {
		t.Errorf("--json: %+v, %v", merged, err)
	}
	// Two nodes: their hosts as a list, never joined.
	code, out, errs = jobsRun("report", "--merge", "--json", "--job", "7", n1, n2)
	if code != 0 || errs != "" || !strings.Contains(out, "\n  \"hosts\": [\n    \"n1\",\n    \"n2\"\n  ],\n") || strings.Contains(out, "n1,n2") {
		t.Errorf("--merge of n1 and n2: exit %d, stderr %q, want hosts [n1, n2]:\n%s", code, errs, out)
	}

	// The same rank on two nodes: both kept, a note on stderr.
	n3 := t.TempDir()
	jobsStore(t, n3, "7", jobsSummary("n3", "7", jobsRank{"1", 500, agg.End{}}), jobsT0)
	code, out, errs = jobsRun("report", "--merge", "--job", "7", n1, n3)
	if code != 0 || errs != "mpiprobe report: note: rank 1 appears on n1 (pid 101) and n3 (pid 500)\n" {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	if got, want := strings.Join(jobsRanksOf(out), " "), "0/100 1/101 1/500"; got != want {
		t.Errorf("ranks %s, want %s", got, want)
	}
}

func TestJobsBadInput(t *testing.T) {
	dir, files := jobsState(t)
	n1, n2 := jobsNodes(t)
	missing := filepath.Join(t.TempDir(), "nowhere")
	other := t.TempDir()
	jobsStore(t, other, "9", jobsSummary("n4", "9", jobsRank{"0", 1, agg.End{}}), jobsT0)
	tests := []struct {
		main string
		args []string
		code int
		want string
	}{
		{"report", []string{"--state-dir", dir, "999"}, 1,
			"mpiprobe report: no summary of job 999 in " + filepath.Join(dir, "jobs") + " (mpiprobe jobs --state-dir " + dir + " lists the jobs there)"},
		{"report", []string{"--state-dir", dir, "a/b"}, 1, `mpiprobe report: no summary of job a/b in `},
		{"report", []string{"--state-dir", dir, "300"}, 1,
			"mpiprobe report: " + files["300"] + ": report: read summary: unexpected end of JSON input"},
		{"report", []string{"--merge", n1, other}, 1,
			"mpiprobe report: agg: merge: the summaries hold 2 jobs (7, 9), not one; give --job JOBID"},
		{"report", []string{"--merge", n1, n2}, 1,
			"mpiprobe report: " + filepath.Join(n2, "jobs") + " holds 2 job summaries (7, 8); give --job JOBID"},
		{"report", []string{"--merge", n1, files["300"]}, 1,
			"mpiprobe report: " + files["300"] + ": report: read summary: unexpected end of JSON input"},
		{"report", []string{"--merge", "--job", "8", n1, n2}, 1,
			"mpiprobe report: " + filepath.Join(n1, "jobs") + ": no summary of job 8 (8.json)"},
		{"report", []string{"--merge", n1, missing}, 1, "mpiprobe report: stat " + missing + ": no such file or directory"},
		{"report", []string{"--merge", t.TempDir()}, 1, "mpiprobe report: "},
		{"report", []string{"--state-dir", dir}, 2, "mpiprobe report: no job: give JOBID (mpiprobe jobs lists them)"},
		{"report", []string{"--state-dir", dir, "100", "200"}, 2, "mpiprobe report: give one JOBID, not 2 (to merge nodes' summaries: --merge)"},
		{"report", []string{"--job", "100", "200"}, 2, "mpiprobe report: two jobs given: 200 and --job 100"},
		{"report", []string{"--merge"}, 2, "mpiprobe report: --merge needs the nodes' state dirs, jobs dirs or .json files"},
		{"report", []string{"--merge", "--state-dir", dir, n1}, 2, "mpiprobe report: --state-dir does not go with --merge"},
		{"jobs", []string{"--state-dir", dir, "100"}, 2, `mpiprobe jobs: unexpected argument "100" (mpiprobe report JOBID shows one job)`},
		{"jobs", []string{"--state-dir", files["100"]}, 1, "mpiprobe jobs: state dir " + files["100"] + " is not a directory: "},
	}
	for _, tc := range tests {
		code, out, errs := jobsRun(tc.main, tc.args...)
		lines := 1 // a usage error (exit 2) adds the hint to the help
		if tc.code == 2 {
			lines = 2
		}
		if code != tc.code || !strings.HasPrefix(errs, tc.want) || strings.Count(errs, "\n") != lines || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and one line starting %q", tc.args, code, out, errs, tc.code, tc.want)
		}
	}
	// Flag errors: one line and the hint, exit 2; -h is the help on stdout, exit 0.
	for _, main := range []string{"jobs", "report"} {
		if code, _, errs := jobsRun(main, "--bogus"); code != 2 || errs != "mpiprobe "+main+": unknown flag: --bogus\nRun 'mpiprobe "+main+" --help' for usage.\n" {
			t.Errorf("%s --bogus: exit %d, stderr %q", main, code, errs)
		}
		if code, out, errs := jobsRun(main, "-h"); code != 0 || errs != "" || !strings.Contains(out, "Usage:\n  mpiprobe "+main) {
			t.Errorf("%s -h: exit %d, stdout %q, stderr %q", main, code, out, errs)
		}
	}
}

// jobsV0 is a job summary as agents stored them before schema_version:
// ranks as strings, the host a string, durations in nanoseconds.
const jobsV0 = `{
  "host": "old1",
  "start": "2025-03-01T12:00:00Z",
  "jobs": [{"job": "50", "ranks": [
    {"rank": "0", "pid": 10, "comm": "app", "host": "old1",
     "end": {"state": "exited", "code": 0, "at": "2025-03-01T12:01:00Z", "text": "exited 0"},
     "events": [{"event": "ob1.send_pending.new", "count": 7, "message": "m", "advice": "a"}],
     "startup": {"init_ns": 2000000000, "modex_ns": 1000000000, "finalize_ns": 3000000}},
    {"rank": "?", "pid": 11, "comm": "app", "host": "old1",
     "end": {"state": "running", "text": "running"}, "events": []}
  ]}],
  "dropped": [],
  "totals": []
}
`

// TestJobsOldStoredFiles: summaries stored before schema_version are
// still listed, shown, merged, and with --json written in the current
// schema (never as stored, which is the old shape).
func TestJobsOldStoredFiles(t *testing.T) {
	dir := t.TempDir()
	jobsStoreRaw(t, dir, "50", []byte(jobsV0), jobsT0)
	code, out, errs := jobsRun("jobs", "--state-dir", dir)
	if code != 0 || errs != "" || !strings.Contains(out, "│ 50  │ running │     2 │ 1 running, 1 exited │      7 │") {
		t.Errorf("jobs: exit %d, stderr %q:\n%s", code, errs, out)
	}
	code, out, errs = jobsRun("report", "--state-dir", dir, "50")
	if code != 0 || errs != "" || !strings.Contains(out, "Job 50 on old1 — 2 ranks") {
		t.Errorf("report: exit %d, stderr %q:\n%s", code, errs, out)
	}
	code, out, errs = jobsRun("report", "--json", "--state-dir", dir, "50")
	if code != 0 || errs != "" {
		t.Fatalf("report --json: exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"{\n  \"schema_version\": 1,\n  \"kind\": \"summary\",\n  \"hosts\": [\n    \"old1\"\n  ],",
		`"rank": 0,`, `"rank": null,`, `"init_seconds": 2,`, `"modex_seconds": 1,`, `"finalize_seconds": 0.003`} {
		if !strings.Contains(out, want) {
			t.Errorf("report --json of an old file lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, `"rank": "`) || strings.Contains(out, "_ns") {
		t.Errorf("report --json of an old file keeps the old shape:\n%s", out)
	}
	n2 := t.TempDir()
	jobsStore(t, n2, "50", jobsSummary("new2", "50", jobsRank{"1", 20, agg.End{}}), jobsT0)
	code, out, errs = jobsRun("report", "--merge", "--json", dir, n2)
	if code != 0 || errs != "" || !strings.Contains(out, "\"hosts\": [\n    \"new2\",\n    \"old1\"\n  ],") {
		t.Errorf("merge of an old and a new file: exit %d, stderr %q:\n%s", code, errs, out)
	}
}

// TestJobsShared: report --job J --shared-dir DIR merges the parts there,
// names a corrupt part on stderr in one line and goes on; its bad input
// is one line each.
func TestJobsShared(t *testing.T) {
	sh := jobstore.Shared{Dir: t.TempDir()}
	done := agg.End{Kind: agg.Exited, At: jobsT0.Add(time.Minute)}
	for _, p := range []report.Part{
		{Node: "n1", Job: "7.0", Written: jobsT0, Final: true, NodeList: "n[1-3]", NodeListFrom: "SLURM_JOB_NODELIST",
			Summary: jobsSummary("n1", "7.0", jobsRank{"0", 10, done}, jobsRank{"1", 11, done})},
		{Node: "n2", Job: "7.0", Written: jobsT0, Final: true, NodeList: "n[1-3]", NodeListFrom: "SLURM_JOB_NODELIST",
			Summary: jobsSummary("n2", "7.0", jobsRank{"2", 12, done})},
	} {
		var buf bytes.Buffer
		if err := report.WritePart(&buf, p); err != nil {
			t.Fatal(err)
		}
		if err := sh.SavePart(p.Job, p.Node, buf.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	bad := sh.PartPath("7.0", "n3")
	if err := os.WriteFile(bad, []byte("{"), 0o640); err != nil {
		t.Fatal(err)
	}
	code, out, errs := jobsRun("report", "--job", "7", "--shared-dir", sh.Dir)
	if code != 0 || errs != "mpiprobe report: skipped the part "+bad+": report: read part: unexpected end of JSON input (its node's agent writes it again while the job runs; otherwise remove it)\n" ||
		!strings.Contains(out, "Job 7.0 on n1,n2 — 3 ranks") || !strings.Contains(out, "33  ob1.send_pending.new") ||
		!strings.Contains(out, `PARTIAL: 1 of the 3 nodes of the job's node list (SLURM_JOB_NODELIST) wrote no part: n3`) {
		t.Errorf("report --shared-dir: exit %d, stderr %q, stdout:\n%s", code, errs, out)
	}

	missing := filepath.Join(t.TempDir(), "nowhere")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--job", "7", "--shared-dir", missing}, 1, "mpiprobe report: shared dir " + missing + " is not a directory: give the agents' --shared-dir"},
		{[]string{"--job", "8", "--shared-dir", sh.Dir}, 1, "mpiprobe report: job 8 in " + sh.Dir + ": no node wrote a part of it"},
		{[]string{"--shared-dir", sh.Dir}, 2, "mpiprobe report: --shared-dir needs --job JOBID"},
		{[]string{"--shared-dir", sh.Dir, "7"}, 2, `mpiprobe report: unexpected argument "7" with --shared-dir`},
		{[]string{"--merge", "--job", "7", "--shared-dir", sh.Dir, sh.Dir}, 2, "mpiprobe report: --shared-dir does not go with --merge or --state-dir"},
		{[]string{"--wait", "1s", "7"}, 2, "mpiprobe report: --wait and --save go with --shared-dir"},
	} {
		code, out, errs := jobsRun("report", tc.args...)
		lines := 1
		if tc.code == 2 {
			lines = 2
		}
		if code != tc.code || !strings.HasPrefix(errs, tc.want) || strings.Count(errs, "\n") != lines || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and one line starting %q", tc.args, code, out, errs, tc.code, tc.want)
		}
	}
}
