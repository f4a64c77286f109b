package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/atomicfile"
	"github.com/mpiprobe/mpiprobe/internal/session"
	"github.com/mpiprobe/mpiprobe/internal/text"
	"github.com/mpiprobe/mpiprobe/internal/trace/chrometrace"
	"github.com/mpiprobe/mpiprobe/internal/trace/tracefile"
	"github.com/mpiprobe/mpiprobe/internal/trace/traceview"
	"github.com/spf13/cobra"
)

// traceConfig is the checked command line of "mpiprobe trace".
type traceConfig struct {
	monitor  session.Config
	output   string
	duration time.Duration
	ring     string
	slots    uint32
	log      logFlags
}

// traceFlags are the flags of "mpiprobe trace" as given.
type traceFlags struct {
	cfg   traceConfig
	pids  pidList
	libs  []string
	scope scopeFlag
}

// newTraceCmd builds "mpiprobe trace" with its show and export subcommands.
func newTraceCmd() *cobra.Command {
	var f traceFlags
	c := &cobra.Command{
		Use:   "trace -o FILE [flags] (-p PID... | --job JOBID | -- COMMAND [ARGS...])",
		Short: "record and show every MPI call",
		Long: "Records every MPI call of the ranks, with its call site, into FILE; mpiprobe trace show FILE\n" +
			"shows each rank's loop structure, mpiprobe trace export a timeline. With -- COMMAND, a SIGINT or\n" +
			"SIGTERM is passed on to the command's process group and the trace is closed once it has ended;\n" +
			"mpiprobe then exits with the command's status (128+N when signal N killed it, or was passed on).",
		Example: "  sudo mpiprobe trace -o run.trace -- mpirun -np 4 ./app\n  mpiprobe trace show run.trace --detail high",
		Args:    argsAfterDash,
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := f.config(args, c.ArgsLenAtDash())
			if err != nil {
				return err
			}
			return runTrace(c.Context(), cfg, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	fs := c.Flags()
	fs.SetInterspersed(false)
	fs.SortFlags = false
	fs.StringVarP(&f.cfg.output, "output", "o", "", "write the trace to `FILE` (required)")
	fs.VarP(&f.pids, "pid", "p", "trace the MPI process `PID` (repeat, or comma-separate, for several)")
	fs.StringVar(&f.cfg.monitor.Job, "job", "", "trace every rank of job `JOBID` on this node (mpiprobe ps lists jobs)")
	fs.DurationVar(&f.cfg.duration, "duration", 0, durationHelp)
	fs.StringArrayVar(&f.libs, "lib", nil, "with -- COMMAND, also attach to MPI library `FILE` (repeatable)")
	fs.StringVar(&f.cfg.ring, "ring", "64M", "`SIZE` of the ring buffer between the kernel and mpiprobe: a power of two from 4K to 1G")
	f.cfg.log.register(fs, "also log attach and symbolization details")
	f.scope.register(fs)
	// Tests share slots between threads with it; the default fits the node.
	fs.Uint32Var(&f.cfg.slots, "thread-slots", 0, "keep the state of `N` threads (a power of two) in the fast array; default from pid_max")
	_ = fs.MarkHidden("thread-slots")
	c.AddCommand(newTraceShowCmd(), newTraceExportCmd())
	return c
}

// config checks the flags of "mpiprobe trace"; dash is how many of args
// came before "--".
func (f *traceFlags) config(args []string, dash int) (traceConfig, error) {
	cfg := f.cfg
	if dash > 0 {
		return cfg, usagef("unexpected argument %s before --", text.Quote(args[0]))
	}
	cfg.monitor.PIDs = f.pids
	cfg.monitor.Command = args
	cfg.monitor.Libraries = f.libs
	m := &cfg.monitor
	switch {
	case cfg.output == "":
		return cfg, usagef("give the output file with -o FILE")
	}
	if err := checkDuration(cfg.duration); err != nil {
		return cfg, err
	}
	if err := cfg.log.check(); err != nil {
		return cfg, err
	}
	if err := checkTargets(m, dash, len(args), "mpiprobe trace -o FILE -- COMMAND [ARGS...]"); err != nil {
		return cfg, err
	}
	ring, err := parseRingSize(cfg.ring)
	if err != nil {
		return cfg, usagef("--ring %s: %w", text.Quote(cfg.ring), err)
	}
	if err := session.CheckThreadSlots(cfg.slots); err != nil {
		return cfg, usagef("--thread-slots %d: %w", cfg.slots, err)
	}
	cfg.monitor.Trace = &session.TraceConfig{RingBytes: ring, ThreadSlots: cfg.slots}
	if cfg.monitor.Proc, err = f.scope.sessionProc(nil, cfg.monitor.Command); err != nil {
		return cfg, err
	}
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

// runTrace records the trace into the output file.
func runTrace(ctx context.Context, cfg traceConfig, stdout, stderr io.Writer) error {
	cfg.monitor.Log = cfg.log.logger(stderr)
	cfg.monitor.Out = stderr
	// Written to a temporary file renamed into place once whole: a full
	// disk leaves the old file, and a symbolic link at -o is replaced.
	f, err := atomicfile.Create(cfg.output, outputMode)
	if err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	cfg.monitor.Trace.Out = bw
	ctx, cancel := withDuration(ctx, cfg.duration)
	defer cancel()
	// A signal stops a -p/--job trace, and is passed on to a command,
	// whose end then closes the trace; mpiprobe exits with its status.
	cmd := watchCommand(&cfg.monitor)
	defer cmd.stop()
	_, err = session.Run(ctx, cfg.monitor)
	st := cfg.monitor.Trace.Stats
	if err != nil && st.Ranks == 0 {
		f.Abort() // nothing traced: the old file stays
		return err
	}
	// A failed write is the cause of any error of the session's too.
	if werr := f.Finish(bw.Flush()); werr != nil {
		return werr
	}
	fmt.Fprintf(stdout, "trace: %d MPI calls of %d ranks written to %s", st.Events, st.Ranks, cfg.output)
	if st.Lost > 0 {
		fmt.Fprintf(stdout, "; %d calls LOST (ring buffer full: raise --ring)", st.Lost)
	}
	fmt.Fprintln(stdout)
	if st.Unresolved > 0 {
		fmt.Fprintf(stderr, "mpiprobe: %d call sites could not be symbolized (the process exited before mpiprobe read its memory map); they show as addresses\n", st.Unresolved)
	}
	if err != nil {
		return err
	}
	return cmd.status()
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

// traceFiles takes the trace file arguments: one file, or one per node of
// a job.
func traceFiles(what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usagef("give the trace file, or each node's trace file of one job (%s)", what)
		}
		return nil
	}
}

// readTraceFiles reads the trace files of show and export and merges them
// into one trace of the job (tracefile.Merge). A damaged file gives what
// was read of it; damage then sums what was read of every file, and
// damaged names the first damaged file and its *DamageError (with how many
// more files are damaged), to be returned once the trace is shown.
func readTraceFiles(files []string) (t *tracefile.Trace, damage *tracefile.DamageError, damaged error, err error) {
	parts := make([]tracefile.Part, len(files))
	var des, all []*tracefile.DamageError
	var bad []string
	for i, file := range files {
		pt, de, err := readTraceFile(file)
		if err != nil {
			return nil, nil, nil, err
		}
		parts[i] = tracefile.Part{Name: text.Quote(file), Trace: pt}
		if de != nil {
			des = append(des, de)
			bad = append(bad, file)
		} else {
			de = &tracefile.DamageError{Events: len(pt.Events), Written: len(pt.Events)}
		}
		all = append(all, de)
	}
	if t, err = tracefile.Merge(parts); err != nil {
		return nil, nil, nil, err
	}
	switch {
	case len(des) == 0:
		return t, nil, nil, nil
	case len(files) == 1:
		damage = des[0]
	default:
		damage = tracefile.SumDamage(all)
	}
	damaged = fmt.Errorf("%s: %w", bad[0], des[0])
	if len(bad) > 1 {
		damaged = fmt.Errorf("%w (and %d more damaged files)", damaged, len(bad)-1)
	}
	return t, damage, damaged, nil
}

// newTraceShowCmd builds "mpiprobe trace show FILE": exit 0, 1 for a file
// damaged (what could be read is shown) or unreadable, 2 for bad usage.
func newTraceShowCmd() *cobra.Command {
	var (
		rank, detail    string
		perRank, asJSON bool
	)
	c := &cobra.Command{
		Use:   "show FILE... [--rank N | --per-rank] [--detail low|high] [--json]",
		Short: "show each rank's call and loop structure",
		Long: "Shows each rank's call and loop structure. Several files, each node's trace of one job\n" +
			"(mpiprobe trace -o FILE --job J on every node), show as one job; times are aligned by the\n" +
			"wall clock each file recorded at its start, as closely as the nodes' clocks agree (docs/trace.md).",
		Args: traceFiles("mpiprobe trace show FILE..."),
		RunE: func(c *cobra.Command, args []string) error {
			d, err := traceview.ParseDetail(detail)
			if err != nil {
				return usagef("--detail: %w", err)
			}
			if rank != "" && perRank {
				return usagef("give --rank N or --per-rank, not both")
			}
			t, de, damaged, err := readTraceFiles(args)
			if err != nil {
				return err
			}
			if rank != "" {
				if err := traceview.CheckRank(t, rank); err != nil {
					return usagef("--rank: %w", err)
				}
			}
			opt := traceview.Options{Rank: rank, PerRank: perRank, Detail: d, Damage: de}
			bw := bufio.NewWriter(c.OutOrStdout())
			if asJSON {
				err = traceview.ShowJSON(bw, t, opt)
			} else {
				err = traceview.Show(bw, t, opt)
			}
			if ferr := bw.Flush(); err == nil {
				err = ferr
			}
			if err != nil {
				return err
			}
			return damaged
		},
	}
	fs := c.Flags()
	fs.StringVar(&rank, "rank", "", "show only MPI rank `N`, in detail")
	fs.BoolVar(&perRank, "per-rank", false, "show every rank in detail instead of each distinct structure once")
	fs.StringVar(&detail, "detail", "low", "`LEVEL` of detail: low (calls and loops) or high (compute bursts, times, peers)")
	fs.BoolVar(&asJSON, "json", false, "print JSON (schema_version 1): call sites, structure trees, ranks and counts")
	return c
}

// newTraceExportCmd builds "mpiprobe trace export --format chrome -o OUT FILE".
func newTraceExportCmd() *cobra.Command {
	var format, out string
	c := &cobra.Command{
		Use:   "export --format chrome -o OUT.json FILE...",
		Short: "write a trace's timeline for Perfetto or chrome://tracing",
		Long: "Writes a trace's timeline, one process per rank named with its host. Several files, each\n" +
			"node's trace of one job, make one timeline of the job (see mpiprobe trace show --help).",
		Args: traceFiles("mpiprobe trace export --format chrome -o OUT.json FILE..."),
		RunE: func(c *cobra.Command, args []string) error {
			switch {
			case format != "chrome":
				return usagef("--format %s: give --format chrome (the only format)", text.Line(format))
			case out == "":
				return usagef("give the output file with -o OUT.json")
			}
			if len(args) > 1 {
				return writeChromeJob(out, args)
			}
			de, err := writeChrome(out, args[0])
			if err != nil {
				return err
			}
			if de != nil {
				return fmt.Errorf("%s: %w (the timeline holds what was read)", args[0], de)
			}
			return nil
		},
	}
	fs := c.Flags()
	fs.StringVar(&format, "format", "chrome", "`FORMAT` of the timeline: chrome (Trace Event Format JSON, for Perfetto and chrome://tracing)")
	fs.StringVarP(&out, "output", "o", "", "write the timeline to `FILE` (required)")
	return c
}

// writeChrome streams the timeline of the trace file in to the file out,
// one events chunk at a time, through a temporary file renamed into place
// once complete: out is never left half written, and a symbolic link at
// out is replaced, not followed. A damaged trace gives its DamageError;
// the timeline then holds what was read.
func writeChrome(out, in string) (*tracefile.DamageError, error) {
	src, err := os.Open(in)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if err := notInput(out, src, in); err != nil {
		return nil, err
	}
	f, err := atomicfile.Create(out, outputMode)
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
		f.Abort()
		return nil, fmt.Errorf("%s: %w", in, rerr)
	}
	if x == nil {
		x = chrometrace.NewWriter(f, t.Header)
	}
	if err := f.Finish(x.Close(t)); err != nil {
		return nil, err
	}
	return de, nil
}

// writeChromeJob writes the timeline of the trace files of several nodes
// of one job to out, merged (tracefile.Merge) in memory: unlike one file's
// timeline it is not streamed. A damaged file's error is returned after the
// timeline, which holds what was read, is written.
func writeChromeJob(out string, files []string) error {
	for _, in := range files {
		src, err := os.Open(in)
		if err != nil {
			return err
		}
		err = notInput(out, src, in)
		src.Close()
		if err != nil {
			return err
		}
	}
	t, _, damaged, err := readTraceFiles(files)
	if err != nil {
		return err
	}
	f, err := atomicfile.Create(out, outputMode)
	if err != nil {
		return err
	}
	if err := f.Finish(chrometrace.Write(f, t)); err != nil {
		return err
	}
	if damaged != nil {
		return fmt.Errorf("%w (the timeline holds what was read)", damaged)
	}
	return nil
}

// notInput refuses an output file out that is the input file in (opened
// as src): the same file, whatever the path or link that leads to it.
func notInput(out string, src *os.File, in string) error {
	ofi, err := os.Stat(out)
	if err != nil {
		return nil // nothing there yet, or nothing Create will not say
	}
	ifi, err := src.Stat()
	if err == nil && os.SameFile(ofi, ifi) {
		return usagef("-o %s is the trace file it reads (%s): give another output file", out, in)
	}
	return nil
}
