package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
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

// jsonDocField is one row of a table of docs/json.md: a field's type
// ("integer or null") and whether it may be left out: its meaning says
// when it is "absent", or that it is written "only for" or "only with"
// something. Every other field is in every object that holds it.
type jsonDocField struct {
	typ      string
	optional bool
}

// jsonDocOptional finds the words that make a field optional.
var jsonDocOptional = regexp.MustCompile(`\babsent\b|\bonly (for|with)\b`)

// jsonDocKinds parses docs/json.md: per kind (a section "## `kind`"), the
// fields of its table by path.
func jsonDocKinds(t *testing.T) map[string]map[string]jsonDocField {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(mpitest.RepoRoot(t), "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile("^## `([a-z_]+)`$")
	row := regexp.MustCompile("^\\| `([a-z0-9_.\\[\\]]+)` \\| ([a-z ]+) \\| (.+) \\|$")
	kinds := map[string]map[string]jsonDocField{}
	var cur map[string]jsonDocField
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		l := sc.Text()
		if m := heading.FindStringSubmatch(l); m != nil {
			cur = map[string]jsonDocField{}
			kinds[m[1]] = cur
			continue
		}
		if strings.HasPrefix(l, "## ") {
			cur = nil
			continue
		}
		if m := row.FindStringSubmatch(l); m != nil && cur != nil {
			cur[m[1]] = jsonDocField{typ: m[2], optional: jsonDocOptional.MatchString(m[3])}
		}
	}
	for _, k := range []string{"summary", "status", "node_facts", "probes", "ps", "jobs", "trace_show"} {
		if len(kinds[k]) < 3 {
			t.Fatalf("docs/json.md: no table of fields for kind %s (%d rows)", k, len(kinds[k]))
		}
	}
	return kinds
}

// checkJSONStyle checks out, one command's --json output, against the
// style of docs/json.md: one JSON object, schema_version 1, kind, keys in
// snake_case at every depth, ranks, pids, sizes and counts integers or
// null, durations numbers, times RFC 3339; and against the kind's table:
// every field at every depth is documented, of its documented type, and
// every field the table does not call optional is in every object that
// holds it. It returns the document.
func checkJSONStyle(t styleT, doc map[string]map[string]jsonDocField, kind, what, out string) map[string]any {
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
	var problems []string
	// always checks that obj, at path, has every field the table says is
	// always written.
	always := func(path string, obj map[string]any) {
		prefix := ""
		if path != "" {
			prefix = path + "."
		}
		for f, d := range fields {
			rest, ok := strings.CutPrefix(f, prefix)
			if d.optional || !ok || strings.Contains(rest, ".") {
				continue
			}
			if _, ok := obj[rest]; !ok {
				problems = append(problems, fmt.Sprintf("%s is missing: docs/json.md does not say when it is absent", f))
			}
		}
	}
	always("", top)
	walkJSON("", "", v, func(path, key string, val any) {
		path = jsonDocPath(path)
		if i := strings.LastIndexByte(path, '.'); i > 0 && fields[path[:i]].typ == "map of integer" {
			// A key of a map is data (an MPI call's name), not a field.
			if n, ok := val.(json.Number); !ok || strings.ContainsAny(n.String(), ".eE") {
				problems = append(problems, fmt.Sprintf("%s = %v, docs/json.md says a map of integers", path, val))
			}
			return
		}
		if key != "" && !jsonKey.MatchString(key) {
			problems = append(problems, fmt.Sprintf("key %q (at %s) is not snake_case", key, path))
		}
		num, isNum := val.(json.Number)
		str, isStr := val.(string)
		obj, isObj := val.(map[string]any)
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
		if isObj {
			always(path, obj)
		}
		if key == "" {
			return // a list's element: the list's row says what it holds
		}
		d, documented := fields[path]
		if !documented {
			problems = append(problems, fmt.Sprintf("%s is not in docs/json.md's table of %s", path, kind))
			return
		}
		typ := d.typ
		if val == nil {
			if !strings.HasSuffix(typ, " or null") {
				problems = append(problems, fmt.Sprintf("%s = null, docs/json.md says %s", path, typ))
			}
			return
		}
		var good bool
		switch strings.TrimSuffix(typ, " or null") {
		case "integer":
			good = integer
		case "number":
			good = isNum
		case "time":
			_, err := time.Parse(time.RFC3339Nano, str)
			good = isStr && err == nil
		case "list":
			_, good = val.([]any)
		case "string":
			good = isStr
		case "boolean":
			_, good = val.(bool)
		case "object", "map of integer":
			good = isObj
		default:
			problems = append(problems, fmt.Sprintf("%s: docs/json.md gives the unknown type %q", path, typ))
			return
		}
		if !good {
			problems = append(problems, fmt.Sprintf("%s = %v, docs/json.md says %s", path, val, typ))
		}
	})
	if len(problems) > 0 {
		slices.Sort(problems)
		problems = slices.Compact(problems)
		t.Errorf("%s (%s):\n  %s\n%s", what, kind, strings.Join(problems, "\n  "), out)
	}
	return top
}

// jsonTreeBody matches the bodies of loops inside a trace show tree: a
// loop's body holds nodes of the same form as the tree's, documented once.
var jsonTreeBody = regexp.MustCompile(`(tree\[\])(\.body\[\])+`)

// jsonDocPath is the path under which docs/json.md documents a field.
func jsonDocPath(path string) string { return jsonTreeBody.ReplaceAllString(path, "$1") }

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
	doc := map[string]map[string]jsonDocField{"summary": {"schema_version": {typ: "integer"}, "kind": {typ: "string"},
		"hosts": {typ: "list", optional: true}, "start": {typ: "time", optional: true},
		"jobs": {typ: "list", optional: true}, "jobs[].ranks": {typ: "list"}, "jobs[].ranks[].rank": {typ: "integer or null"},
		"jobs[].ranks[].pid": {typ: "integer", optional: true}, "jobs[].ranks[].up": {typ: "boolean", optional: true},
		"jobs[].end": {typ: "object", optional: true}, "jobs[].calls": {typ: "map of integer", optional: true}}}
	for name, bad := range map[string]string{
		"list":              `[]`,
		"two values":        `{"schema_version": 1, "kind": "summary"} {}`,
		"version":           `{"schema_version": 2, "kind": "summary"}`,
		"kind":              `{"schema_version": 1, "kind": "status"}`,
		"undocumented":      `{"schema_version": 1, "kind": "summary", "host": "n1"}`,
		"camel case":        `{"schema_version": 1, "kind": "summary", "jobs": [{"Ranks": []}]}`,
		"rank string":       `{"schema_version": 1, "kind": "summary", "jobs": [{"ranks": [{"rank": "1"}]}]}`,
		"rank ?":            `{"schema_version": 1, "kind": "summary", "jobs": [{"ranks": [{"rank": "?"}]}]}`,
		"count float":       `{"schema_version": 1, "kind": "summary", "jobs": [{"ranks": [{"x_count": 1.5}]}]}`,
		"hosts joined":      `{"schema_version": 1, "kind": "summary", "hosts": "n1,n2"}`,
		"ns":                `{"schema_version": 1, "kind": "summary", "jobs": [{"init_ns": 5}]}`,
		"time":              `{"schema_version": 1, "kind": "summary", "start": "12:00"}`,
		"deep undocumented": `{"schema_version": 1, "kind": "summary", "jobs": [{"ranks": [{"rank": 1, "colour": "red"}]}]}`,
		"missing field":     `{"schema_version": 1, "kind": "summary", "jobs": [{"ranks": [{"pid": 4}]}]}`,
		"missing list":      `{"schema_version": 1, "kind": "summary", "jobs": [{}]}`,
		"null not allowed":  `{"schema_version": 1, "kind": "summary", "jobs": [{"ranks": [{"rank": 1, "pid": null}]}]}`,
		"boolean":           `{"schema_version": 1, "kind": "summary", "jobs": [{"ranks": [{"rank": 1, "up": "yes"}]}]}`,
		"object":            `{"schema_version": 1, "kind": "summary", "jobs": [{"ranks": [], "end": "exit 0"}]}`,
		"map value":         `{"schema_version": 1, "kind": "summary", "jobs": [{"ranks": [], "calls": {"MPI_Send": "x"}}]}`,
		"map":               `{"schema_version": 1, "kind": "summary", "jobs": [{"ranks": [], "calls": [1]}]}`,
		"no kind":           `{"schema_version": 1}`,
	} {
		var faults styleFaults
		checkJSONStyle(&faults, doc, "summary", name, bad)
		if len(faults) == 0 {
			t.Errorf("%s: %s passed the check", name, bad)
		}
	}
	good := `{"schema_version": 1, "kind": "summary", "hosts": ["n1"], "start": "2025-03-01T12:00:00.5Z", "jobs": [{"ranks": [{"rank": null, "pid": 4, "up": true}], "end": {}, "calls": {"MPI_Send": 3}}]}`
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
	// seen gathers, per kind, the fields the runs wrote, to list the
	// documented ones no run made (fields written only in cases these runs
	// do not reach: damage, dropped updates, history, ...).
	seen := map[string]map[string]bool{}
	check := func(t *testing.T, kind, what, out string) map[string]any {
		t.Helper()
		top := checkJSONStyle(t, doc, kind, what, out)
		if seen[kind] == nil {
			seen[kind] = map[string]bool{}
		}
		walkJSON("", "", any(top), func(path, _ string, _ any) { seen[kind][jsonDocPath(path)] = true })
		return top
	}
	defer func() {
		for _, kind := range slices.Sorted(maps.Keys(seen)) {
			var unseen []string
			for f := range doc[kind] {
				if !seen[kind][f] {
					unseen = append(unseen, f)
				}
			}
			slices.Sort(unseen)
			t.Logf("%s: %d of %d documented fields written by these runs; not reached: %s", kind, len(doc[kind])-len(unseen), len(doc[kind]), strings.Join(unseen, " "))
		}
	}()
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

		check(t, "jobs", "jobs --json", run(t, "jobs", "--json", "--state-dir", d.State))
		sum := check(t, "summary", "report --json JOBID", run(t, "report", "--json", "--state-dir", d.State, id))
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
		merged := check(t, "summary", "report --merge --json",
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
		sum := check(t, "summary", "--json -o FILE", string(data))
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
		probes := check(t, "probes", "probes -p --json", run(t, "probes", "--json", "-p", pid))
		if ps, _ := probes["processes"].([]any); len(ps) != 1 {
			t.Errorf("probes: %d processes, want 1", len(ps))
		}
		out := run(t, "ps", "--json")
		check(t, "ps", "ps --json", out)
		if !strings.Contains(out, `"pid": `+pid+",") || !strings.Contains(out, `"rank": 0,`) {
			t.Errorf("ps --json lacks pid %s as a number or rank 0:\n%s", pid, out)
		}
	})

	t.Run("status", func(t *testing.T) {
		// A rank that skips a barrier, without history; a rank stuck in a
		// receive, with --collectives history (counts, divergence, the
		// requests waited for).
		for _, tc := range []struct {
			mode    string
			history bool
		}{{"skip", false}, {"recv", true}} {
			pids := hungJob(t, bin, impl, tc.mode, 3, tc.history)
			var ps []string
			for _, p := range pids {
				ps = append(ps, strconv.Itoa(p))
			}
			check(t, "status", "status --json ("+tc.mode+")", run(t, "status", "--json", "-p", strings.Join(ps, ",")))
			if tc.history {
				continue
			}
			// The same job across "nodes": its node facts, and a
			// fanned-out status with a node that fails.
			job := jobOfPS(t, bin, pids[0])
			check(t, "node_facts", "status --node-facts", run(t, "status", "--node-facts", "--job", job))
			check(t, "status", "status --json --hosts", run(t, "status", "--json", "--job", job, "--hosts", "n1,n2",
				"--fanout", `sh -c 'case $0 in n2) exit 3;; esac; exec "$@"' %h`))
		}
	})

	t.Run("trace_show", func(t *testing.T) {
		file := filepath.Join(dir, "run.trace")
		run(t, append([]string{"trace", "-o", file, "--"}, short...)...)
		check(t, "trace_show", "trace show --json", run(t, "trace", "show", "--json", file))
		check(t, "trace_show", "trace show --json --per-rank", run(t, "trace", "show", "--json", "--per-rank", file))
		check(t, "trace_show", "trace show --json --detail high", run(t, "trace", "show", "--json", "--detail", "high", "--rank", "0", file))
		// A damaged trace: shown up to the damage, which damage describes.
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		cut := filepath.Join(dir, "cut.trace")
		if err := os.WriteFile(cut, data[:len(data)*2/3], 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, stderr := runOutput(t, bin, nil, "trace", "show", "--json", cut)
		if code != 1 || !strings.Contains(stderr, "damaged") {
			t.Errorf("trace show --json of a cut trace: exit %d, stderr %q; want 1 and the damage", code, stderr)
		}
		if top := check(t, "trace_show", "trace show --json (cut)", out); top != nil && top["damage"] == nil {
			t.Errorf("cut trace: damage is null:\n%s", out)
		}
	})
}
