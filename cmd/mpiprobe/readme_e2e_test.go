package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// The README's examples are real output. Each block of README.md that
// follows a line "<!-- example NAME -->" is the output of example NAME as
// this test runs it. TestReadmeExamples fails when a line of a block is no
// longer produced (numbers, times, ids and table widths aside), so that the
// README cannot show what the tool no longer prints; with
// MPIPROBE_README=update (make readme) it writes the blocks afresh from
// this run's output.

// readmeHost replaces the machine's host name in the README's examples,
// so that they read the same whichever machine made them.
const readmeHost = "node1"

// example is one README example: the commands as the README shows them,
// each with the output it gave.
type example struct {
	name  string
	steps []step
}

type step struct {
	shown  string // the command line as the README shows it
	output string
}

func (e example) block() string {
	var b strings.Builder
	for _, s := range e.steps {
		fmt.Fprintf(&b, "$ %s\n%s", s.shown, s.output)
		if s.output != "" && !strings.HasSuffix(s.output, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

func TestReadmeExamples(t *testing.T) {
	ompi := mpitest.OpenMPI()
	mpitest.RequireE2E(t, ompi)
	bin := mpitest.BuildMpiprobe(t)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	examples := []example{demoExample(t, bin, ompi), statusExample(t, bin, ompi), traceExample(t, bin, ompi)}

	path := filepath.Join(mpitest.RepoRoot(t), "README.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	for _, e := range examples {
		got := anonymize(e.block(), host)
		old, ok := exampleBlock(text, e.name)
		if !ok {
			t.Errorf("README.md has no block after <!-- example %s -->", e.name)
			continue
		}
		if os.Getenv("MPIPROBE_README") == "update" {
			text = strings.Replace(text, "<!-- example "+e.name+" -->\n```console\n"+old+"```", "<!-- example "+e.name+" -->\n```console\n"+got+"```", 1)
			continue
		}
		have := map[string]bool{}
		for _, l := range strings.Split(got, "\n") {
			have[shape(l)] = true
		}
		for i, l := range strings.Split(old, "\n") {
			if !have[shape(l)] {
				t.Errorf("README example %s, line %d is no longer printed (make readme rewrites the examples):\n  %s\nthis run printed:\n%s", e.name, i+1, l, got)
			}
		}
	}
	if os.Getenv("MPIPROBE_README") == "update" {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// exampleBlock returns the content of the console block after the marker
// of example name.
func exampleBlock(readme, name string) (string, bool) {
	_, rest, ok := strings.Cut(readme, "<!-- example "+name+" -->\n```console\n")
	if !ok {
		return "", false
	}
	block, _, ok := strings.Cut(rest, "```")
	return block, ok
}

var (
	digits   = regexp.MustCompile(`[0-9]+`)
	window   = regexp.MustCompile(` \(in 0 seconds?\)`)
	spacing  = regexp.MustCompile(`[ ─═]+`)
	tmpPaths = regexp.MustCompile(`/tmp/[^ :]*/`)
)

// anonymize makes this run's output what the README shows: the host name
// replaced, temporary directories removed from paths.
func anonymize(s, host string) string {
	s = tmpPaths.ReplaceAllString(s, "./")
	if host != "" {
		s = regexp.MustCompile(`\b`+regexp.QuoteMeta(host)+`\b`).ReplaceAllString(s, readmeHost)
	}
	return s
}

// shape is what a line must keep for the README to stay true: its words,
// not its numbers, times, ids or column widths. Two things differ from run
// to run by timing alone and are left out too: whether a warning was held
// back by T (" (in 1 second)" depends on where the polls fall), and whether
// the ranks' pids were consecutive ("0-1" or "0,0").
func shape(l string) string {
	l = digits.ReplaceAllString(l, "0")
	l = window.ReplaceAllString(l, "")
	l = strings.ReplaceAll(l, "0,0", "0")
	l = strings.ReplaceAll(l, "0-0", "0")
	l = strings.ReplaceAll(l, "0.0", "0")
	return strings.TrimSpace(spacing.ReplaceAllString(l, " "))
}

// run runs bin with args and returns what it printed, stdout then stderr.
func runShown(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// demoExample is `make demo`: a flood whose sender runs out of send
// fragments, under mpiprobe.
func demoExample(t *testing.T, bin string, impl mpitest.Impl) example {
	flood := mpitest.Build(t, impl, "flood")
	opts := []string{"--mca", "pml", "ob1", "--mca", "btl", "self,vader", "--mca", "btl_vader_free_list_max", "64"}
	argv := append([]string{"-C", "500", "-T", "1s", "--"}, impl.Command(2, opts, flood, "-n", "2000", "-d", "600", "-r", "4")...)
	out := runShown(t, bin, argv...)
	return example{name: "demo", steps: []step{{
		shown:  "sudo mpiprobe -C 500 -T 1s -- mpirun -np 2 --mca pml ob1 --mca btl self,vader --mca btl_vader_free_list_max 64 ./flood -n 2000 -d 600 -r 4",
		output: out,
	}}}
}

// statusExample hangs a 4-rank job (the last rank skips the final barrier)
// and asks status about it by job id.
func statusExample(t *testing.T, bin string, impl mpitest.Impl) example {
	pids := hungJob(t, bin, impl, "skip", 4, false)
	job := jobOf(t, pids[0]) // the job id mpiprobe prints as job=
	out := runShown(t, bin, "status", "--job", job)
	return example{name: "status", steps: []step{{
		shown:  "sudo mpiprobe status --job " + job,
		output: out,
	}}}
}

// traceExample traces testdata/loops.c on 4 ranks and shows its loops.
func traceExample(t *testing.T, bin string, impl mpitest.Impl) example {
	loops := mpitest.Build(t, impl, "loops")
	file := filepath.Join(t.TempDir(), "run.trace")
	rec := runShown(t, bin, append([]string{"trace", "-o", file, "--"}, impl.Command(4, nil, loops)...)...)
	show := runShown(t, bin, "trace", "show", file)
	return example{name: "trace", steps: []step{
		{shown: "sudo mpiprobe trace -o run.trace -- mpirun -np 4 ./loops", output: rec},
		{shown: "mpiprobe trace show run.trace", output: strings.ReplaceAll(show, file, "run.trace")},
	}}
}

// TestShape checks what the README comparison forgives (numbers, a held
// back window, pid runs) and what it does not (words).
func TestShape(t *testing.T) {
	same := [][2]string{
		{"rank=0 pid=14465: 5,811 warnings (in 1 second) : pass over", "rank=0 pid=24125: 3,874 warnings : pass over"},
		{"│ 0-1   │ 14465,14467 │ exit 0 │", "│ 0-1 │ 24125-24126 │ exit 0 │"},
		{"(4.609s)", "(14.241s)"},
	}
	for _, c := range same {
		if shape(c[0]) != shape(c[1]) {
			t.Errorf("shape(%q) = %q, shape(%q) = %q: want equal", c[0], shape(c[0]), c[1], shape(c[1]))
		}
	}
	differ := [][2]string{
		{"3,872 warnings : send request queued", "3,872 warnings : send request dropped"},
		{"│ 0-1 │ 1,2 │ exit 0 │", "│ 0-1 │ 1,2 │ signal 9 │"},
	}
	for _, c := range differ {
		if shape(c[0]) == shape(c[1]) {
			t.Errorf("shape(%q) = shape(%q) = %q: want different", c[0], c[1], shape(c[0]))
		}
	}
}
