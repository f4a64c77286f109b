package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/report"
	"github.com/mpiprobe/mpiprobe/internal/session"
)

// probesMain runs `mpiprobe probes -p PID`: every catalog entry, attached
// or unavailable in that process's libraries and why. It returns the exit
// code: 0, 1 on failure, 2 on bad usage.
func probesMain(_ context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		pids   pidList
		events string
		asJSON bool
		debug  stringList
	)
	fs := flag.NewFlagSet("mpiprobe probes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&pids, "p", "check the MPI process `PID` (repeat, or comma-separate, for several)")
	fs.StringVar(&events, "events", "all", "comma-separated event `LEVELS` to check: default, retries, messages, or all")
	fs.BoolVar(&asJSON, "json", false, "print the entries as JSON")
	fs.Var(&debug, "debug-dir", debugDirHelp)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mpiprobe probes [flags] -p PID\n\n"+
			"Attaches every catalog entry to the MPI libraries the process maps, lists each as attached\n"+
			"(with the file) or unavailable (with why), and detaches again. Nothing is counted.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || len(pids) == 0 {
		fmt.Fprintf(stderr, "mpiprobe probes: give the process with -p PID\n")
		return 2
	}
	cat, err := selectLevels(events)
	if err != nil {
		fmt.Fprintf(stderr, "mpiprobe probes: %v\n", err)
		return 2
	}
	var all []report.ProbeResult
	for _, pid := range pids {
		es, err := session.ProbeEntries(procfs.FS{Root: "/proc"}, pid, cat, debugDirs(debug, nil))
		if err != nil {
			fmt.Fprintf(stderr, "mpiprobe probes: %v\n", err)
			return 1
		}
		ls, err := session.ProbeLayouts(procfs.FS{Root: "/proc"}, pid, debugDirs(debug, nil))
		if err != nil {
			fmt.Fprintf(stderr, "mpiprobe probes: %v\n", err)
			return 1
		}
		all = append(all, report.ProbeResult{PID: pid, Entries: es, Layouts: ls})
	}
	if asJSON {
		err = report.WriteProbesJSON(stdout, all)
	} else {
		err = report.WriteProbes(stdout, all)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mpiprobe probes: %v\n", err)
		return 1
	}
	return 0
}
