package status

// Fan-out: running the node command (`mpiprobe status --node-facts`) on
// every node of a job through a remote-execution template, and reading
// back the node facts each prints.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Fanout says how to run the node command on the nodes.
type Fanout struct {
	// Template is a shell command run once per host (%h the host) with
	// the node command appended as its arguments ("ssh %h", "pdsh -R
	// ssh -w %h"); with Each, once for all hosts (%H the hosts,
	// comma-separated, %n their number), and it prints one document per
	// node ("srun --overlap --jobid J -N %n --ntasks-per-node=1 -w %H").
	// %% is a percent sign.
	Template string
	Each     bool
	// Hosts are the nodes asked.
	Hosts []string
	// Command is the node command's argv.
	Command []string
	// Timeout bounds each run of the template.
	Timeout time.Duration
	// Parallel bounds the runs at once (per-host mode); 0 is 32.
	Parallel int
}

// maxNodeOutput bounds what one run of the template may print: a node's
// facts are a few kB per class.
const maxNodeOutput = 256 << 20

// SlurmTemplate is the Each template that runs the node command on every
// node of Slurm job id (flags checked against Slurm 22.05's srun(1)): a
// step that overlaps the job's running steps, one task per node.
func SlurmTemplate(id string) string {
	return "srun --overlap --jobid " + shellQuote(id) + " --nodes=%n --ntasks-per-node=1 --nodelist=%H"
}

// Run runs the template: once per host, or once for all (Each), and
// returns what each run gave.
func (f Fanout) Run(ctx context.Context) []NodeAnswer {
	if f.Each {
		// Which nodes did not answer is decided by Merge from the
		// documents that came; the launch's error is their reason.
		docs, err := f.run(ctx, f.expand(""))
		return []NodeAnswer{{Facts: docs, Err: errText(err)}}
	}
	par := f.Parallel
	if par <= 0 {
		par = 32
	}
	answers := make([]NodeAnswer, len(f.Hosts))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, h := range f.Hosts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			docs, err := f.run(ctx, f.expand(h))
			answers[i] = NodeAnswer{Host: h, Facts: docs, Err: errText(err)}
		}()
	}
	wg.Wait()
	return answers
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// expand fills the template's %h, %H, %n and %% in, shell-quoted.
func (f Fanout) expand(host string) string {
	var b strings.Builder
	t := f.Template
	for i := 0; i < len(t); i++ {
		if t[i] != '%' || i+1 == len(t) {
			b.WriteByte(t[i])
			continue
		}
		i++
		switch t[i] {
		case 'h':
			b.WriteString(shellQuote(host))
		case 'H':
			b.WriteString(shellQuote(strings.Join(f.Hosts, ",")))
		case 'n':
			b.WriteString(strconv.Itoa(len(f.Hosts)))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(t[i])
		}
	}
	return b.String()
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.,:/@+=", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// run runs one expanded template with the node command appended, in a
// process group of its own that is killed at the timeout, and reads its
// output as node facts.
func (f Fanout) run(ctx context.Context, cmdline string) ([]NodeFacts, error) {
	if f.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", cmdline + ` "$@"`, "mpiprobe-fanout"}, f.Command...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var out limitedBuffer
	var errb tailBuffer
	out.max = maxNodeOutput
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		docs, _ := ReadNodeFacts(bytes.NewReader(out.Bytes()))
		return docs, fmt.Errorf("no answer within %.1f s (the timeout: raise --fanout-timeout)", time.Since(start).Seconds())
	case out.over:
		return nil, fmt.Errorf("printed more than %d MiB: not node facts", maxNodeOutput>>20)
	}
	docs, rerr := ReadNodeFacts(bytes.NewReader(out.Bytes()))
	if err != nil {
		what := err.Error()
		if l := errb.lastLine(); l != "" {
			what += ": " + l
		}
		return docs, errors.New(what)
	}
	if rerr != nil {
		return docs, rerr
	}
	return docs, nil
}

// limitedBuffer keeps up to max bytes and notes when more came.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		b.over = true
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// tailBuffer keeps the last 4 kB written: the end of a failed node
// command's stderr says why.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

// lastLine is the last non-empty line written.
func (t *tailBuffer) lastLine() string {
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

var _ io.Writer = (*tailBuffer)(nil)
