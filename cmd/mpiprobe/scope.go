package main

import (
	"os"

	"github.com/spf13/pflag"

	configfile "github.com/mpiprobe/mpiprobe/internal/config"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// scopeEnv names the scope when --scope is not given; it wins over the
// configuration file's scope key.
const scopeEnv = "MPIPROBE_SCOPE"

// scopeFlag is --scope of every command that chooses processes: which
// processes of the node it watches.
type scopeFlag struct {
	value string
	fs    *pflag.FlagSet
}

func (s *scopeFlag) register(fs *pflag.FlagSet) {
	s.fs = fs
	fs.StringVar(&s.value, "scope", procfs.ScopeHost, "which processes to watch: host (every process of this host) or netns (only those of mpiprobe's own network namespace, as a pod's sidecar); also $"+scopeEnv+" and the configuration's scope key (--scope wins, then the variable, then the file)")
}

// proc returns the /proc reader of the scope chosen: --scope, else
// $MPIPROBE_SCOPE, else the configuration file's scope key (file: nil
// when the command read no file, or the file did not set it), else host.
func (s scopeFlag) proc(file *configfile.Config) (procfs.FS, error) {
	scope, from := procfs.ScopeHost, "--scope"
	env, envSet := os.LookupEnv(scopeEnv)
	switch {
	case s.fs != nil && s.fs.Changed("scope"):
		scope = s.value
	case envSet:
		scope, from = env, scopeEnv
	case file != nil:
		if _, set := file.Lines["scope"]; set {
			scope, from = file.Scope, "scope"
		}
	}
	if err := procfs.CheckScope(scope, from); err != nil {
		return procfs.FS{}, usageError{err}
	}
	pfs, err := procfs.FS{}.Scoped(scope)
	if err != nil {
		return pfs, usageError{err}
	}
	return pfs, nil
}

// sessionProc is proc for a tracing session: with a command (-- COMMAND)
// the session follows the command's processes wherever they run, since
// the command names them, so the scope is checked but not applied; it
// applies to -p and --job.
func (s scopeFlag) sessionProc(file *configfile.Config, command []string) (procfs.FS, error) {
	pfs, err := s.proc(file)
	if err == nil && len(command) > 0 {
		pfs.Net = nil
	}
	return pfs, err
}
