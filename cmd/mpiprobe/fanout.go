package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/mpiprobe/mpiprobe/internal/hostlist"
	"github.com/mpiprobe/mpiprobe/internal/status"
)

// fanoutFlags are status's flags for a job across nodes: the nodes, how
// to reach them, and how long to wait for them.
type fanoutFlags struct {
	hostList string // --hosts as given: n1,n2 or Slurm's n[1-4,7]
	template string
	each     bool
	timeout  time.Duration
	parallel int
	command  string
	// nodeArgs are passed on to every node's command: the caller's
	// --scope, which each node then applies to its own processes.
	nodeArgs []string
}

// fanoutMargin is what a node's answer may take beyond the window by
// default: the remote start (ssh, srun) and status's own setup.
const fanoutMargin = 5 * time.Second

func (f *fanoutFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.hostList, "hosts", "", "the job's nodes, comma-separated or as Slurm writes them (n[1-4,7]): status runs on each (--fanout) and merges their facts into one verdict")
	fs.StringVar(&f.template, "fanout", "", "how to run a command on a node: a shell `TEMPLATE` with %h for the host and the node command appended (\"ssh %h\"), or \"slurm\" (srun --overlap into the job)")
	fs.BoolVar(&f.each, "fanout-each", false, "the template runs the node command on every host in one call (%H the hosts comma-separated, %n their number) and prints one document per node")
	fs.DurationVar(&f.timeout, "fanout-timeout", 0, "give up on a node (in --fanout-each, on the call) after `DURATION` (default: the window + 5s)")
	fs.IntVar(&f.parallel, "fanout-parallel", 32, "run the template for at most `N` hosts at once")
	fs.StringVar(&f.command, "node-command", "", "mpiprobe's `PATH` on the nodes (default: this mpiprobe's path)")
}

func (f *fanoutFlags) given() bool { return f.hostList != "" || f.template != "" }

// collect runs the node command on every host and merges their facts.
func (f *fanoutFlags) collect(ctx context.Context, cfg status.Config) (status.Result, error) {
	switch {
	case cfg.Job == "":
		return status.Result{}, usagef("--hosts/--fanout need --job JOBID: the job is found on each node by its id")
	case f.hostList == "":
		return status.Result{}, usagef("--fanout without --hosts: give the job's nodes, e.g. --hosts n1,n2 (on Slurm: scontrol show hostnames)")
	case f.template == "":
		return status.Result{}, usagef("--hosts without --fanout: say how to reach a node, e.g. --fanout 'ssh %%h' or --fanout slurm")
	case f.parallel <= 0:
		return status.Result{}, usagef("--fanout-parallel %d: give 1 or more", f.parallel)
	case f.timeout < 0:
		return status.Result{}, usagef("--fanout-timeout %s: give a duration above 0", f.timeout)
	}
	hosts, err := hostlist.Expand(f.hostList)
	if err != nil {
		return status.Result{}, usagef("--hosts %s: %v; give names separated by single commas, or a Slurm list such as n[1-4,7]", f.hostList, err)
	}
	for _, h := range hosts {
		if strings.TrimSpace(h) != h {
			return status.Result{}, usagef("--hosts %s: host name %q has blanks; give names separated by single commas", f.hostList, h)
		}
	}
	fo := status.Fanout{Template: f.template, Each: f.each, Hosts: hosts, Timeout: f.timeout, Parallel: f.parallel}
	if f.template == "slurm" {
		// The Slurm job id is the first part of mpiprobe's job key
		// ("<job>.<step>", "<job>/<launcher's job>"), after the
		// cluster's name ("<cluster>:<job>.<step>").
		job := cfg.Job
		if i := strings.LastIndex(job, ":"); i >= 0 {
			job = job[i+1:]
		}
		id, _, _ := strings.Cut(strings.ReplaceAll(job, "/", "."), ".")
		fo.Template, fo.Each = status.SlurmTemplate(id), true
	}
	if fo.Timeout == 0 {
		fo.Timeout = cfg.Window + fanoutMargin
	}
	exe := f.command
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return status.Result{}, fmt.Errorf("find this mpiprobe's path for the nodes (%v): give --node-command PATH", err)
		}
	}
	fo.Command = append([]string{exe, "status", "--node-facts", "--job", cfg.Job, "--window", cfg.Window.String()}, f.nodeArgs...)
	answers := fo.Run(ctx)
	minWait := cfg.MinWait
	if minWait == 0 {
		minWait = cfg.Window
	}
	m := status.Merge(hosts, answers, minWait)
	if len(m.Answered) == 0 {
		f := m.Missing[0]
		return status.Result{}, fmt.Errorf("no node answered (%d asked); %s: %s: try the node command by hand: %s",
			len(m.Missing), f.Host, f.Reason, strings.Join(fo.Command, " "))
	}
	return m.Result(cfg.Job, cfg.Window), nil
}
