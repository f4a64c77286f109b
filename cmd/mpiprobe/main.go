// Command mpiprobe makes the quiet workarounds of MPI libraries visible:
// it attaches uprobes to the MPI libraries of running ranks (or of a command
// it starts), counts unusual events in BPF maps, warns about them by the C/T
// rule and prints a per-job summary at the end.
//
//	sudo mpiprobe -p 4242
//	sudo mpiprobe -- mpirun -np 4 ./app
//	mpiprobe ps
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
//
// Flags are GNU style (spf13/pflag through spf13/cobra): -p 123, -p123,
// --pid=123. A mistake on the command line is one line on stderr and exit
// status 2; with -- COMMAND, mpiprobe exits with the command's status.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

func main() {
	os.Exit(execute(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// execute runs mpiprobe on args and returns its exit status: 0; 1 when
// something failed; 2 for a mistake on the command line; with a command
// to run, the command's status.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	c, err := root.ExecuteContextC(ctx)
	if c == nil {
		c = root
	}
	var code exitStatus
	var usage usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", c.CommandPath(), oneLine(err), c.CommandPath())
		return 2
	default:
		fmt.Fprintf(stderr, "%s: %v\n", c.CommandPath(), oneLine(err))
		return 1
	}
}

// oneLine returns err's message with its line breaks (errors.Join) turned
// into "; ", so that every error is one line.
func oneLine(err error) string {
	return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
}

// outputMode is the mode of the files mpiprobe writes with -o (summaries,
// traces, exports), less the umask: they hold command lines, paths and
// call sites of the user's jobs, so only their owner reads them, as perf
// does with perf.data.
const outputMode = 0o600

// usageError is a mistake on the command line: mpiprobe prints it with a
// hint to the help and exits 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usageError of the formatted message.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitStatus ends mpiprobe with that status, everything having been said.
type exitStatus int

func (e exitStatus) Error() string { return "exit status " + strconv.Itoa(int(e)) }

// flagError turns cobra's and pflag's parse errors into usage errors.
func flagError(_ *cobra.Command, err error) error { return usageError{err} }

// noArgs rejects arguments of a subcommand that takes none; what says
// what the subcommand wants instead.
func noArgs(what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %s (%s)", strconv.Quote(args[0]), what)
		}
		return nil
	}
}

// version names this build: the module version of a release, else the
// VCS revision of the checkout it was built from (versionOf).
func version() string {
	bi, ok := debug.ReadBuildInfo()
	return versionOf(bi, ok)
}

// versionOf names the build bi: its module version ("v1.2.0"), else
// "(devel) " and the commit it was built from, with "-dirty" when the
// checkout had changes; a build that recorded no commit says so and why.
func versionOf(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		return "unknown (built without module information)"
	}
	v := bi.Main.Version
	if v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return "(devel), commit not recorded (built with -buildvcs=false, or in a git worktree or a tree without .git: go build in a git clone records it)"
	}
	return "(devel) commit " + rev[:min(12, len(rev))] + dirty
}

// newVersionCmd builds `mpiprobe version`.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print mpiprobe's version",
		Args:  noArgs("version takes no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(c.OutOrStdout(), "mpiprobe %s\n", version())
			return err
		},
	}
}
