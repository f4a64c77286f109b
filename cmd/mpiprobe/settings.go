package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/mpiprobe/mpiprobe/internal/collstate"
	configfile "github.com/mpiprobe/mpiprobe/internal/config"
	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/text"
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

// logFlags are -v and -q of the commands that trace: what mpiprobe says on
// stderr besides errors. By default only warnings are logged; -v adds the
// details (each probe attached, the session's progress), -q leaves errors
// alone and, in the counting mode, drops the C/T warning lines too.
type logFlags struct{ verbose, quiet bool }

func (l *logFlags) register(fs *pflag.FlagSet, verbose string) {
	fs.BoolVarP(&l.verbose, "verbose", "v", false, verbose)
	fs.BoolVarP(&l.quiet, "quiet", "q", false, "print no warnings: only errors and the result")
}

// check rejects -v with -q.
func (l logFlags) check() error {
	if l.verbose && l.quiet {
		return usagef("-v and -q both given: give one of them")
	}
	return nil
}

// logger returns the log of a command, written to w as text: warnings;
// with -v everything down to debug; with -q errors only.
func (l logFlags) logger(w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	switch {
	case l.verbose:
		level = slog.LevelDebug
	case l.quiet:
		level = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// withDuration returns ctx cut off after d, or ctx when d is 0 (no limit):
// --duration of the counting mode and of trace.
func withDuration(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// checkDuration checks --duration: 0 (none) or above.
func checkDuration(d time.Duration) error {
	if d < 0 {
		return usagef("--duration %s: give a duration above 0, or none to run until the targets end", d)
	}
	return nil
}

// durationHelp documents --duration of the commands that trace.
const durationHelp = "stop after `DURATION` (e.g. 30s, 5m) and write the result; with -- COMMAND the command is sent SIGTERM then (default: when the targets end, or on Ctrl-C)"

// tableWidth is how wide a table written to w may be: the width of the
// terminal w is, so that its lines do not wrap there; 0 (as wide as the
// cells) with --wide, or when w is no terminal (a pipe, a file: a
// program reading it wants whole cells).
func tableWidth(w io.Writer, wide bool) int {
	f, ok := w.(*os.File)
	if wide || !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return 0
	}
	return int(ws.Col)
}

// wideHelp documents --wide of the commands that print wide tables.
const wideHelp = "print the table as wide as its cells (default on a terminal: wrap cells to fit its width)"

// debugDirHelp documents --debug-dir for every subcommand that attaches probes.
const debugDirHelp = "also look for a library's separate debug file (`DIR`/.build-id/ab/cdef….debug) here, to read a struct layout of a build mpiprobe does not know (repeatable)"

// pidList collects repeated -p flags; "-p 1,2" works too.
type pidList []int

func (p *pidList) String() string {
	var s []string
	for _, pid := range *p {
		s = append(s, strconv.Itoa(pid))
	}
	return strings.Join(s, ",")
}

// Type names the value in pflag's messages.
func (p *pidList) Type() string { return "PID" }

// Set adds the comma-separated process ids of v.
func (p *pidList) Set(v string) error {
	for _, f := range strings.Split(v, ",") {
		pid, err := parsePID(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		*p = append(*p, pid)
	}
	return nil
}

// maxPID is the kernel's largest process id (PID_MAX_LIMIT on 64-bit).
const maxPID = 1 << 22

// parsePID reads one process id: a whole number from 1 to maxPID.
func parsePID(s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil && strings.Trim(s, "0123456789") == "" && s != "":
		return 0, fmt.Errorf("%s is not a process id (the largest is %d; mpiprobe ps lists MPI processes)", text.Echo(s), maxPID)
	case err != nil:
		return 0, fmt.Errorf("%s is not a process id (give a number, e.g. -p 4242; mpiprobe ps lists MPI processes)", text.Echo(s))
	case n <= 0:
		return 0, fmt.Errorf("%s is not a process id (give a number above 0; mpiprobe ps lists MPI processes)", text.Echo(s))
	case n > maxPID:
		return 0, fmt.Errorf("%s is not a process id (the largest is %d; mpiprobe ps lists MPI processes)", text.Echo(s), maxPID)
	}
	return int(n), nil
}

// thresholdFlags are the command line's C/T overrides: -C, -T and
// --threshold, shared by the per-job command and the agent.
type thresholdFlags struct {
	c, t  string
	specs []string
}

func (f *thresholdFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&f.c, "count", "C", "", "count threshold `N` for every event: report an event once it happened N times (overrides the catalog; 0 and 1 report every new count)")
	fs.StringVarP(&f.t, "delay", "T", "", "time delay `DURATION` (e.g. 10s; 0: no limit) between two reports of an event")
	fs.StringArrayVar(&f.specs, "threshold", nil, "`EVENT=C/T` override for one event (repeatable), e.g. ob1.send_pending.new=500/5s, EVENT=500 or EVENT=/30s")
}

// overrides parses the flags; events must be in cat. -C must be at least 1
// and -T above 0: a count of 0 or no delay would report every hit.
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
			return cli, fmt.Errorf("--threshold: unknown event %s (mpiprobe --help lists them)", text.Quote(id))
		}
	}
	return cli, nil
}

// selectLevels returns the catalog of the named levels.
func selectLevels(spec string) (probes.Catalog, error) {
	full := probes.Full()
	if spec == "all" {
		return full, nil
	}
	var levels []probes.Level
	for _, name := range strings.Split(spec, ",") {
		l := probes.Level(strings.TrimSpace(name))
		if !slices.Contains(full.Levels(), l) {
			var known []string
			for _, k := range full.Levels() {
				known = append(known, string(k))
			}
			return probes.Catalog{}, fmt.Errorf("--events: unknown level %s (known: %s, all)", text.Quote(name), strings.Join(known, ", "))
		}
		levels = append(levels, l)
	}
	return full.Select(levels...), nil
}

// checkCommSlots checks --comm-slots: at least 1, at most what a BPF
// map's 32-bit size allows (collstate.MaxSlots) and what this node's
// memory holds (collstate.SlotBytes a slot). mem is the node's memory in
// bytes, 0 when unknown.
func checkCommSlots(n int, mem uint64) error {
	limit, why := collstate.MaxSlots, "the most a BPF map's 32-bit size allows at 64 collectives a slot"
	if mem > 0 && collstate.MaxSlotsFor(mem) < limit {
		limit = collstate.MaxSlotsFor(mem)
		why = fmt.Sprintf("each slot takes %d bytes of kernel memory, and this node has %d MiB", collstate.SlotBytes(), mem>>20)
	}
	if n < 1 || n > limit {
		return fmt.Errorf("--comm-slots %d: give 1 to %d (%s)", n, limit, why)
	}
	return nil
}

// memTotal returns the node's memory in bytes from /proc/meminfo, 0 when
// it cannot be read.
func memTotal() uint64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
