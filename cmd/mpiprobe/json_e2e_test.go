package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// jsonKey is the form of every key of every --json document.
var jsonKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// jsonDocField is one row of a table of docs/json.md: a field's path
// (`jobs[].ranks[].pid`) and its type ("integer or null").
type jsonDocField struct {
	path, typ string
}

// jsonDocKinds parses docs/json.md: per kind (a section "## `kind`"), the
// fields of its table by path.
func jsonDocKinds(t *testing.T) map[string]map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(mpitest.RepoRoot(t), "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile("^## `([a-z_]+)`$")
	row := regexp.MustCompile("^\\| `([a-z0-9_.\\[\\]]+)` \\| ([a-z ]+) \\| .+ \\|$")
	kinds := map[string]map[string]string{}
	var cur map[string]string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		l := sc.Text()
		if m := heading.FindStringSubmatch(l); m != nil {
			cur = map[string]string{}
			kinds[m[1]] = cur
			continue
		}
		if strings.HasPrefix(l, "## ") {
			cur = nil
			continue
		}
		if m := row.FindStringSubmatch(l); m != nil && cur != nil {
			cur[m[1]] = m[2]
		}
	}
	for _, k := range []string{"summary", "status", "probes", "ps", "jobs", "trace_show"} {
		if len(kinds[k]) < 3 {
			t.Fatalf("docs/json.md: no table of fields for kind %s (%d rows)", k, len(kinds[k]))
		}
	}
	return kinds
}

// checkJSONStyle checks out, one command's --json output, against the
// style of docs/json.md: one JSON object, schema_version 1, kind, keys in
// snake_case at every depth, ranks, pids, sizes and counts integers or
// null, durations numbers, times RFC 3339, every top-level field
// documented for the kind, and every documented number a number. It
// returns the document.
func checkJSONStyle(t styleT, doc map[string]map[string]string, kind, what, out string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Errorf("%s: not JSON: %v\n%s", what, err, out)
		return nil
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Errorf("%s: more than one JSON value (%v)\n%s", what, err, out)
	}
	top, ok := v.(map[string]any)
	if !ok {
		t.Errorf("%s: a JSON %T, want one object\n%s", what, v, out)
		return nil
	}
	if sv, _ := top["schema_version"].(json.Number); sv.String() != "1" {
		t.Errorf("%s: schema_version %v, want 1", what, top["schema_version"])
	}
	if k, _ := top["kind"].(string); k != kind {
		t.Errorf("%s: kind %v, want %q", what, top["kind"], kind)
	}
	fields := doc[kind]
	for key := range top {
		if _, ok := fields[key]; !ok {
			t.Errorf("%s: top-level field %q is not in docs/json.md's table of %s", what, key, kind)
		}
	}
	var problems []string
	walkJSON("", "", v, func(path, key string, val any) {
		if key != "" && !jsonKey.MatchString(key) {
			problems = append(problems, fmt.Sprintf("key %q (at %s) is not snake_case", key, path))
		}
		num, isNum := val.(json.Number)
		str, isStr := val.(string)
		integer := isNum && !strings.ContainsAny(num.String(), ".eE")
		switch {
		case key == "rank" || key == "pid" || key == "size" || key == "count" || strings.HasSuffix(key, "_count"):
			if val != nil && !integer {
				problems = append(problems, fmt.Sprintf("%s = %v, want an integer or null", path, val))
			}
		case strings.HasSuffix(key, "_seconds"):
			if !isNum {
				problems = append(problems, fmt.Sprintf("%s = %v, want a number of seconds", path, val))
			}
		case strings.HasSuffix(key, "_ns"):
			problems = append(problems, fmt.Sprintf("%s: a duration in nanoseconds, want *_seconds", path))
		}
		typ, documented := fields[path]
		if !documented {
			return
		}
		switch {
		case strings.HasPrefix(typ, "integer"):
			if !(integer || val == nil && strings.HasSuffix(typ, "or null")) {
				problems = append(problems, fmt.Sprintf("%s = %v, docs/json.md says %s", path, val, typ))
			}
		case strings.HasPrefix(typ, "number"):
			if !isNum {
				problems = append(problems, fmt.Sprintf("%s = %v, docs/json.md says %s", path, val, typ))
			}
		case typ == "time":
			if _, err := time.Parse(time.RFC3339Nano, str); !isStr || err != nil {
				problems = append(problems, fmt.Sprintf("%s = %v, want an RFC 3339 time", path, val))
			}
		case typ == "list":
			if _, ok := val.([]any); !ok {
				problems = append(problems, fmt.Sprintf("%s = %v, want a list", path, val))
			}
		case typ == "string":
			if !isStr {
				problems = append(problems, fmt.Sprintf("%s = %v, want a string", path, val))
			}
		}
	})
	if len(problems) > 0 {
		slices.Sort(problems)
		problems = slices.Compact(problems)
		t.Errorf("%s (%s):\n  %s\n%s", what, kind, strings.Join(problems, "\n  "), out)
	}
	return top
}

// styleT is the part of *testing.T that checkJSONStyle uses.
type styleT interface {
	Helper()
	Errorf(format string, args ...any)
}

// styleFaults records what checkJSONStyle finds, to test the checker.
type styleFaults []string

func (f *styleFaults) Helper() {}

func (f *styleFaults) Errorf(format string, args ...any) {
	*f = append(*f, fmt.Sprintf(format, args...))
}

// walkJSON calls f for every value under v with its path (object keys
// joined by ".", list elements as "[]") and the key it is under ("" for
// list elements).
func walkJSON(path, key string, v any, f func(path, key string, val any)) {
	if path != "" {
		f(path, key, v)
	}
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			walkJSON(p, k, val, f)
		}
	case []any:
		for _, val := range x {
			walkJSON(path+"[]", "", val, f)
		}
	}
}

// TestJSONStyleChecker: the checker itself finds each kind of fault.
func TestJSONStyleChecker(t *testing.T) {
	doc := map[string]map[string]string{"summary": {"schema_version": "integer", "kind": "string", "hosts": "list",
		"jobs": "list", "jobs[].ranks[].rank": "integer or null", "start": "time"}}
	for name, bad := range map[string]string{
		"list":         `[]`,
		"two values":   `{"schema_version": 1, "kind": "summary"} {}`,
		"version":      `{"schema_version": 2, "kind": "summary"}`,
		"kind":         `{"schema_version": 1, "kind": "status"}`,
		"undocumented": `{"schema_version": 1, "kind": "summary", "host": "n1"}`,
		"camel case":   `{"schema_version": 1, "kind": "summary", "jobs": [{"Ranks": []}]}`,
		"rank string":  `{"schema_version": 1, "kind": "summary", "jobs": [{"ranks": [{"rank": "1"}]}]}`,
		"rank ?":       `{"schema_version": 1, "kind": "summary", "jobs": [{"ranks": [{"rank": "?"}]}]}`,
		"count float":  `{"schema_version": 1, "kind": "summary", "jobs": [{"ranks": [{"x_count": 1.5}]}]}`,
		"hosts joined": `{"schema_version": 1, "kind": "summary", "hosts": "n1,n2"}`,
		"ns":           `{"schema_version": 1, "kind": "summary", "jobs": [{"init_ns": 5}]}`,
		"time":         `{"schema_version": 1, "kind": "summary", "start": "12:00"}`,
	} {
		var faults styleFaults
		checkJSONStyle(&faults, doc, "summary", name, bad)
		if len(faults) == 0 {
			t.Errorf("%s: %s passed the check", name, bad)
		}
	}
	good := `{"schema_version": 1, "kind": "summary", "hosts": ["n1"], "start": "2025-03-01T12:00:00.5Z", "jobs": [{"ranks": [{"rank": null, "pid": 4}]}]}`
	if checkJSONStyle(t, doc, "summary", "good", good) == nil {
		t.Error("good document not returned")
	}
}

// TestJSONStyleE2E runs every command with --json on real targets (Open
// MPI): the summary of a flood job (-o FILE), the agent's stored summary
// (jobs, report JOBID, report --merge of two nodes), probes and ps on a
// running job, status on a hung job, and trace show on a recorded trace;
// each output must follow docs/json.md.
func TestJSONStyleE2E(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	doc := jsonDocKinds(t)
	flood := mpitest.Build(t, impl, "flood")
	short := impl.Command(2, floodMCA(true), flood, "-n", "500", "-r", "2", "-d", "100")
	dir := t.TempDir()
	run := func(t *testing.T, args ...string) string {
		t.Helper()
		code, stdout, stderr := runOutput(t, bin, nil, args...)
		if code != 0 {
			t.Fatalf("mpiprobe %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
		}
		return stdout
	}

	t.Run("agent", func(t *testing.T) {
		d := mpitest.NewAgentDirs(t)
		ag := mpitest.StartAgent(t, bin, d, "")
		time.Sleep(time.Second) // the agent attaches to new processes; give it its start
		job := mpitest.StartJob(t, short, flood, 2, "libmpi.so.40")
		job.Wait(t)
		sums := finishedSummaries(t, d, ag, job.Ranks)
		ag.Stop(t, syscall.SIGTERM)
		id := sums[0].Jobs[0].Job

		checkJSONStyle(t, doc, "jobs", "jobs --json", run(t, "jobs", "--json", "--state-dir", d.State))
		sum := checkJSONStyle(t, doc, "summary", "report --json JOBID", run(t, "report", "--json", "--state-dir", d.State, id))
		if sum == nil {
			return
		}
		// The same summary as from a second node: merged, the hosts are a list.
		sum["hosts"] = []any{"othernode"}
		for _, j := range sum["jobs"].([]any) {
			for _, r := range j.(map[string]any)["ranks"].([]any) {
				r.(map[string]any)["host"] = "othernode"
			}
		}
		other, err := json.Marshal(sum)
		if err != nil {
			t.Fatal(err)
		}
		copied := filepath.Join(dir, "other.json")
		if err := os.WriteFile(copied, other, 0o600); err != nil {
			t.Fatal(err)
		}
		merged := checkJSONStyle(t, doc, "summary", "report --merge --json",
			run(t, "report", "--merge", "--json", "--job", id, d.State, copied))
		if hosts, _ := merged["hosts"].([]any); len(hosts) != 2 || !slices.Contains(hosts, any("othernode")) {
			t.Errorf("merged hosts = %v, want this node and othernode", merged["hosts"])
		}
	})

	t.Run("summary", func(t *testing.T) {
		file := filepath.Join(dir, "sum.json")
		run(t, append([]string{"--json", "--collectives", "-o", file, "--"}, short...)...)
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sum := checkJSONStyle(t, doc, "summary", "--json -o FILE", string(data))
		// Real ranks: numbers 0 and 1, with events and collectives.
		if !strings.Contains(string(data), `"rank": 0,`) || !strings.Contains(string(data), `"rank": 1,`) ||
			!strings.Contains(string(data), `"collectives": [`) || !strings.Contains(string(data), `"total_seconds": `) {
			t.Errorf("summary lacks ranks 0 and 1 or collectives:\n%s", data)
		}
		if sum != nil && fmt.Sprint(sum["hosts"]) == "[]" {
			t.Errorf("summary names no host")
		}
	})

	t.Run("running", func(t *testing.T) {
		job := mpitest.StartJob(t, impl.Command(2, nil, flood, "-n", "10", "-p", "60000"), flood, 2, "libmpi.so.40")
		pid := strconv.Itoa(job.Ranks[0])
		probes := checkJSONStyle(t, doc, "probes", "probes -p --json", run(t, "probes", "--json", "-p", pid))
		if ps, _ := probes["processes"].([]any); len(ps) != 1 {
			t.Errorf("probes: %d processes, want 1", len(ps))
		}
		out := run(t, "ps", "--json")
		checkJSONStyle(t, doc, "ps", "ps --json", out)
		if !strings.Contains(out, `"pid": `+pid+",") || !strings.Contains(out, `"rank": 0,`) {
			t.Errorf("ps --json lacks pid %s as a number or rank 0:\n%s", pid, out)
		}
	})

	t.Run("status", func(t *testing.T) {
		pids := hungJob(t, bin, impl, "skip", 3, false)
		var ps []string
		for _, p := range pids {
			ps = append(ps, strconv.Itoa(p))
		}
		checkJSONStyle(t, doc, "status", "status --json", run(t, "status", "--json", "-p", strings.Join(ps, ",")))
	})

	t.Run("trace_show", func(t *testing.T) {
		file := filepath.Join(dir, "run.trace")
		run(t, append([]string{"trace", "-o", file, "--"}, short...)...)
		checkJSONStyle(t, doc, "trace_show", "trace show --json", run(t, "trace", "show", "--json", file))
		checkJSONStyle(t, doc, "trace_show", "trace show --json --per-rank", run(t, "trace", "show", "--json", "--per-rank", file))
	})
}
