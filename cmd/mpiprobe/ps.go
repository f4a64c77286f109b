package main

import (
	"os"

	"github.com/spf13/cobra"

	configfile "github.com/mpiprobe/mpiprobe/internal/config"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/ps"
)

// newPsCmd builds `mpiprobe ps`: the MPI processes of this node by job,
// with what traces them.
func newPsCmd() *cobra.Command {
	var (
		asJSON bool
		pinDir string
		wide   bool
		scope  scopeFlag
	)
	c := &cobra.Command{
		Use:   "ps [flags]",
		Short: "the MPI processes on this node, by job, and what traces them",
		Long: "Lists the processes that map Open MPI's libmpi or MPICH's libmpich, grouped by job: the job id\n" +
			"that --job takes, ranks, pids that -p takes, user, MPI library and command. TRACED BY names the\n" +
			"mpiprobe agent or session whose BPF map holds the pid (read from the kernel: needs root).",
		Args: noArgs("mpiprobe ps lists every MPI process of this node"),
		RunE: func(c *cobra.Command, _ []string) error {
			host, _ := os.Hostname()
			pfs, err := scope.proc(nil)
			if err != nil {
				return err
			}
			pfs.Root = procfs.DefaultRoot
			l, err := ps.Find(ps.Options{Proc: pfs, Host: host, PinDirs: []string{pinDir}, Self: os.Getpid()})
			if err != nil {
				return err
			}
			if asJSON {
				return ps.WriteJSON(c.OutOrStdout(), l)
			}
			return ps.Write(c.OutOrStdout(), l, tableWidth(c.OutOrStdout(), wide))
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	c.Flags().BoolVar(&wide, "wide", false, wideHelp)
	c.Flags().StringVar(&pinDir, "pin-dir", configfile.Default().PinDir, "the agent's pin `DIR`, to recognize its pinned probes")
	scope.register(c.Flags())
	return c
}
