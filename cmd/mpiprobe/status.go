package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/mpiprobe/mpiprobe/internal/status"
)

// statusMain runs `mpiprobe status`: who waits where in a running or hung
// job. It returns the exit code: 0, 1 on failure, 2 on bad usage.
func statusMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		cfg     status.Config
		pids    pidList
		asJSON  bool
		verbose bool
	)
	fs := flag.NewFlagSet("mpiprobe status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&pids, "p", "look at the MPI process `PID` (repeat, or comma-separate, for several)")
	fs.StringVar(&cfg.Job, "job", "", "look at every rank of job `JOBID` on this node")
	fs.DurationVar(&cfg.Window, "window", status.DefaultWindow, "without history, watch the threads this long to tell a blocked call from repeated ones")
	fs.DurationVar(&cfg.MinWait, "min-wait", 0, "a rank inside a call this long counts as blocked (default: the window)")
	fs.BoolVar(&asJSON, "json", false, "print the result as JSON")
	fs.BoolVar(&verbose, "v", false, "also print each thread's stack")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mpiprobe status [flags] -p PID [-p PID ...]\n       mpiprobe status [flags] --job JOBID\n\n"+
			"Names, for every rank, the MPI call it is in, its communicator, for how long and the call site,\n"+
			"then a verdict on who waits where. Nothing is stopped. A running `mpiprobe --collectives` session\n"+
			"on the same ranks adds exact times, collective counts and their divergence.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mpiprobe status: unexpected argument %q (give ranks with -p or --job)\n", fs.Arg(0))
		return 2
	}
	if len(pids) == 0 && cfg.Job == "" {
		fmt.Fprintf(stderr, "mpiprobe status: no target: give -p PID or --job JOBID\n")
		return 2
	}
	cfg.PIDs = pids
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	cfg.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	res, err := status.Collect(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "mpiprobe status: %v\n", err)
		return 1
	}
	if asJSON {
		err = status.WriteJSON(stdout, res)
	} else {
		err = status.Write(stdout, res, verbose)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mpiprobe status: write: %v\n", err)
		return 1
	}
	return 0
}
