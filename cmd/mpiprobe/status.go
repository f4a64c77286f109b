package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

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
	)
	c := &cobra.Command{
		Use:   "status [flags] (-p PID... | --job JOBID)",
		Short: "who waits where in a running or hung job",
		Long: "Names, for every rank, the MPI call it is in, its communicator, for how long and the call site,\n" +
			"then a verdict on who waits where. Nothing is stopped. A running `mpiprobe --collectives` session\n" +
			"on the same ranks adds exact times, collective counts and their divergence.",
		Example: "  sudo mpiprobe status --job JOBID       (mpiprobe ps lists jobs)\n  sudo mpiprobe status -p 4242,4243 --json\n" +
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
			var err error
			if cfg.Proc, err = scope.proc(nil); err != nil {
				return err
			}
			cfg.Log = logFlags{verbose: verbose}.logger(c.ErrOrStderr())
			ctx, stop := signalContext(c.Context())
			defer stop()
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
			switch {
			case facts:
				err = status.WriteNodeFacts(c.OutOrStdout(), status.NewNodeFacts(res, cfg.Job))
			case asJSON:
				err = status.WriteJSON(c.OutOrStdout(), res)
			default:
				err = status.Write(c.OutOrStdout(), res, verbose)
			}
			if err != nil {
				return fmt.Errorf("write: %w", err)
			}
			return nil
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
	return c
}

// signalContext returns a context that SIGINT or SIGTERM cancels.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}
