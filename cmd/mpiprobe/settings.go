package main

import (
	"flag"
	"fmt"
	"slices"

	configfile "github.com/mpiprobe/mpiprobe/internal/config"
	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/probes"
	"github.com/mpiprobe/mpiprobe/thresholds"
)

// loadConfigFile reads a configuration file. Its events are checked
// against the full catalog: one file serves the agent and the per-job
// command, which may enable different levels.
func loadConfigFile(path string) (configfile.Config, error) {
	full := probes.Full()
	var levels []string
	for _, l := range full.Levels() {
		levels = append(levels, string(l))
	}
	return configfile.Load(path, configfile.Options{
		KnownEvent: func(id string) bool { _, _, ok := full.Lookup(id); return ok },
		Levels:     levels,
	})
}

// debugDirs returns the directories searched for separate debug files: the
// command line's, then the configuration file's, then the system's; nil
// (the system's alone) when neither names one.
func debugDirs(cli, file []string) []string {
	if len(cli) == 0 && len(file) == 0 {
		return nil
	}
	var out []string
	for _, d := range slices.Concat(cli, file, []string{elfx.DefaultDebugDir}) {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// debugDirHelp documents --debug-dir for every subcommand that attaches probes.
const debugDirHelp = "also look for a library's separate debug file (DIR/.build-id/ab/cdef….debug) here, to read a struct layout of a build mpiprobe does not know (repeatable)"

// thresholdFlags are the command line's C/T overrides: -C, -T and
// --threshold, shared by the per-job command and the agent.
type thresholdFlags struct {
	c, t  string
	specs stringList
}

func (f *thresholdFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.c, "C", "", "count threshold `N` for every event (overrides the catalog)")
	fs.StringVar(&f.t, "T", "", "time delay `DURATION` between two reports of an event, e.g. 10s")
	fs.Var(&f.specs, "threshold", "`EVENT=C/T` override for one event (repeatable), e.g. ob1.send_pending.new=500/5s")
}

// overrides parses the flags; events must be in cat.
func (f *thresholdFlags) overrides(cat probes.Catalog) (thresholds.Overrides, error) {
	var cli thresholds.Overrides
	if f.c != "" {
		c, err := thresholds.ParseC(f.c)
		if err != nil {
			return cli, fmt.Errorf("-C: %w", err)
		}
		cli.C = &c
	}
	if f.t != "" {
		t, err := thresholds.ParseT(f.t)
		if err != nil {
			return cli, fmt.Errorf("-T: %w", err)
		}
		cli.T = &t
	}
	for _, spec := range f.specs {
		if err := cli.AddEventSpec(spec); err != nil {
			return cli, fmt.Errorf("--threshold: %w", err)
		}
	}
	for id := range cli.Events {
		if _, _, ok := cat.Lookup(id); !ok {
			return cli, fmt.Errorf("--threshold: unknown event %q (mpiprobe -h lists them)", id)
		}
	}
	return cli, nil
}
