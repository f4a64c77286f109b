package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/atomicfile"
	configfile "github.com/mpiprobe/mpiprobe/internal/config"
	"github.com/mpiprobe/mpiprobe/internal/report"
	"github.com/mpiprobe/mpiprobe/internal/session"
	"github.com/mpiprobe/mpiprobe/internal/text"
	"github.com/mpiprobe/mpiprobe/probes"
)

// rootFlags are the root command's flags as given, before checking.
type rootFlags struct {
	pids        pidList
	job         string
	output      string
	json        bool
	log         logFlags
	duration    time.Duration
	th          thresholdFlags
	configFile  string
	events      string
	libs        []string
	debugDirs   []string
	collectives bool
	commSlots   int
	// commSlotsSet is whether --comm-slots was given.
	commSlotsSet bool
	interval     time.Duration
	scope        scopeFlag
}

// config is the checked command line of a tracing session.
type config struct {
	monitor session.Config
	// output is the summary's file, "" for stdout.
	output   string
	json     bool
	log      logFlags
	duration time.Duration
}

const rootLong = `mpiprobe places eBPF uprobes on the MPI libraries of running ranks (-p, --job), or of
a command it starts (after --), counts the quiet workarounds of the MPI library, warns
about them by the C/T rule and prints a per-job summary when the targets end or on
SIGINT/SIGTERM.

With -- COMMAND, mpiprobe exits with the command's status (128+N when signal N killed
it); a SIGINT or SIGTERM it receives is passed on to the command's process group, and
mpiprobe still waits for the command and prints the summary, then exits 128+N.

The summary goes to stdout, or to FILE with -o. With --json and no -o, the command's
standard output goes to mpiprobe's standard error, so that stdout holds the JSON alone;
warnings go to stderr with --json.`

const rootExample = `  sudo mpiprobe -p 4242                    attach to a running rank (repeat -p, or -p 1,2,3)
  sudo mpiprobe --job JOBID                every rank of a job on this node (mpiprobe ps lists them)
  sudo mpiprobe -- mpirun -np 4 ./app      start a command and follow every process it spawns
  sudo mpiprobe --json -o sum.json -- mpirun -np 4 ./app`

// newRootCmd builds the mpiprobe command and its subcommands.
func newRootCmd() *cobra.Command {
	var f rootFlags
	root := &cobra.Command{
		Use:     "mpiprobe [flags] (-p PID... | --job JOBID | -- COMMAND [ARGS...])",
		Short:   "make the quiet workarounds of MPI libraries visible",
		Long:    rootLong,
		Example: rootExample,
		Version: version(),
		Args:    argsAfterDash,
		RunE: func(c *cobra.Command, args []string) error {
			f.commSlotsSet = c.Flags().Changed("comm-slots")
			cfg, err := f.config(args, c.ArgsLenAtDash(), memTotal())
			if err != nil {
				return err
			}
			return runSession(c.Context(), cfg, c.OutOrStdout(), c.ErrOrStderr())
		},
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetFlagErrorFunc(flagError)
	root.SetVersionTemplate("mpiprobe {{.Version}}\n")
	// A bare word before -- is never a command to run: flags stop there
	// and argsAfterDash rejects it, naming the subcommand it resembles.
	root.Flags().SetInterspersed(false)
	f.register(root.Flags())

	defaultHelp := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		defaultHelp(c, args)
		if c == root {
			writeEvents(c.OutOrStdout())
		}
	})
	root.AddCommand(newTraceCmd(), newStatusCmd(), newPsCmd(), newProbesCmd(), newAgentCmd(),
		newJobsCmd(), newReportCmd(), newVersionCmd())
	return root
}

// register defines the root command's flags on fs.
func (f *rootFlags) register(fs *pflag.FlagSet) {
	fs.SortFlags = false
	fs.VarP(&f.pids, "pid", "p", "trace the MPI process `PID` (repeat, or comma-separate, for several; mpiprobe ps lists them)")
	fs.StringVar(&f.job, "job", "", "trace every rank of job `JOBID` on this node (mpiprobe ps lists jobs)")
	fs.StringVarP(&f.output, "output", "o", "", "write the summary to `FILE` instead of stdout")
	fs.BoolVar(&f.json, "json", false, "summary as JSON; warnings go to stderr, and without -o so does the command's stdout")
	f.th.register(fs)
	fs.StringVar(&f.configFile, "config", "", "read C/T overrides from `FILE` (the command line wins)")
	fs.StringVar(&f.events, "events", string(probes.Default), "comma-separated event `LEVELS` to enable: default, retries, messages, or all")
	fs.StringArrayVar(&f.libs, "lib", nil, "with -- COMMAND, also attach to MPI library `FILE` (repeatable); those ldconfig knows, those in $LD_LIBRARY_PATH and those in the lib directory beside the launcher's bin are found without it")
	fs.StringArrayVar(&f.debugDirs, "debug-dir", nil, debugDirHelp)
	fs.BoolVar(&f.collectives, "collectives", false, "also track every collective per communicator (hot path: about 0.1 µs per call on top of the probe; see make bench); mpiprobe status reads it")
	fs.IntVar(&f.commSlots, "comm-slots", session.DefaultCommSlots, "with --collectives: how many communicators (`N`), over all processes, can be tracked at once")
	fs.DurationVar(&f.interval, "interval", time.Second, "how often counters are read: a `DURATION` above 0")
	fs.DurationVar(&f.duration, "duration", 0, durationHelp)
	f.log.register(fs, "also log each probe attached and the session's progress")
	f.scope.register(fs)
}

// parseRootArgs parses a root command line that runs a session into its
// configuration, without running anything.
func parseRootArgs(args []string, mem uint64) (config, error) {
	var f rootFlags
	fs := pflag.NewFlagSet("mpiprobe", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(false)
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return config{}, usageError{err}
	}
	f.commSlotsSet = fs.Changed("comm-slots")
	return f.config(fs.Args(), fs.ArgsLenAtDash(), mem)
}

// writeEvents lists the catalog's events with their level, C and T, for
// the root command's help.
func writeEvents(w io.Writer) {
	fmt.Fprintf(w, "\nEvents (C and T by default; -C, -T and --threshold change them):\n")
	for _, e := range probes.Full().Events {
		fmt.Fprintf(w, "  %-26s %-8s C=%-6d T=%-4s %s\n", e.ID, e.Level, e.C, e.T, e.Message)
	}
}

// argsAfterDash accepts arguments only after --: a word before it is a
// mistyped subcommand, or a command that lacks its --. It is never run.
func argsAfterDash(c *cobra.Command, args []string) error {
	before := args
	if dash := c.ArgsLenAtDash(); dash >= 0 {
		before = args[:dash]
	}
	if len(before) == 0 {
		return nil
	}
	word := before[0]
	hint := fmt.Sprintf("a command to trace goes after --: %s [flags] -- %s ...", c.CommandPath(), text.Quote(word))
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	if s := c.SuggestionsFor(word); len(s) > 0 {
		return usagef("unknown subcommand %s: did you mean %s? (%s)", strconv.Quote(word), strconv.Quote(s[0]), hint)
	}
	return usagef("unknown subcommand %s (%s)", strconv.Quote(word), hint)
}

// config checks the flags and returns the session's configuration; dash
// is how many of args came before "--" (-1 without one). mem is the
// node's memory in bytes (0 unknown), which bounds --comm-slots. Nothing
// is attached yet: every mistake is a usageError.
func (f *rootFlags) config(args []string, dash int, mem uint64) (config, error) {
	cfg := config{output: f.output, json: f.json, log: f.log, duration: f.duration}
	if dash > 0 {
		return cfg, usagef("unexpected argument %s before --", strconv.Quote(args[0]))
	}
	m := &cfg.monitor
	m.PIDs = f.pids
	m.Job = f.job
	m.Command = args
	m.Libraries = f.libs
	m.Interval = f.interval
	m.Collectives = f.collectives
	m.CommSlots = f.commSlots
	if err := checkTargets(m, dash, len(args), "mpiprobe [flags] -- COMMAND [ARGS...]"); err != nil {
		return cfg, err
	}
	if err := f.log.check(); err != nil {
		return cfg, err
	}
	if err := checkDuration(f.duration); err != nil {
		return cfg, err
	}
	switch {
	case f.interval <= 0:
		return cfg, usagef("--interval %s: give a duration above 0, e.g. 1s or 200ms", f.interval)
	case f.commSlotsSet && !f.collectives:
		return cfg, usagef("--comm-slots goes with --collectives (it sizes the collective tracking, which is off without it)")
	}
	if f.collectives {
		if err := checkCommSlots(f.commSlots, mem); err != nil {
			return cfg, usageError{err}
		}
	}
	cat, err := selectLevels(f.events)
	if err != nil {
		return cfg, usageError{err}
	}
	m.DebugDirs = debugDirs(f.debugDirs, nil)
	var file *configfile.Config
	if f.configFile != "" {
		// The file also serves the agent, which may enable other levels:
		// its events are checked against the full catalog, and its agent
		// keys are accepted and ignored here.
		c, err := loadConfigFile(f.configFile)
		if err != nil {
			return cfg, usageError{err}
		}
		file = &c
		m.Overrides = append(m.Overrides, c.Thresholds)
		m.DebugDirs = debugDirs(f.debugDirs, c.DebugDirs)
	}
	if m.Proc, err = f.scope.sessionProc(file, m.Command); err != nil {
		return cfg, err
	}
	cli, err := f.th.overrides(cat)
	if err != nil {
		return cfg, usageError{err}
	}
	m.Overrides = append(m.Overrides, cli)
	m.Catalog = cat
	return cfg, nil
}

// runSession traces until the targets are gone or a signal comes, then
// writes the summary. With a command, its status becomes mpiprobe's.
func runSession(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	cfg.monitor.Log = cfg.log.logger(stderr)
	out := stdout
	var file *atomicfile.File
	if cfg.output != "" {
		// Opened before anything attaches: a bad path costs nothing. The
		// summary goes to a temporary file renamed into place once whole.
		f, err := atomicfile.Create(cfg.output, outputMode)
		if err != nil {
			return fmt.Errorf("-o: %w", err)
		}
		defer f.Abort()
		file, out = f, f
	}
	cfg.monitor.Out = stdout
	cfg.monitor.Stdout = stdout
	cfg.monitor.Stderr = stderr
	if cfg.json {
		cfg.monitor.Out = stderr
		if cfg.output == "" {
			// stdout holds the JSON alone.
			cfg.monitor.Stdout = stderr
		}
	}
	if cfg.log.quiet {
		cfg.monitor.Out = io.Discard
	}
	ctx, cancel := withDuration(ctx, cfg.duration)
	defer cancel()

	cmd := watchCommand(&cfg.monitor)
	defer cmd.stop()

	sum, err := session.Run(ctx, cfg.monitor)
	if len(sum.Jobs) > 0 || err == nil {
		var werr error
		if cfg.json {
			werr = report.WriteJSON(out, sum)
		} else {
			werr = report.WriteTable(out, sum)
		}
		if file != nil {
			// A summary that was not written is the first thing to say.
			if werr = file.Finish(werr); werr != nil {
				return werr
			}
		} else if werr != nil && err == nil {
			err = fmt.Errorf("write summary: %w", werr)
		}
	}
	if err != nil {
		return err
	}
	return cmd.status()
}

// commandWatch passes SIGINT and SIGTERM on to a session (which stops
// tracing -p/--job targets, or passes them on to the command) and keeps
// what mpiprobe's exit status needs: the first signal and how the command
// ended. Both modes, counting and trace, exit the same way.
type commandWatch struct {
	sigs chan os.Signal
	got  atomic.Int32 // the first signal received
	end  *agg.End
}

// watchCommand starts passing signals on to the session of m.
func watchCommand(m *session.Config) *commandWatch {
	w := &commandWatch{sigs: make(chan os.Signal, 4)}
	signal.Notify(w.sigs, os.Interrupt, syscall.SIGTERM)
	relay := make(chan os.Signal, 4)
	go func() {
		for s := range w.sigs {
			if n, ok := s.(syscall.Signal); ok {
				w.got.CompareAndSwap(0, int32(n))
			}
			relay <- s
		}
	}()
	m.Signals = relay
	m.CommandEnded = func(e agg.End) { w.end = &e }
	return w
}

// stop stops receiving signals.
func (w *commandWatch) stop() { signal.Stop(w.sigs) }

// status is mpiprobe's exit once the session has returned: commandStatus.
func (w *commandWatch) status() error { return commandStatus(w.end, int(w.got.Load())) }

// commandStatus is mpiprobe's exit after a session: nil when no command
// ran or it exited 0 untroubled, else its status; 128+sig when mpiprobe
// passed signal sig on to the command, whatever status the launcher then
// chose (Open MPI's mpirun exits 1 after SIGINT, hydra's mpiexec 0), as a
// shell expects of an interrupted job.
func commandStatus(end *agg.End, sig int) error {
	switch {
	case end == nil:
		return nil
	case sig != 0:
		return exitStatus(128 + sig)
	case end.Kind == agg.Signaled:
		return exitStatus(128 + end.Signal)
	case end.Kind == agg.Exited && end.Code != 0:
		return exitStatus(end.Code)
	case end.Kind == agg.Exited:
		return nil
	}
	return errors.New("the command's exit status is unknown")
}

// checkTargets checks that m names exactly one kind of target: pids, a
// job, or a command (after "--", of which dash arguments came before and
// nargs after; synopsis is how a command is given, for the error).
func checkTargets(m *session.Config, dash, nargs int, synopsis string) error {
	switch {
	case dash == 0 && nargs == 0:
		return usagef("no command after --: give %s", synopsis)
	case len(m.PIDs) > 0 && m.Job != "":
		return usagef("-p and --job both given: give one of them")
	case len(m.Command) > 0 && (len(m.PIDs) > 0 || m.Job != ""):
		return usagef("-p/--job and a command both given: trace running ranks, or start a command after --, not both")
	case len(m.PIDs) == 0 && m.Job == "" && len(m.Command) == 0:
		return usagef("nothing to trace: give -p PID, --job JOBID or -- COMMAND (mpiprobe ps lists MPI processes)")
	case len(m.Libraries) > 0 && len(m.Command) == 0:
		return usagef("--lib goes with -- COMMAND (with -p or --job, mpiprobe finds the libraries the ranks map)")
	}
	return nil
}
