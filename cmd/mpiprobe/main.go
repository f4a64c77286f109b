// Command mpiprobe makes the quiet workarounds of MPI libraries visible:
// it attaches uprobes to the MPI libraries of running ranks (or of a command
// it starts), counts unusual events in BPF maps, warns about them by the C/T
// rule and prints a per-job summary at the end.
//
//	sudo mpiprobe -p 4242
//	sudo mpiprobe -- mpirun -np 4 ./app
//
// Trace mode records every MPI call with its call site and shows each
// rank's loop structure:
//
//	sudo mpiprobe trace -o run.trace -- mpirun -np 4 ./app
//	mpiprobe trace show run.trace --detail high
//
// Status names, for a running or hung job, the MPI call each rank is in,
// its communicator, for how long and the call site; --collectives tracks
// every collective per communicator for it and for the summary:
//
//	sudo mpiprobe status --job JOBID
//	sudo mpiprobe --collectives -p 4242
//
// The agent watches every MPI process of a node (run it under systemd, see
// dist/mpiprobe.service) and keeps a summary per job:
//
//	sudo mpiprobe agent
//	mpiprobe jobs
//	mpiprobe report JOBID
//	mpiprobe report --merge node1/ node2/
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/report"
	"github.com/mpiprobe/mpiprobe/internal/session"
	"github.com/mpiprobe/mpiprobe/probes"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 {
		if sc, ok := findSubcommand(os.Args[1]); ok {
			code := sc.run(ctx, os.Args[2:], os.Stdout, os.Stderr)
			stop()
			os.Exit(code)
		}
	}
	cfg, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "mpiprobe: %v\n", err)
		os.Exit(2)
	}
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "mpiprobe: %v\n", err)
		os.Exit(1)
	}
}

// subcommand is a first argument that runs a command of its own, with its
// own flags.
type subcommand struct {
	// name is the argument; synopsis how the help text shows its command
	// line; about what it does, in one line.
	name, synopsis, about string
	// run runs it on the arguments after name and returns the exit code:
	// 0, 1 on failure, 2 on bad usage.
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// subcommands lists the subcommands in the order the help text shows them.
func subcommands() []subcommand {
	return []subcommand{
		{"trace", "trace -h", "record and show every MPI call", traceMain},
		{"status", "status -h", "who waits where in a running or hung job", statusMain},
		{"probes", "probes -p PID", "every catalog entry: attached or unavailable, and why", probesMain},
		{"agent", "agent -h", "node-wide agent: every MPI job on this node",
			func(ctx context.Context, args []string, _, stderr io.Writer) int { return agentMain(ctx, args, stderr) }},
		{"jobs", "jobs", "the job summaries the agent wrote", jobsMain},
		{"report", "report JOBID | report --merge DIR...", "one job's summary, or several nodes' merged", reportMain},
	}
}

// findSubcommand returns the subcommand called name.
func findSubcommand(name string) (subcommand, bool) {
	for _, sc := range subcommands() {
		if sc.name == name {
			return sc, true
		}
	}
	return subcommand{}, false
}

// subcommandUsage is the help text's lines for the subcommands, their
// descriptions aligned.
func subcommandUsage() string {
	width := 0
	for _, sc := range subcommands() {
		width = max(width, len(sc.synopsis))
	}
	var b strings.Builder
	for _, sc := range subcommands() {
		fmt.Fprintf(&b, "       mpiprobe %-*s  (%s)\n", width, sc.synopsis, sc.about)
	}
	return b.String()
}

// config is the parsed command line.
type config struct {
	monitor session.Config
	json    bool
	verbose bool
}

// pidList collects repeated -p flags; "-p 1,2" works too.
type pidList []int

func (p *pidList) String() string { return fmt.Sprint(*p) }

func (p *pidList) Set(v string) error {
	for _, f := range strings.Split(v, ",") {
		pid, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || pid <= 0 {
			return fmt.Errorf("%q is not a process id", f)
		}
		*p = append(*p, pid)
	}
	return nil
}

// stringList collects a repeated string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func parseArgs(args []string, stderr io.Writer) (config, error) {
	var (
		cfg        config
		pids       pidList
		th         thresholdFlags
		libs       stringList
		debug      stringList
		configFile string
	)
	fs := flag.NewFlagSet("mpiprobe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&pids, "p", "trace the MPI process `PID` (repeat, or comma-separate, for several)")
	fs.StringVar(&cfg.monitor.Job, "job", "", "trace every rank of job `JOBID` on this node")
	th.register(fs)
	fs.StringVar(&configFile, "config", "", "read C/T overrides from `FILE` (the command line wins)")
	fs.Var(&libs, "lib", "also attach to MPI library `FILE` in command mode (repeatable)")
	fs.Var(&debug, "debug-dir", debugDirHelp)
	fs.DurationVar(&cfg.monitor.Interval, "interval", time.Second, "how often counters are read")
	fs.BoolVar(&cfg.json, "json", false, "print the summary as JSON on stdout (warnings go to stderr)")
	fs.BoolVar(&cfg.verbose, "v", false, "log attach details")
	fs.BoolVar(&cfg.monitor.Collectives, "collectives", false, "also track every collective per communicator (hot path: about 0.1 µs per call on top of the probe; see make bench); `mpiprobe status` reads it")
	fs.IntVar(&cfg.monitor.CommSlots, "comm-slots", session.DefaultCommSlots, "with --collectives: how many communicators, over all processes, can be tracked at once")
	events := fs.String("events", string(probes.Default), "comma-separated event `LEVELS` to enable: default, retries, messages, or all")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mpiprobe [flags] -p PID [-p PID ...]\n       mpiprobe [flags] --job JOBID\n       mpiprobe [flags] -- COMMAND [ARGS...]\n%s\nflags:\n", subcommandUsage())
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nevents:\n")
		for _, e := range probes.Full().Events {
			fmt.Fprintf(stderr, "  %-26s %-8s C=%-6d T=%-4s %s\n", e.ID, e.Level, e.C, e.T, e.Message)
		}
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	cfg.monitor.PIDs = pids
	cfg.monitor.Command = fs.Args()
	cfg.monitor.Libraries = libs

	cat, err := selectLevels(*events)
	if err != nil {
		return cfg, err
	}
	cfg.monitor.DebugDirs = debugDirs(debug, nil)
	if configFile != "" {
		// The file also serves the agent, which may enable other levels:
		// its events are checked against the full catalog, and its agent
		// keys are accepted and ignored here.
		file, err := loadConfigFile(configFile)
		if err != nil {
			return cfg, err
		}
		cfg.monitor.Overrides = append(cfg.monitor.Overrides, file.Thresholds)
		cfg.monitor.DebugDirs = debugDirs(debug, file.DebugDirs)
	}
	cli, err := th.overrides(cat)
	if err != nil {
		return cfg, err
	}
	cfg.monitor.Overrides = append(cfg.monitor.Overrides, cli)
	cfg.monitor.Catalog = cat
	return cfg, nil
}

// selectLevels returns the catalog of the named levels.
func selectLevels(spec string) (probes.Catalog, error) {
	full := probes.Full()
	if spec == "all" {
		return full, nil
	}
	var levels []probes.Level
	for _, name := range strings.Split(spec, ",") {
		l := probes.Level(strings.TrimSpace(name))
		if !slices.Contains(full.Levels(), l) {
			return probes.Catalog{}, fmt.Errorf("--events: unknown level %q (known: %v, all)", name, full.Levels())
		}
		levels = append(levels, l)
	}
	return full.Select(levels...), nil
}

// run traces until the targets are gone or ctx ends, then prints the summary.
func run(ctx context.Context, cfg config) error {
	level := slog.LevelInfo
	if cfg.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	cfg.monitor.Log = log
	out := io.Writer(os.Stdout)
	if cfg.json {
		cfg.monitor.Out = os.Stderr
	} else {
		cfg.monitor.Out = out
	}
	sum, err := session.Run(ctx, cfg.monitor)
	if len(sum.Jobs) > 0 || err == nil {
		var werr error
		if cfg.json {
			werr = report.WriteJSON(out, sum)
		} else {
			werr = report.WriteTable(out, sum)
		}
		if werr != nil && err == nil {
			err = fmt.Errorf("write summary: %w", werr)
		}
	}
	return err
}
