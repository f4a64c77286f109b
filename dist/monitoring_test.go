package dist_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/mpiprobe/mpiprobe/internal/agent"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/probes"
)

// promtool runs promtool with args in dir and fails the test on an error,
// showing its output. Without promtool the test skips (fails under
// MPIPROBE_E2E=require).
func promtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("promtool"); err != nil {
		mpitest.Require(t, "promtool (Debian package prometheus)")
	}
	cmd := exec.Command("promtool", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// ruleFile is the part of a Prometheus rule file the tests read.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func alertRules(t *testing.T) []rule {
	t.Helper()
	var f ruleFile
	readYAML(t, filepath.Join(mpitest.RepoRoot(t), "dist", "prometheus", "alerts.yml"), &f)
	var out []rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// TestAlertRules has promtool check the rules and run their unit tests,
// which also evaluate docs/metrics.md's examples.
func TestAlertRules(t *testing.T) {
	dir := filepath.Join(mpitest.RepoRoot(t), "dist", "prometheus")
	promtool(t, dir, "check", "rules", "alerts.yml")
	promtool(t, dir, "test", "rules", "alerts_test.yml")
}

// TestAlertsCoverCatalog: every event of the default catalog has its rule,
// with the catalog's threshold, message and advice.
func TestAlertsCoverCatalog(t *testing.T) {
	rules := alertRules(t)
	for _, e := range probes.DefaultCatalog().Events {
		want := fmt.Sprintf(`%s{event=%q} >= %d`, eventsRecorded, e.ID, e.C)
		i := slices.IndexFunc(rules, func(r rule) bool { return strings.Contains(r.Expr, strconv.Quote(e.ID)) })
		if i < 0 {
			t.Errorf("event %s: no alert rule in dist/prometheus/alerts.yml; add one with expr: %s", e.ID, want)
			continue
		}
		r := rules[i]
		if strings.TrimSpace(r.Expr) != want {
			t.Errorf("event %s: rule %s has expr\n%s\nwant\n%s", e.ID, r.Alert, r.Expr, want)
		}
		if r.Alert == "" || !strings.HasSuffix(r.Annotations["summary"], ": "+e.Message) ||
			!strings.Contains(r.Annotations["description"], e.Advice) {
			t.Errorf("event %s: rule %q's summary or description lacks the catalog's message or advice: %v", e.ID, r.Alert, r.Annotations)
		}
		if s := r.Labels["severity"]; s != "warning" && s != "info" {
			t.Errorf("rule %s: severity %q, want warning or info", r.Alert, s)
		}
	}
	recorded := false
	for _, r := range rules {
		checkQuery(t, "alerts.yml rule "+r.Alert+r.Record, r.Expr)
		recorded = recorded || r.Record == eventsRecorded
	}
	if !recorded {
		t.Errorf("alerts.yml does not record %s, which the event rules use", eventsRecorded)
	}
}

// eventsRecorded is the recording rule of alerts.yml the event rules
// compare with their thresholds: events per job and event in 5 minutes,
// jobs shorter than the scrape interval included.
const eventsRecorded = "mpi_job_event:mpiprobe_events:increase5m"

// metricName finds the names a query selects.
var metricName = regexp.MustCompile(`\b(mpiprobe_[a-z_]+|go_[a-z_]+|process_[a-z_]+|promhttp_[a-z_]+)\b`)

// checkQuery fails the test when query names a metric the agent does not
// export, or groups or selects by the labels the agent no longer has
// (job is the scrape job's, host is the instance).
func checkQuery(t *testing.T, where, query string) {
	t.Helper()
	names := agent.MetricNames()
	found := metricName.FindAllString(strings.ReplaceAll(query, eventsRecorded, ""), -1)
	if len(found) == 0 && !strings.Contains(query, eventsRecorded) {
		t.Errorf("%s: no mpiprobe metric in %q", where, query)
	}
	for _, name := range found {
		if strings.HasPrefix(name, "mpiprobe_") && !slices.Contains(names, name) {
			t.Errorf("%s: %s is not a metric of the agent (agent.MetricNames: %v)", where, name, names)
		}
	}
	if regexp.MustCompile(`\b(job|host)\s*(=|!=|=~|!~)|\(\s*(job|host)\b|,\s*(job|host)\s*[,)]`).MatchString(query) {
		t.Errorf("%s: %q uses a job or host label: the MPI job is mpi_job, the node is instance", where, query)
	}
}

// promqlBlocks returns the lines of the ```promql blocks of a Markdown text.
func promqlBlocks(md string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(md, "\n") {
		switch {
		case strings.TrimSpace(line) == "```promql":
			in = true
		case in && strings.TrimSpace(line) == "```":
			in = false
		case in && strings.TrimSpace(line) != "":
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// TestDocsExamplesTested: every PromQL example of docs/metrics.md is
// evaluated, verbatim, by a promql_expr_test of alerts_test.yml.
func TestDocsExamplesTested(t *testing.T) {
	root := mpitest.RepoRoot(t)
	md, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	tested := testedExprs(t)
	examples := promqlBlocks(string(md))
	if len(examples) < 3 {
		t.Errorf("docs/metrics.md has %d PromQL examples, want at least 3", len(examples))
	}
	for _, ex := range examples {
		if !slices.Contains(tested, ex) {
			t.Errorf("docs/metrics.md example %q has no promql_expr_test with samples in dist/prometheus/alerts_test.yml", ex)
		}
		checkQuery(t, "docs/metrics.md", ex)
	}
}

// testedExprs returns the expressions that a promql_expr_test of
// alerts_test.yml evaluates and compares with samples.
func testedExprs(t *testing.T) []string {
	t.Helper()
	var tests struct {
		Tests []struct {
			PromQL []struct {
				Expr    string `yaml:"expr"`
				Samples []any  `yaml:"exp_samples"`
			} `yaml:"promql_expr_test"`
		} `yaml:"tests"`
	}
	readYAML(t, filepath.Join(mpitest.RepoRoot(t), "dist", "prometheus", "alerts_test.yml"), &tests)
	var tested []string
	for _, tc := range tests.Tests {
		for _, p := range tc.PromQL {
			if len(p.Samples) > 0 {
				tested = append(tested, strings.TrimSpace(p.Expr))
			}
		}
	}
	return tested
}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	Inputs []struct {
		Name, Type, PluginID string
	} `json:"__inputs"`
	Title  string  `json:"title"`
	Panels []panel `json:"panels"`
	Tmpl   struct {
		List []struct {
			Name       string          `json:"name"`
			Datasource datasource      `json:"datasource"`
			Query      json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	Title      string     `json:"title"`
	Datasource datasource `json:"datasource"`
	Targets    []struct {
		Expr       string     `json:"expr"`
		Datasource datasource `json:"datasource"`
	} `json:"targets"`
}

// grafanaVars replaces the dashboard's variables so that a query is PromQL.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__range", "1h", "$mpi_job", ".*", "$instance", ".*")

// labelValues is a template variable's query: label_values(SELECTOR, LABEL).
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*([a-z_]+)\)$`)

// TestDashboard: the dashboard parses, takes its data source as an input,
// and queries only what the agent exports, in valid PromQL (promtool
// checks the queries as recording rules).
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(mpitest.RepoRoot(t), "dist", "grafana", "mpiprobe.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("dist/grafana/mpiprobe.json: %v", err)
	}
	if len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" || d.Inputs[0].PluginID != "prometheus" {
		t.Errorf("inputs %+v, want the one data source DS_PROMETHEUS", d.Inputs)
	}
	ds := datasource{Type: "prometheus", UID: "${DS_PROMETHEUS}"}
	tested := testedExprs(t)
	var queries []string
	for _, p := range d.Panels {
		if p.Datasource != ds || len(p.Targets) == 0 {
			t.Errorf("panel %q: data source %+v, %d queries; want %+v and a query", p.Title, p.Datasource, len(p.Targets), ds)
		}
		for _, tg := range p.Targets {
			if tg.Datasource != ds {
				t.Errorf("panel %q: a query's data source is %+v", p.Title, tg.Datasource)
			}
			checkQuery(t, "panel "+p.Title, tg.Expr)
			q := grafanaVars.Replace(tg.Expr)
			queries = append(queries, q)
			// Events over the range: tested by promtool on jobs shorter
			// than the scrape interval.
			if strings.Contains(q, "increase(mpiprobe_events_total") && !slices.Contains(tested, q) {
				t.Errorf("panel %q: its query %s has no promql_expr_test with samples in dist/prometheus/alerts_test.yml", p.Title, q)
			}
		}
	}
	for _, v := range d.Tmpl.List {
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Errorf("variable %s: query %s: %v", v.Name, v.Query, err)
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil || v.Datasource != ds {
			t.Errorf("variable %s: query %q, data source %+v; want label_values(SELECTOR, LABEL) on %+v", v.Name, q.Query, v.Datasource, ds)
			continue
		}
		checkQuery(t, "variable "+v.Name, m[1])
		queries = append(queries, grafanaVars.Replace(m[1]))
	}
	for _, want := range []string{"mpiprobe_jobs_active", "mpiprobe_jobs_finished_total", "mpiprobe_events_total", "mpiprobe_mpi_init_seconds", "mpiprobe_map_drops_total"} {
		if !slices.ContainsFunc(queries, func(q string) bool { return strings.Contains(q, want) }) {
			t.Errorf("no panel shows %s", want)
		}
	}

	// The queries as recording rules, for promtool to parse.
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, q := range queries {
		quoted, err := json.Marshal(q) // a JSON string is a YAML string
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&rules, "      - record: dashboard:query%d\n        expr: %s\n", i, quoted)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard.yml"), []byte(rules.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	promtool(t, dir, "check", "rules", "dashboard.yml")
}
