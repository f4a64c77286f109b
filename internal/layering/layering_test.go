package layering

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

const module = "github.com/mpiprobe/mpiprobe"

// layers lists every package of the module, lowest first. A package may
// import packages of strictly lower layers only. Keep docs/architecture.md
// in step with this table.
var layers = [][]string{
	// The x86-64 decoding helpers the code readers above share, and
	// process access: /proc's files and a process's memory.
	{"internal/x86", "internal/procfs"},
	// Leaves: generated BPF bindings, parsers and pure helpers.
	// The agent's query socket (protocol, server, peer filter) knows
	// nothing of status: the command gives it the handler.
	{"bpf", "internal/text", "internal/atomicfile", "internal/ranks", "internal/hostlist", "internal/elfx", "internal/layout",
		"internal/trace/tracefile", "internal/trace/loops", "internal/query"},
	// The C/T rule, naming processes and code, what one MPI build is and
	// how its objects read, the stores of what was seen.
	{"thresholds", "internal/identity", "internal/symbolize", "internal/status/unwind", "internal/mpiabi", "internal/jobstore", "internal/journal"},
	// The probe catalog, its cookies and attachers.
	{"probes"},
	// Aggregation; discovery of targets; the configuration file.
	{"agg", "internal/discover", "internal/config"},
	// What is built from aggregates: counter snapshots, collective state,
	// the hang diagnosis, reports, metrics, trace views.
	{"internal/counters", "internal/collstate", "internal/status/hang", "internal/report", "internal/metrics", "internal/trace/traceview", "internal/trace/chrometrace"},
	// The kernel edge: loading, reading maps into snapshots, process events.
	{"internal/kernel"},
	// The modes: none imports another.
	{"internal/session", "internal/agent", "internal/status", "internal/probecheck", "internal/ps"},
	// The command.
	{"cmd/mpiprobe"},
}

// testOnly packages serve tests and benchmarks only: they may import
// anything, and only tests may import them.
var testOnly = []string{"internal/mpitest", "internal/bench", "internal/layering", "internal/trace/chrometrace/chromecheck", "dist"}

type pkg struct {
	ImportPath string
	Imports    []string
}

// modulePackages lists the module's packages with their non-test imports.
func modulePackages(t *testing.T) []pkg {
	t.Helper()
	root := mpitest.RepoRoot(t)
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func local(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	return strings.CutPrefix(path, module+"/")
}

func layerOf(name string) int {
	for i, l := range layers {
		if slices.Contains(l, name) {
			return i
		}
	}
	return -1
}

// TestImportsGoDown fails on an import from a package to one of the same or
// a higher layer, on an import of a test-only package from non-test code,
// and on a package that is in no layer.
func TestImportsGoDown(t *testing.T) {
	for _, p := range modulePackages(t) {
		name, _ := local(p.ImportPath)
		if slices.Contains(testOnly, name) {
			continue
		}
		from := layerOf(name)
		if from < 0 {
			t.Errorf("package %s is in no layer: add it to the table in internal/layering/layering_test.go and to docs/architecture.md", name)
			continue
		}
		for _, imp := range p.Imports {
			to, ok := local(imp)
			if !ok {
				continue
			}
			switch l := layerOf(to); {
			case slices.Contains(testOnly, to):
				t.Errorf("%s imports the test-only package %s", name, to)
			case l < 0:
				// Reported for the package itself.
			case l >= from:
				t.Errorf("%s (layer %d) imports %s (layer %d): imports must go to lower layers (docs/architecture.md)", name, from, to, l)
			}
		}
	}
}

// TestLayersListOnlyRealPackages keeps the table honest: a package that was
// removed or renamed must leave the table too.
func TestLayersListOnlyRealPackages(t *testing.T) {
	have := map[string]bool{}
	for _, p := range modulePackages(t) {
		name, _ := local(p.ImportPath)
		have[name] = true
	}
	for _, l := range layers {
		for _, name := range l {
			if !have[name] {
				t.Errorf("the layer table names %s, which is not a package of the module", name)
			}
		}
	}
}
