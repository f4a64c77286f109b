package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mpiprobe/mpiprobe/internal/agent"
	configfile "github.com/mpiprobe/mpiprobe/internal/config"
	"github.com/mpiprobe/mpiprobe/internal/journal"
	"github.com/mpiprobe/mpiprobe/internal/metrics"
	"github.com/mpiprobe/mpiprobe/internal/query"
	"github.com/mpiprobe/mpiprobe/probes"
	"github.com/mpiprobe/mpiprobe/thresholds"
)

// agentFlags are the flags of `mpiprobe agent`.
type agentFlags struct {
	cfgPath     string
	metricsAddr string
	webConfig   string
	stateDir    string
	sharedDir   string
	pinDir      string
	events      string
	interval    time.Duration
	cleanup     bool
	verbose     bool
	debugDirs   []string
	cpuProfile  string
	querySocket string
	th          thresholdFlags
	scope       scopeFlag
}

// newAgentCmd builds `mpiprobe agent`: the node-wide watcher of every MPI job.
func newAgentCmd() *cobra.Command {
	var f agentFlags
	c := &cobra.Command{
		Use:   "agent [flags]",
		Short: "node-wide agent: every MPI job on this node",
		Long: "Watches every MPI process on this node: attaches once to every MPI library, keeps a summary per job\n" +
			"in the state dir (mpiprobe jobs, mpiprobe report JOBID), logs to the journal and serves metrics;\n" +
			"users who are not root get `mpiprobe status` of their own processes from it (--query-socket).\n" +
			"Run it under systemd (dist/mpiprobe.service, installed by make install); see docs/agent.md.",
		Args: noArgs("the agent finds MPI processes itself"),
		RunE: func(c *cobra.Command, _ []string) error {
			ctx, stop := signalContext(c.Context())
			defer stop()
			return f.run(ctx, c)
		},
	}
	fs := c.Flags()
	fs.SortFlags = false
	fs.StringVar(&f.cfgPath, "config", configfile.DefaultPath, "configuration `FILE` (a missing default file means the defaults)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on `ADDR` (host:port, or off); overrides metrics_addr")
	fs.StringVar(&f.webConfig, "web.config.file", "", "web configuration `FILE` of the metrics page: TLS and basic authentication, in the Prometheus exporters' format (docs/metrics.md)")
	fs.StringVar(&f.stateDir, "state-dir", "", "state `DIR` (job summaries, agent state); overrides state_dir")
	fs.StringVar(&f.sharedDir, "shared-dir", "", "`DIR` on a file system the nodes share: each job's part from this node is written there (mpiprobe report --job JOBID --shared-dir DIR merges them); overrides shared_dir")
	fs.StringVar(&f.pinDir, "pin-dir", "", "BPF file system `DIR` for pinned maps and links; overrides pin_dir")
	fs.StringVar(&f.events, "events", "", "event `LEVELS` to enable (default, retries, messages, all); overrides events")
	fs.DurationVar(&f.interval, "interval", 0, "how often counters are read, a `DURATION` from 100ms to 1m; overrides interval")
	fs.StringArrayVar(&f.debugDirs, "debug-dir", nil, debugDirHelp+"; before debug_dirs")
	fs.BoolVar(&f.cleanup, "cleanup", false, "remove the agent's pinned maps and links (detaching its probes) and exit")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "log each library attached")
	fs.StringVar(&f.querySocket, "query-socket", "", "answer `mpiprobe status` of users who are not root, for their own processes, on the unix socket `PATH` (or off); overrides query_socket")
	fs.StringVar(&f.cpuProfile, "cpu-profile", "", "write a Go CPU profile of the agent to `FILE` when it stops (go tool pprof FILE), for a report of its CPU use")
	f.th.register(fs)
	f.scope.register(fs)
	return c
}

// run checks the flags and runs the agent.
func (f *agentFlags) run(ctx context.Context, c *cobra.Command) error {
	stderr := c.ErrOrStderr()
	if c.Flags().Changed("interval") && (f.interval < configfile.MinInterval || f.interval > configfile.MaxInterval) {
		return usagef("--interval %s: give %s to %s, e.g. 1s", f.interval, configfile.MinInterval, configfile.MaxInterval)
	}
	if f.pinDir != "" && !strings.HasPrefix(f.pinDir, configfile.BPFRoot+"/") {
		return usagef("--pin-dir %s is not below %s (use e.g. /sys/fs/bpf/mpiprobe/agent)", f.pinDir, configfile.BPFRoot)
	}
	cfgPath := f.cfgPath
	file, err := loadConfigFile(cfgPath)
	read := cfgPath // the file the settings come from, for messages
	if errors.Is(err, fs.ErrNotExist) && !c.Flags().Changed("config") {
		file, err, read = configfile.Default(), nil, ""
	}
	if err != nil {
		return usageError{err}
	}
	if f.metricsAddr != "" {
		file.MetricsAddr = f.metricsAddr
		if f.metricsAddr == "off" {
			file.MetricsAddr = ""
		}
	}
	if f.stateDir != "" {
		file.StateDir = f.stateDir
	}
	if f.sharedDir != "" {
		if file.SharedDir, err = filepath.Abs(f.sharedDir); err != nil {
			return usagef("--shared-dir %s: %v", f.sharedDir, err)
		}
	}
	if f.pinDir != "" {
		file.PinDir = f.pinDir
	}
	if f.interval > 0 {
		file.Interval = f.interval
	}
	switch f.querySocket {
	case "":
	case query.Off:
		file.QuerySocket = ""
	default:
		if file.QuerySocket, err = filepath.Abs(f.querySocket); err != nil {
			return usagef("--query-socket %s: %v", f.querySocket, err)
		}
	}
	if f.cleanup {
		removed, err := agent.Cleanup(file.PinDir)
		if err != nil {
			return err
		}
		if !removed {
			fmt.Fprintf(stderr, "mpiprobe agent: nothing to remove: %s does not exist\n", file.PinDir)
			return nil
		}
		fmt.Fprintf(stderr, "mpiprobe agent: removed %s\n", file.PinDir)
		return nil
	}
	proc, err := f.scope.proc(&file)
	if err != nil {
		return err
	}
	levelSpec := strings.Join(file.Events, ",")
	if f.events != "" {
		levelSpec = f.events
	}
	if levelSpec == "" {
		levelSpec = string(probes.Default)
	}
	cat, err := selectLevels(levelSpec)
	if err != nil {
		return usageError{err}
	}
	cli, err := f.th.overrides(cat)
	if err != nil {
		return usageError{err}
	}

	level := slog.LevelInfo
	if f.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	// MPIPROBE_JOURNAL_SOCKET names another native-protocol socket than
	// journald's (tests, or a journald in a namespace).
	sink, err := journal.Open(journal.Options{Stderr: stderr, Socket: os.Getenv("MPIPROBE_JOURNAL_SOCKET")})
	if err != nil {
		return err
	}
	defer sink.Close()
	var ln net.Listener
	if f.webConfig != "" && file.MetricsAddr == "" {
		return usagef("--web.config.file %s: the metrics page is off; set --metrics-addr (or metrics_addr) too", f.webConfig)
	}
	if err := metrics.CheckWebConfig(f.webConfig); err != nil {
		return usageError{err}
	}
	if file.MetricsAddr != "" {
		if ln, err = metrics.Listen(file.MetricsAddr, read); err != nil {
			return err
		}
		defer ln.Close()
		log.Info("metrics", "addr", ln.Addr().String())
	}
	if f.cpuProfile != "" {
		out, err := os.Create(f.cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpu-profile: %w", err)
		}
		defer out.Close()
		if err := pprof.StartCPUProfile(out); err != nil {
			return fmt.Errorf("--cpu-profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	if file.QuerySocket != "" {
		// Users' status requests: a failure to listen leaves the agent
		// running without them.
		if qln, err := query.Listen(file.QuerySocket); err != nil {
			log.Warn("no query socket: users who are not root cannot ask for status", "err", err)
		} else {
			log.Info("query socket", "path", file.QuerySocket)
			served := make(chan struct{})
			qctx, stopQuery := context.WithCancel(ctx)
			go func() {
				defer close(served)
				if err := query.NewServer(statusHandler(proc), log).Serve(qctx, qln); err != nil {
					log.Error("query socket", "err", err)
				}
			}()
			defer func() { stopQuery(); <-served }()
		}
	}
	err = agent.Run(ctx, agent.Config{
		Catalog:          cat,
		Overrides:        []thresholds.Overrides{file.Thresholds, cli},
		Interval:         file.Interval,
		StateDir:         file.StateDir,
		SharedDir:        file.SharedDir,
		PinDir:           file.PinDir,
		LibraryPaths:     file.LibraryPaths,
		DebugDirs:        debugDirs(f.debugDirs, file.DebugDirs),
		ConfigPath:       read,
		Metrics:          ln,
		MetricsWebConfig: f.webConfig,
		MetricsTTL:       file.MetricsTTL,
		RetentionJobs:    file.RetentionJobs,
		RetentionAge:     file.RetentionAge,
		Proc:             proc,
		Log:              log,
		Journal:          sink,
	})
	return err
}
