package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/session"
	"github.com/mpiprobe/mpiprobe/internal/text"
	"github.com/mpiprobe/mpiprobe/internal/trace/chrometrace"
	"github.com/mpiprobe/mpiprobe/internal/trace/tracefile"
	"github.com/mpiprobe/mpiprobe/internal/trace/traceview"
)

// traceConfig is the parsed command line of "mpiprobe trace".
type traceConfig struct {
	monitor  session.Config
	output   string
	duration time.Duration
	ring     string
	verbose  bool
}

func parseTraceArgs(args []string, stderr io.Writer) (traceConfig, error) {
	var (
		cfg  traceConfig
		pids pidList
		libs stringList
	)
	fs := flag.NewFlagSet("mpiprobe trace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.output, "o", "", "write the trace to `FILE` (required)")
	fs.Var(&pids, "p", "trace the MPI process `PID` (repeat, or comma-separate, for several)")
	fs.StringVar(&cfg.monitor.Job, "job", "", "trace every rank of job `JOBID` on this node")
	fs.DurationVar(&cfg.duration, "duration", 0, "stop after `DURATION` (default: when the targets end, or on Ctrl-C)")
	fs.Var(&libs, "lib", "also attach to MPI library `FILE` in command mode (repeatable)")
	fs.StringVar(&cfg.ring, "ring", "64M", "`SIZE` of the ring buffer between the kernel and mpiprobe: a power of two from 4K to 1G")
	fs.BoolVar(&cfg.verbose, "v", false, "log attach and symbolization details")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mpiprobe trace -o FILE [flags] -- COMMAND [ARGS...]\n       mpiprobe trace -o FILE [flags] -p PID | --job JOBID\n       mpiprobe trace show FILE [--rank N | --per-rank] [--detail low|high] [--json]\n       mpiprobe trace export --format chrome -o OUT.json FILE\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if cfg.output == "" {
		return cfg, errors.New("trace: give the output file with -o FILE")
	}
	if cfg.duration < 0 {
		return cfg, errors.New("trace: --duration must be positive")
	}
	ring, err := parseRingSize(cfg.ring)
	if err != nil {
		return cfg, fmt.Errorf("trace: --ring %s: %w", cfg.ring, err)
	}
	cfg.monitor.PIDs = pids
	cfg.monitor.Command = fs.Args()
	cfg.monitor.Libraries = libs
	cfg.monitor.Trace = &session.TraceConfig{RingBytes: ring}
	return cfg, nil
}

// parseRingSize reads a ring buffer size such as 4K, 64M or 1G (bytes
// without a suffix): a power of two from 4 KiB to 1 GiB.
func parseRingSize(s string) (uint32, error) {
	mult := uint64(1)
	num := strings.TrimSuffix(strings.ToUpper(s), "B")
	switch {
	case strings.HasSuffix(num, "K"), strings.HasSuffix(num, "KI"):
		mult = 1 << 10
	case strings.HasSuffix(num, "M"), strings.HasSuffix(num, "MI"):
		mult = 1 << 20
	case strings.HasSuffix(num, "G"), strings.HasSuffix(num, "GI"):
		mult = 1 << 30
	}
	num = strings.TrimRight(num, "KMGI")
	n, err := strconv.ParseUint(num, 10, 32)
	if err != nil {
		return 0, errors.New("give a size such as 4K, 64M or 1G")
	}
	size := n * mult
	if size < 4096 || size > 1<<30 || size&(size-1) != 0 {
		return 0, errors.New("give a power of two from 4K to 1G")
	}
	return uint32(size), nil
}

// traceMain runs "mpiprobe trace ..." and returns the exit code.
func traceMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "show" {
		return showMain(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "export" {
		return exportMain(args[1:], stderr)
	}
	cfg, err := parseTraceArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "mpiprobe: %v\n", err)
		return 2
	}
	if err := runTrace(ctx, cfg, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "mpiprobe: %v\n", err)
		return 1
	}
	return 0
}

// runTrace records the trace into the output file.
func runTrace(ctx context.Context, cfg traceConfig, stdout, stderr io.Writer) error {
	level := slog.LevelInfo
	if cfg.verbose {
		level = slog.LevelDebug
	}
	cfg.monitor.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg.monitor.Out = stderr
	f, err := os.Create(cfg.output)
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	cfg.monitor.Trace.Out = bw
	if cfg.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.duration)
		defer cancel()
	}
	_, err = session.Run(ctx, cfg.monitor)
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write %s: %w", cfg.output, ferr)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write %s: %w", cfg.output, cerr)
	}
	st := cfg.monitor.Trace.Stats
	fmt.Fprintf(stdout, "trace: %d MPI calls of %d ranks written to %s", st.Events, st.Ranks, cfg.output)
	if st.Lost > 0 {
		fmt.Fprintf(stdout, "; %d calls LOST (ring buffer full: raise --ring)", st.Lost)
	}
	fmt.Fprintln(stdout)
	if st.Unresolved > 0 {
		fmt.Fprintf(stderr, "mpiprobe: %d call sites could not be symbolized (the process exited before mpiprobe read its memory map); they show as addresses\n", st.Unresolved)
	}
	return err
}

// readTraceFile reads a trace file for show and export. A file that is
// damaged gives the Trace read around the damage and its *DamageError; one
// with nothing to show gives a nil Trace and an error of one line.
func readTraceFile(file string) (*tracefile.Trace, *tracefile.DamageError, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	t, err := tracefile.Read(bufio.NewReaderSize(f, 1<<20))
	var de *tracefile.DamageError
	switch {
	case t == nil:
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	case errors.As(err, &de):
		return t, de, nil
	case err != nil:
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	return t, nil, nil
}

// splitFile takes the one file argument from before or after the flags.
func splitFile(args []string) (string, []string) {
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		return args[0], args[1:]
	}
	return "", args
}

// showMain runs "mpiprobe trace show FILE" and returns the exit code: 0, 1
// for a file damaged (what could be read is shown) or unreadable, 2 for bad
// usage.
func showMain(args []string, stdout, stderr io.Writer) int {
	const usage = "usage: mpiprobe trace show FILE [--rank N | --per-rank] [--detail low|high] [--json]"
	fs := flag.NewFlagSet("mpiprobe trace show", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rank := fs.String("rank", "", "show only MPI rank `N`, in detail")
	perRank := fs.Bool("per-rank", false, "show every rank in detail instead of each distinct structure once")
	detail := fs.String("detail", "low", "`LEVEL` of detail: low (calls and loops) or high (compute bursts, times, peers)")
	asJSON := fs.Bool("json", false, "print JSON (schema_version 1): call sites, structure trees, ranks and counts")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s\n\nflags:\n", usage)
		fs.PrintDefaults()
	}
	file, args := splitFile(args)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if file == "" && fs.NArg() > 0 {
		file = fs.Arg(0)
	}
	if file == "" {
		fmt.Fprintln(stderr, "mpiprobe: trace show: give the trace file (mpiprobe trace show FILE)")
		return 2
	}
	d, err := traceview.ParseDetail(*detail)
	if err != nil {
		fmt.Fprintf(stderr, "mpiprobe: --detail: %v\n", err)
		return 2
	}
	if *rank != "" && *perRank {
		fmt.Fprintln(stderr, "mpiprobe: trace show: give --rank N or --per-rank, not both")
		return 2
	}
	t, de, err := readTraceFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "mpiprobe: %v\n", err)
		return 1
	}
	if *rank != "" {
		if err := traceview.CheckRank(t, *rank); err != nil {
			fmt.Fprintf(stderr, "mpiprobe: --rank: %v\n", err)
			return 2
		}
	}
	opt := traceview.Options{Rank: *rank, PerRank: *perRank, Detail: d, Damage: de}
	bw := bufio.NewWriter(stdout)
	if *asJSON {
		err = traceview.ShowJSON(bw, t, opt)
	} else {
		err = traceview.Show(bw, t, opt)
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		fmt.Fprintf(stderr, "mpiprobe: %v\n", err)
		return 1
	}
	if de != nil {
		fmt.Fprintf(stderr, "mpiprobe: %s: %v\n", file, de)
		return 1
	}
	return 0
}

// exportMain runs "mpiprobe trace export --format chrome -o OUT FILE" and
// returns the exit code.
func exportMain(args []string, stderr io.Writer) int {
	const usage = "usage: mpiprobe trace export --format chrome -o OUT.json FILE"
	fs := flag.NewFlagSet("mpiprobe trace export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "chrome", "`FORMAT` of the timeline: chrome (Trace Event Format JSON, for Perfetto and chrome://tracing)")
	out := fs.String("o", "", "write the timeline to `FILE` (required)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s\n\nflags:\n", usage)
		fs.PrintDefaults()
	}
	file, args := splitFile(args)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if file == "" && fs.NArg() > 0 {
		file = fs.Arg(0)
	}
	switch {
	case file == "":
		fmt.Fprintf(stderr, "mpiprobe: trace export: give the trace file (%s)\n", usage)
		return 2
	case *format != "chrome":
		fmt.Fprintf(stderr, "mpiprobe: trace export: --format %s: give --format chrome (the only format)\n", text.Line(*format))
		return 2
	case *out == "":
		fmt.Fprintf(stderr, "mpiprobe: trace export: give the output file with -o OUT.json\n")
		return 2
	}
	de, err := writeChrome(*out, file)
	if err != nil {
		fmt.Fprintf(stderr, "mpiprobe: trace export: %v\n", err)
		return 1
	}
	if de != nil {
		fmt.Fprintf(stderr, "mpiprobe: %s: %v (the timeline holds what was read)\n", file, de)
		return 1
	}
	return 0
}

// writeChrome streams the timeline of the trace file in to the file out,
// one events chunk at a time. A damaged trace gives its DamageError; the
// timeline then holds what was read.
func writeChrome(out, in string) (*tracefile.DamageError, error) {
	src, err := os.Open(in)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	f, err := os.Create(out)
	if err != nil {
		return nil, err
	}
	var x *chrometrace.Writer
	t, rerr := tracefile.ReadFunc(bufio.NewReaderSize(src, 1<<20), func(t *tracefile.Trace, ev []tracefile.Event) error {
		if x == nil {
			x = chrometrace.NewWriter(f, t.Header)
		}
		x.WriteEvents(t, ev)
		return nil
	})
	var de *tracefile.DamageError
	if t == nil || (rerr != nil && !errors.As(rerr, &de)) {
		f.Close()
		os.Remove(out)
		return nil, fmt.Errorf("%s: %w", in, rerr)
	}
	if x == nil {
		x = chrometrace.NewWriter(f, t.Header)
	}
	err = x.Close(t)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", out, err)
	}
	return de, nil
}
