package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/query"
	"github.com/mpiprobe/mpiprobe/internal/status"
)

// newStatusCmd builds `mpiprobe status`: who waits where in a running or
// hung job.
func newStatusCmd() *cobra.Command {
	var (
		cfg     status.Config
		pids    pidList
		asJSON  bool
		verbose bool
		scope   scopeFlag
		facts   bool
		fan     fanoutFlags
		sock    string
	)
	c := &cobra.Command{
		Use:   "status [flags] (-p PID... | --job JOBID)",
		Short: "who waits where in a running or hung job",
		Long: "Names, for every rank, the MPI call it is in, its communicator, for how long and the call site,\n" +
			"then a verdict on who waits where. Nothing is stopped. A running `mpiprobe --collectives` session\n" +
			"on the same ranks adds exact times, collective counts and their divergence.",
		Example: "  sudo mpiprobe status --job JOBID       (mpiprobe ps lists jobs)\n  sudo mpiprobe status -p 4242,4243 --json\n" +
			"  mpiprobe status --job JOBID            (as the job's user: the node's agent answers, docs/agent.md)\n" +
			"  sudo mpiprobe status --job JOBID --hosts n1,n2,n3 --fanout 'ssh %h'   (docs/cluster.md)\n" +
			"  mpiprobe status --job 4242.0 --hosts n1,n2 --fanout slurm",
		Args: noArgs("give ranks with -p PID or --job JOBID"),
		RunE: func(c *cobra.Command, _ []string) error {
			switch {
			case len(pids) == 0 && cfg.Job == "":
				return usagef("no target: give -p PID or --job JOBID (mpiprobe ps lists them)")
			case len(pids) > 0 && cfg.Job != "":
				return usagef("-p and --job both given: give one of them")
			case cfg.Window <= 0:
				return usagef("--window %s: give a duration above 0, e.g. 2s", cfg.Window)
			case cfg.MinWait < 0:
				return usagef("--min-wait %s: give 0 (the window) or a duration above 0", cfg.MinWait)
			case facts && fan.given():
				return usagef("--node-facts and --hosts/--fanout both given: --node-facts is what each node runs; give one of them")
			}
			cfg.PIDs = pids
			format := query.FormatTable
			switch {
			case facts:
				format = query.FormatNodeFacts
			case asJSON:
				format = query.FormatJSON
			}
			ctx, stop := signalContext(c.Context())
			defer stop()
			if os.Geteuid() != 0 && !fan.given() && sock != "" && sock != query.Off {
				// Status needs root: a user asks the agent, which
				// answers for their own processes only.
				out, err := query.Ask(ctx, sock, query.Request{Command: query.CommandStatus, PIDs: cfg.PIDs, Job: cfg.Job,
					Window: cfg.Window, MinWait: cfg.MinWait, Format: format, Verbose: verbose})
				if err != nil {
					return err
				}
				if _, err := c.OutOrStdout().Write(out); err != nil {
					return fmt.Errorf("write: %w", err)
				}
				return nil
			}
			var err error
			if cfg.Proc, err = scope.proc(nil); err != nil {
				return err
			}
			cfg.Log = logFlags{verbose: verbose}.logger(c.ErrOrStderr())
			var res status.Result
			if fan.given() {
				if scope.fs.Changed("scope") {
					fan.nodeArgs = append(fan.nodeArgs, "--scope", scope.value)
				}
				res, err = fan.collect(ctx, cfg)
			} else {
				res, err = status.Collect(ctx, cfg)
			}
			if err != nil {
				return err
			}
			return writeStatus(c.OutOrStdout(), res, format, verbose, cfg.Job)
		},
	}
	fs := c.Flags()
	fs.SortFlags = false
	fs.VarP(&pids, "pid", "p", "look at the MPI process `PID` (repeat, or comma-separate, for several)")
	fs.StringVar(&cfg.Job, "job", "", "look at every rank of job `JOBID` on this node")
	fs.DurationVar(&cfg.Window, "window", status.DefaultWindow, "without history, watch the threads this `DURATION` to tell a blocked call from repeated ones")
	fs.DurationVar(&cfg.MinWait, "min-wait", 0, "a rank inside a call this `DURATION` counts as blocked (default: the window)")
	fs.BoolVar(&asJSON, "json", false, "print the result as JSON")
	fs.BoolVarP(&verbose, "verbose", "v", false, "also print each thread's stack")
	scope.register(fs)
	fs.BoolVar(&facts, "node-facts", false, "print this node's ranks as node facts (one line of JSON) for a fanned-out status to merge")
	fan.register(fs)
	fs.StringVar(&sock, "query-socket", query.DefaultPath, "run by a user other than root, ask the agent listening on this unix socket `PATH` (off: never)")
	return c
}

// writeStatus prints a status result in a format of package query: the
// one renderer of a direct status and of the agent's answers, so that a
// user's status through the agent prints what root's does.
func writeStatus(w io.Writer, res status.Result, format string, verbose bool, job string) error {
	var err error
	switch format {
	case query.FormatNodeFacts:
		err = status.WriteNodeFacts(w, status.NewNodeFacts(res, job))
	case query.FormatJSON:
		err = status.WriteJSON(w, res)
	default:
		err = status.Write(w, res, verbose)
	}
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// statusHandler answers the agent's query socket: status of the caller's
// processes (all of them for root), read through proc.
func statusHandler(proc procfs.FS) query.Handler {
	return func(ctx context.Context, req query.Request, peer query.Peer) ([]byte, error) {
		res, err := status.Collect(ctx, status.Config{PIDs: req.PIDs, Job: req.Job, Window: req.Window, MinWait: req.MinWait,
			Proc: proc, Allow: query.Owns(proc, peer.UID)})
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		err = writeStatus(&b, res, req.Format, req.Verbose, req.Job)
		return b.Bytes(), err
	}
}

// signalContext returns a context that SIGINT or SIGTERM cancels.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}
