package main

import (
	"github.com/spf13/cobra"

	"github.com/mpiprobe/mpiprobe/internal/probecheck"
	"github.com/mpiprobe/mpiprobe/internal/report"
)

// newProbesCmd builds `mpiprobe probes -p PID`: every catalog entry,
// attached or unavailable in that process's libraries and why.
func newProbesCmd() *cobra.Command {
	var (
		pids   pidList
		events string
		asJSON bool
		debug  []string
		wide   bool
		scope  scopeFlag
	)
	c := &cobra.Command{
		Use:   "probes [flags] -p PID...",
		Short: "every catalog entry: attached or unavailable, and why",
		Long: "Attaches every catalog entry to the MPI libraries the process maps, lists each as attached\n" +
			"(with the file) or unavailable (with why), and detaches again. Nothing is counted.",
		Args: noArgs("give the process with -p PID"),
		RunE: func(c *cobra.Command, _ []string) error {
			if len(pids) == 0 {
				return usagef("no process: give -p PID (mpiprobe ps lists MPI processes)")
			}
			cat, err := selectLevels(events)
			if err != nil {
				return usageError{err}
			}
			pfs, err := scope.proc(nil)
			if err != nil {
				return err
			}
			var all []report.ProbeResult
			for _, pid := range pids {
				es, err := probecheck.Entries(pfs, pid, cat, debugDirs(debug, nil))
				if err != nil {
					return err
				}
				ls, err := probecheck.Layouts(pfs, pid, debugDirs(debug, nil))
				if err != nil {
					return err
				}
				all = append(all, report.ProbeResult{PID: pid, Entries: es, Layouts: ls})
			}
			if asJSON {
				return report.WriteProbesJSON(c.OutOrStdout(), all)
			}
			return report.WriteProbes(c.OutOrStdout(), all, tableWidth(c.OutOrStdout(), wide))
		},
	}
	fs := c.Flags()
	fs.SortFlags = false
	fs.VarP(&pids, "pid", "p", "check the MPI process `PID` (repeat, or comma-separate, for several)")
	fs.StringVar(&events, "events", "all", "comma-separated event `LEVELS` to check: default, retries, messages, or all")
	fs.BoolVar(&asJSON, "json", false, "print the entries as JSON")
	fs.BoolVar(&wide, "wide", false, wideHelp)
	fs.StringArrayVar(&debug, "debug-dir", nil, debugDirHelp)
	scope.register(fs)
	return c
}
