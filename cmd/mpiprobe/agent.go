package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/agent"
	configfile "github.com/mpiprobe/mpiprobe/internal/config"
	"github.com/mpiprobe/mpiprobe/internal/journal"
	"github.com/mpiprobe/mpiprobe/internal/metrics"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/probes"
	"github.com/mpiprobe/mpiprobe/thresholds"
)

// agentMain runs `mpiprobe agent`: the node-wide watcher of every MPI job.
func agentMain(ctx context.Context, args []string, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "mpiprobe agent: %v\n", err)
		return 1
	}
	var (
		cfgPath     string
		metricsAddr string
		stateDir    string
		pinDir      string
		events      string
		interval    time.Duration
		cleanup     bool
		verbose     bool
		th          thresholdFlags
	)
	flags := flag.NewFlagSet("mpiprobe agent", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.StringVar(&cfgPath, "config", configfile.DefaultPath, "configuration `FILE` (a missing default file means the defaults)")
	flags.StringVar(&metricsAddr, "metrics-addr", "", "serve Prometheus metrics on `ADDR` (host:port, or off); overrides metrics_addr")
	flags.StringVar(&stateDir, "state-dir", "", "state `DIR` (job summaries, agent state); overrides state_dir")
	flags.StringVar(&pinDir, "pin-dir", "", "BPF file system `DIR` for pinned maps and links; overrides pin_dir")
	flags.StringVar(&events, "events", "", "event `LEVELS` to enable (default, retries, messages, all); overrides events")
	flags.DurationVar(&interval, "interval", 0, "how often counters are read; overrides interval")
	flags.BoolVar(&cleanup, "cleanup", false, "remove the agent's pinned maps and links (detaching its probes) and exit")
	flags.BoolVar(&verbose, "v", false, "log each library attached")
	th.register(flags)
	flags.Usage = func() {
		fmt.Fprintf(stderr, "usage: mpiprobe agent [flags]\n\nWatches every MPI process on this node; see README.md (Node-wide agent).\n\nflags:\n")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "mpiprobe agent: unexpected argument %q (the agent finds MPI processes itself)\n", flags.Arg(0))
		return 2
	}
	file, err := loadConfigFile(cfgPath)
	explicit := false
	flags.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "config" })
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		file, err = configfile.Default(), nil
	}
	if err != nil {
		return fail(err)
	}
	if metricsAddr != "" {
		file.MetricsAddr = metricsAddr
		if metricsAddr == "off" {
			file.MetricsAddr = ""
		}
	}
	if stateDir != "" {
		file.StateDir = stateDir
	}
	if pinDir != "" {
		file.PinDir = pinDir
	}
	if interval > 0 {
		file.Interval = interval
	}
	if cleanup {
		if err := agent.Cleanup(file.PinDir); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stderr, "mpiprobe agent: removed %s\n", file.PinDir)
		return 0
	}
	levelSpec := strings.Join(file.Events, ",")
	if events != "" {
		levelSpec = events
	}
	if levelSpec == "" {
		levelSpec = string(probes.Default)
	}
	cat, err := selectLevels(levelSpec)
	if err != nil {
		return fail(err)
	}
	cli, err := th.overrides(cat)
	if err != nil {
		return fail(err)
	}

	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	// MPIPROBE_JOURNAL_SOCKET names another native-protocol socket than
	// journald's (tests, or a journald in a namespace).
	sink, err := journal.Open(journal.Options{Stderr: stderr, Socket: os.Getenv("MPIPROBE_JOURNAL_SOCKET")})
	if err != nil {
		return fail(err)
	}
	defer sink.Close()
	var ln net.Listener
	if file.MetricsAddr != "" {
		if ln, err = metrics.Listen(file.MetricsAddr); err != nil {
			return fail(err)
		}
		defer ln.Close()
		log.Info("metrics", "addr", ln.Addr().String())
	}
	err = agent.Run(ctx, agent.Config{
		Catalog:       cat,
		Overrides:     []thresholds.Overrides{file.Thresholds, cli},
		Interval:      file.Interval,
		StateDir:      file.StateDir,
		PinDir:        file.PinDir,
		LibraryPaths:  file.LibraryPaths,
		DebugDirs:     debugDirs(nil, file.DebugDirs),
		Metrics:       ln,
		MetricsTTL:    file.MetricsTTL,
		RetentionJobs: file.RetentionJobs,
		RetentionAge:  file.RetentionAge,
		Proc:          procfs.FS{Root: "/proc"},
		Log:           log,
		Journal:       sink,
	})
	if err != nil {
		return fail(err)
	}
	return 0
}
