package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/collstate"
	"github.com/mpiprobe/mpiprobe/internal/counters"
	"github.com/mpiprobe/mpiprobe/internal/discover"
	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/kernel"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/report"
	"github.com/mpiprobe/mpiprobe/probes"
	"github.com/mpiprobe/mpiprobe/thresholds"
)

// Config is what one session traces and how it reports.
type Config struct {
	// PIDs are running processes to trace.
	PIDs []int
	// Job takes every rank of this job on this node.
	Job string
	// Command is started and followed with all its descendants.
	Command []string
	// Libraries are extra MPI library files to attach to in command mode.
	Libraries []string
	// Catalog is the probe catalog; zero means probes.Default().
	Catalog probes.Catalog
	// Overrides of the catalog's C/T rules, weakest first (config file, command line).
	Overrides []thresholds.Overrides
	// Interval is how often the counters are read (default 1s).
	Interval time.Duration
	// Host names this node in output (default: the hostname).
	Host string
	// Proc reads /proc (default /proc).
	Proc procfs.FS
	// Out receives the warning lines.
	Out io.Writer
	// Log receives diagnostics.
	Log *slog.Logger
	// Clock is the C/T rule's clock (default the system clock).
	Clock thresholds.Clock
	// Stdout and Stderr of the command (default os.Stdout / os.Stderr).
	Stdout, Stderr io.Writer
	// Trace, when set, records every MPI call to a trace file instead of
	// counting the catalog's events.
	Trace *TraceConfig
	// Collectives turns on collective tracking: per process, communicator
	// and collective, calls and time inside. Its maps are pinned under
	// collstate.PinRoot for `mpiprobe status` while the session runs.
	Collectives bool
	// CommSlots is how many communicators (all processes together) can be
	// tracked at once (default DefaultCommSlots).
	CommSlots int
	// DebugDirs are searched for the separate debug file of a library whose
	// struct layout mpiprobe does not know (probes.Attacher.DebugDirs); nil
	// means elfx.DefaultDebugDir.
	DebugDirs []string
	// Signals are the signals mpiprobe received (SIGINT, SIGTERM). With a
	// Command, each is passed on to the command's process group and the
	// session goes on until the command has ended, so that the summary
	// says how every rank ended; without one, the first ends the session
	// as ctx does. Nil: only ctx ends the session.
	Signals <-chan os.Signal
	// CommandEnded, when set, is called once with how the command ended
	// (its exit status or the signal that killed it) after it was waited
	// for; it is not called when the command could not be started or
	// mpiprobe stopped before it ended.
	CommandEnded func(agg.End)

	// beforeAttach, set by tests, runs before each attach attempt with the
	// pids about to be attached: a test kills a rank there to make the
	// race of a process exiting during attach happen every time.
	beforeAttach func(pids []int)
}

// KillGrace is how long a session that must stop (ctx done) waits for its
// command to end after SIGTERM before it kills the command's process group.
const KillGrace = 10 * time.Second

// Forwarded signals: the third one of SIGINT/SIGTERM kills the command's
// process group, as a user pressing Ctrl-C a third time means it.
const killAfterSignals = 3

// DefaultCommSlots is the default number of communicator slots: 64 ranks
// with 64 communicators each.
const DefaultCommSlots = 4096

// session is the state of one Run.
type session struct {
	cfg     Config
	cat     probes.Catalog
	rules   []thresholds.Rule
	objs    bpf.MpiprobeObjects
	limiter *thresholds.Limiter[counters.Key]
	procs   map[int]*agg.Proc
	order   []int
	snap    *counters.Snapshot
	drops   []uint64
	tb      kernel.Timebase
	start   time.Time
	rec     *recorder // trace mode only
	coll    *collTracker
	// starts marks MPI_Init, MPI_Finalize and MPI_Abort in the ranks
	// (counting mode), so that a rank that called MPI_Abort is named.
	starts *probes.StartupAttacher
	// live are the running processes being traced (-p, --job) that are
	// still there.
	live []discover.Proc
	// cmdTargets are the library files of command mode.
	cmdTargets []probes.Target
}

// Run traces the configured targets until they have all exited or ctx is
// done, and returns the summary of what was counted. Counts read before a
// failure in the middle of a run are kept in the summary it returns along with
// the error.
func Run(ctx context.Context, cfg Config) (agg.Summary, error) {
	s, err := newSession(cfg)
	if err != nil {
		return agg.Summary{}, err
	}
	defer s.objs.Close()
	err = s.run(ctx)
	return s.summary(), err
}

func newSession(cfg Config) (*session, error) {
	if cfg.Catalog.Events == nil {
		cfg.Catalog = probes.DefaultCatalog()
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Host == "" {
		cfg.Host, _ = os.Hostname()
	}
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.Clock == nil {
		cfg.Clock = thresholds.SystemClock{}
	}
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if len(cfg.PIDs) == 0 && cfg.Job == "" && len(cfg.Command) == 0 {
		return nil, errors.New("nothing to trace: give -p PID, --job JOBID or -- COMMAND")
	}
	if len(cfg.Command) > 0 && (len(cfg.PIDs) > 0 || cfg.Job != "") {
		return nil, errors.New("give either -p/--job or a command after --, not both")
	}
	if cfg.Collectives && (cfg.CommSlots < 0 || cfg.CommSlots > collstate.MaxSlots) {
		return nil, fmt.Errorf("%d communicator slots: give 1 to %d", cfg.CommSlots, collstate.MaxSlots)
	}
	if err := cfg.Catalog.Validate(); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	s := &session{
		cfg:     cfg,
		cat:     cfg.Catalog,
		limiter: thresholds.NewLimiter[counters.Key](cfg.Clock),
		procs:   map[int]*agg.Proc{},
		drops:   make([]uint64, len(kernel.DropReasons())),
		tb:      kernel.NewTimebase(),
		start:   cfg.Clock.Now(),
	}
	s.snap = counters.New(s.cat, s.tb.Wall)
	for _, e := range s.cat.Events {
		s.rules = append(s.rules, thresholds.Resolve(e.ID, thresholds.Rule{C: e.C, T: e.T}, cfg.Overrides...))
	}
	return s, nil
}

func (s *session) run(ctx context.Context) error {
	cfg := s.cfg
	t0 := time.Now()
	phase := func(what string) {
		cfg.Log.Debug("startup", "phase", what, "ms", float64(time.Since(t0).Microseconds())/1000)
	}
	// Resolve and check the targets before touching the kernel, so that a
	// typo in a pid is reported as such.
	pids, err := discover.Named(cfg.Proc, cfg.PIDs, cfg.Job, cfg.Host)
	if err != nil {
		return err
	}
	sel := discover.Select(cfg.Proc, pids, s.cat.Libraries())
	for _, e := range sel.Unattachable {
		cfg.Log.Warn("library not attachable", "err", e)
	}
	if len(pids) > 0 && len(sel.Live) == 0 {
		return errors.Join(sel.Skipped...)
	}
	for _, e := range sel.Skipped {
		msg := "target skipped"
		if discover.IsRace(e) {
			msg = "target gone; the others carry on"
		}
		cfg.Log.Warn(msg, "err", e)
	}
	s.live = sel.Procs
	var targets []probes.Target
	if len(cfg.Command) > 0 {
		// The fast path: the libraries of mpiprobe's own root, attached
		// before the command starts. Those its processes map from
		// elsewhere (another root, a private directory) the follower
		// finds as they start.
		t, err := discover.SystemTargets(s.cat.Libraries(), append(commandLibraries(cfg), cfg.Libraries...))
		if err != nil && (len(cfg.Libraries) > 0 || !errors.Is(err, discover.ErrNoSystemLibrary)) {
			return err
		}
		s.cmdTargets = t
	}
	targets = s.targets()

	phase("targets")
	if err := kernel.Preflight(); err != nil {
		return err
	}
	phase("preflight")
	if err := s.load(); err != nil {
		return err
	}
	phase("load")

	var tplinks []link.Link
	defer func() {
		for _, l := range tplinks {
			_ = l.Close()
		}
	}()
	tps := []*ebpf.Program{s.objs.OnFork, s.objs.OnExec, s.objs.OnExit}
	if cfg.Trace != nil {
		tps = append(tps, s.objs.TraceThreadExit) // frees thread-state slots
	}
	for _, p := range tps {
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err != nil {
			return kernel.ExplainLoad("attach process tracepoints", err)
		}
		tplinks = append(tplinks, l)
	}

	phase("tracepoints")
	var probeCount int
	var follow *follower
	if cfg.Trace != nil {
		rec, att, closeTrace, err := s.startTrace(targets)
		if err != nil {
			return err
		}
		defer closeTrace()
		probeCount = att.Links()
		s.rec = rec
		if len(cfg.Command) > 0 {
			follow = newFollower(s, traceAdd(att, rec), nil)
		}
	} else {
		att, err := probes.NewAttacher(probes.ProgramsOf(&s.objs.MpiprobePrograms), s.cat)
		if err != nil {
			return err
		}
		att.DebugDirs = cfg.DebugDirs
		defer att.Close()
		if err := s.attachLive("attach probes", att.Add); err != nil {
			return err
		}
		s.starts = probes.NewStartupAttacher(s.objs.StartupMark)
		defer s.starts.Close()
		if err := s.attachLive("attach the MPI_Abort probes", s.starts.Add); err != nil {
			cfg.Log.Warn("a rank that calls MPI_Abort will not be named", "err", err)
		}
		if cfg.Collectives {
			ct, err := s.startCollectives(targets, discover.PIDsOf(s.live))
			if err != nil {
				return err
			}
			defer ct.close()
			s.coll = ct
			probeCount += ct.att.Links()
		}
		attached, reported := 0, 0
		reportStatus := func() {
			all := att.Status()
			for _, st := range all[reported:] {
				if st.Attached {
					attached++
					cfg.Log.Debug("probe attached", "event", st.Event, "file", st.File, "missing", st.Reason)
				} else {
					cfg.Log.Warn("event unavailable", "event", st.Event, "file", st.File, "reason", st.Reason)
				}
			}
			reported = len(all)
		}
		reportStatus()
		if len(cfg.Command) > 0 {
			add := func(t []probes.Target) error { return errors.Join(att.Add(t), s.starts.Add(t)) }
			if s.coll != nil {
				// The collective probes follow the command's processes
				// as the catalog's do.
				add = func(t []probes.Target) error { return errors.Join(att.Add(t), s.starts.Add(t), s.coll.add(t)) }
			}
			follow = newFollower(s, add, func([]probes.Target) { reportStatus() })
		}
		// A command's ranks may map an MPI of their own, found as they
		// start (follower): then nothing attached ahead is no error.
		if attached == 0 && s.coll == nil && len(cfg.Command) == 0 {
			return fmt.Errorf("no catalog event could be attached in %s: this MPI build lacks the probed symbols (see warnings above); mpiprobe knows Open MPI 4.x and 5.0 with pml ob1, MPICH with ch4 or ch3, and UCX", describeTargets(targets))
		}
		probeCount += att.Attached()
	}

	phase("probes")
	events, stopEvents, err := kernel.ProcEvents(s.objs.ProcEvents, 1024)
	if err != nil {
		return err
	}
	defer stopEvents()

	targets = s.targets()
	live := discover.PIDsOf(s.live)
	for _, pid := range live {
		if err := s.trace(pid, 0); err != nil {
			return err
		}
		s.addProc(pid)
	}
	var cmd *command
	var cmdDone <-chan agg.End
	if len(cfg.Command) > 0 {
		cmd, err = s.startCommand()
		if err != nil {
			return err
		}
		cmdDone = cmd.done
	}
	phase("command started")
	cfg.Log.Info("tracing", "processes", len(live), "libraries", len(targets), "probes", probeCount)

	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	// looks fires when the follower's next look at a starting process is
	// due.
	var looks <-chan time.Time
	var looksTimer *time.Timer
	arm := func() {
		if looksTimer != nil {
			looksTimer.Stop()
		}
		looks = nil
		if follow == nil {
			return
		}
		if at, ok := follow.next(); ok {
			looksTimer = time.NewTimer(time.Until(at))
			looks = looksTimer.C
		}
	}
	defer func() {
		if looksTimer != nil {
			looksTimer.Stop()
		}
	}()
	stop := ctx.Done()
	var killTimer <-chan time.Time
	forwarded := 0
	for {
		select {
		case <-stop:
			if cmdDone == nil {
				return s.finish(events)
			}
			// Stop the command, and carry on until it has ended so that
			// its ranks' ends are known.
			cmd.signal(syscall.SIGTERM)
			stop = nil
			killTimer = time.After(KillGrace)
		case <-killTimer:
			cfg.Log.Warn("command still running after SIGTERM: killing its process group", "after", KillGrace)
			cmd.signal(syscall.SIGKILL)
			killTimer = nil
		case sig := <-cfg.Signals:
			if cmdDone == nil {
				return s.finish(events)
			}
			forwarded++
			if forwarded >= killAfterSignals {
				cfg.Log.Warn("signal received again: killing the command's process group", "signal", sig)
				cmd.signal(syscall.SIGKILL)
				continue
			}
			cfg.Log.Info("passing the signal on to the command", "signal", sig)
			cmd.signal(sig)
		case e, ok := <-events:
			if !ok {
				// The ring buffer reader failed: stop selecting on a closed
				// channel (it would spin); exits are still noticed by poll.
				cfg.Log.Warn("process notifications stopped; exits are detected by polling")
				events = nil
				continue
			}
			s.procEvent(e)
			if follow != nil {
				switch e.Type {
				case kernel.ProcExec:
					follow.exec(int(e.Tgid))
					arm()
				case kernel.ProcExit:
					follow.forget(int(e.Tgid))
				}
			}
		case <-looks:
			follow.scanDue()
			arm()
		case end := <-cmdDone:
			if end.Kind != agg.Exited || end.Code != 0 {
				cfg.Log.Info("command ended", "how", end.String())
			}
			cmdDone = nil
			if p, ok := s.procs[cmd.pid]; ok && p.End.Kind == agg.Running {
				p.End = end
			}
			if cfg.CommandEnded != nil {
				cfg.CommandEnded(end)
			}
			return s.finish(events)
		case <-tick.C:
			if follow != nil {
				follow.scanAll(s.running())
			}
			s.poll()
			if cmdDone == nil && s.allEnded() {
				return s.finish(events)
			}
		}
	}
}

// targets returns the library files to attach to: the command's, or
// those of the processes still live.
func (s *session) targets() []probes.Target {
	if len(s.cfg.Command) > 0 {
		return s.cmdTargets
	}
	return discover.TargetsOf(s.live)
}

// commandLibraries returns the MPI libraries the command will find outside
// the dynamic linker's cache (discover.CommandLibraryDirs): an MPI of a
// module, Spack or a prefix install, which ldconfig -p does not list.
func commandLibraries(cfg Config) []string {
	launcher, err := exec.LookPath(cfg.Command[0])
	if err != nil {
		launcher = ""
	} else if launcher, err = filepath.Abs(launcher); err != nil {
		launcher = ""
	}
	files := discover.LibrariesIn(discover.CommandLibraryDirs(os.Getenv("LD_LIBRARY_PATH"), launcher))
	if len(files) > 0 {
		cfg.Log.Debug("MPI libraries of the command's environment", "files", files)
	}
	return files
}

// attachLive runs add (an attacher's Add) over the targets. When it fails
// while tracing running processes, each is looked at again: those that
// exited, ran another program or unmapped a library meanwhile are
// reported as such (a warning naming the pid) and add runs again over the
// others. Only a failure with every process still there is the kernel's
// (kernel.ExplainLoad); when none is left, the races are the error.
func (s *session) attachLive(what string, add func([]probes.Target) error) error {
	// A rank in MPI_Init closes components while it is attached to: each
	// such change is looked at again, a bounded number of times.
	const maxChanges = 10
	for changes := 0; ; {
		if s.cfg.beforeAttach != nil {
			s.cfg.beforeAttach(discover.PIDsOf(s.live))
		}
		err := add(s.targets())
		if err == nil {
			return nil
		}
		if len(s.cfg.Command) > 0 {
			return kernel.ExplainLoad(what, err)
		}
		kept, races, changed := discover.RecheckAll(s.cfg.Proc, s.live, "attaching", s.cat.Libraries())
		for _, c := range changed {
			s.cfg.Log.Debug("target changed its libraries; attaching to them as they are now", "err", c)
		}
		if changes += len(changed); len(races) == 0 && (len(changed) == 0 || changes > maxChanges) {
			return kernel.ExplainLoad(what, err)
		}
		for _, r := range races {
			s.cfg.Log.Warn("target gone; the others carry on", "err", r)
		}
		s.live = kept
		if len(kept) == 0 {
			msgs := make([]string, len(races))
			for i, r := range races {
				msgs[i] = r.Error()
			}
			return fmt.Errorf("every target went away while attaching (%s): trace a running job", strings.Join(msgs, "; "))
		}
	}
}

func describeTargets(ts []probes.Target) string {
	var names []string
	for _, t := range ts {
		names = append(names, t.Display)
	}
	if len(names) == 0 {
		return "no library"
	}
	return strings.Join(names, ", ")
}

// trace adds pid to the BPF set of traced processes.
func (s *session) trace(pid int, flags uint32) error {
	if err := s.objs.Traced.Put(uint32(pid), flags); err != nil {
		return fmt.Errorf("trace pid %d: %w", pid, err)
	}
	return nil
}

// command is the command a session started.
type command struct {
	pid int
	// done receives how the command ended, once it has been waited for.
	done chan agg.End
}

// signal sends sig to the command's process group: the command and what
// it started, unless they moved to a group of their own.
func (c *command) signal(sig os.Signal) {
	if n, ok := sig.(syscall.Signal); ok {
		_ = unix.Kill(-c.pid, n)
	}
}

// startCommand starts the command with mpiprobe's own process marked as
// followed, so that the BPF fork hook traces the child, and all its
// descendants, from their first instruction. The command runs in a
// process group of its own, which mpiprobe passes signals on to: a Ctrl-C
// at the terminal reaches mpiprobe alone, which forwards it once, then
// waits for the command to end and prints the summary.
func (s *session) startCommand() (*command, error) {
	self := os.Getpid()
	if err := s.trace(self, uint32(bpf.MpiprobeTracedFlagTRACED_FOLLOW)); err != nil {
		return nil, err
	}
	cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
	cmd.Stdin = os.Stdin
	cmd.Stdout = s.cfg.Stdout
	cmd.Stderr = s.cfg.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err := cmd.Start()
	_ = s.objs.Traced.Delete(uint32(self))
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", s.cfg.Command[0], err)
	}
	s.addProc(cmd.Process.Pid)
	c := &command{pid: cmd.Process.Pid, done: make(chan agg.End, 1)}
	go func() {
		_ = cmd.Wait() // the status is in ProcessState; an I/O copy error is not the command's end
		c.done <- processEnd(cmd.ProcessState, s.cfg.Clock.Now())
	}()
	return c, nil
}

// processEnd says how a waited-for process ended.
func processEnd(ps *os.ProcessState, at time.Time) agg.End {
	if ps == nil { // wait itself failed
		return agg.End{Kind: agg.Vanished, At: at}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return agg.End{Kind: agg.Signaled, Signal: int(ws.Signal()), At: at}
	}
	return agg.End{Kind: agg.Exited, Code: ps.ExitCode(), At: at}
}

// addProc registers a process and reads who it is.
func (s *session) addProc(pid int) *agg.Proc {
	p, ok := s.procs[pid]
	if !ok {
		p = &agg.Proc{PID: pid, Identity: identity.Identity{Host: s.cfg.Host, Job: identity.Unknown, Rank: identity.Unknown, Size: identity.Unknown}}
		s.procs[pid] = p
		s.order = append(s.order, pid)
	}
	s.identify(p)
	return p
}

func (s *session) identify(p *agg.Proc) {
	if comm, err := s.cfg.Proc.Comm(p.PID); err == nil {
		p.Comm = comm
	}
	id := identity.Resolve(p.PID, s.cfg.Proc, s.cfg.Host)
	if id.Rank != identity.Unknown || p.Identity.Rank == identity.Unknown {
		p.Identity = id
	}
}

func (s *session) procEvent(e bpf.MpiprobeProcEvent) {
	pid := int(e.Tgid)
	switch e.Type {
	case kernel.ProcFork:
		s.addProc(pid)
	case kernel.ProcExec:
		s.addProc(pid)
	case kernel.ProcMPI:
		s.addProc(pid)
		if s.rec != nil {
			s.rec.note(pid)
		}
	case kernel.ProcExit:
		p, ok := s.procs[pid]
		if !ok {
			return
		}
		p.End = kernel.DecodeExit(e.ExitCode, s.tb.Wall(e.TsNs))
		if s.coll != nil {
			s.coll.ended(pid)
		}
	}
}

// poll reads every counter, applies the C/T rule, prints what is due, and
// notices processes that ended without an exit event.
func (s *session) poll() {
	err := kernel.ReadCounters(s.objs.Counts, func(r counters.Reading) {
		o, ok := s.snap.Update(r)
		if !ok {
			return
		}
		if _, ok := s.procs[int(r.PID)]; !ok {
			s.addProc(int(r.PID))
		}
		if rep, ok := s.limiter.Observe(o.Key, s.rules[o.Index], o.Count); ok {
			s.print(rep)
		}
	})
	if err != nil {
		s.cfg.Log.Warn("read counters", "err", err)
	}
	kernel.ReadDrops(s.objs.Drops, s.drops, s.cfg.Log)
	for _, pid := range s.order {
		p := s.procs[pid]
		if p.End.Kind != agg.Running {
			continue
		}
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			p.End = agg.End{Kind: agg.Vanished, At: s.cfg.Clock.Now()}
		}
	}
}

func (s *session) print(r thresholds.Report[counters.Key]) {
	w := report.Warning{At: r.Time, PID: int(r.Key.PID), Prefix: r.Prefix()}
	if p := s.procs[w.PID]; p != nil {
		w.ID = &p.Identity
	}
	ev, _, _ := s.cat.Lookup(r.Key.Event)
	w.Message = ev.Message
	sm, _ := s.snap.Sample(r.Key)
	w.Detail = sm.Detail
	fmt.Fprintln(s.cfg.Out, w.Line())
}

// exitPending says whether a process still counted as running has ended
// (it is gone, or a zombie): its exit notification is on its way.
func (s *session) exitPending() bool {
	for _, pid := range s.order {
		if s.procs[pid].End.Kind != agg.Running {
			continue
		}
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			return true
		}
		if st, err := s.cfg.Proc.Stat(pid); err == nil && st.Ended() {
			return true
		}
	}
	return false
}

// ranksRunning says whether a process with a known rank is still counted
// as running.
func (s *session) ranksRunning() bool {
	for _, pid := range s.order {
		if p := s.procs[pid]; p.End.Kind == agg.Running && p.Identity.Rank != identity.Unknown {
			return true
		}
	}
	return false
}

// readAborts marks the processes that called MPI_Abort, with its error
// code, from the startup marks (counting mode).
func (s *session) readAborts() {
	if s.starts == nil {
		return
	}
	for _, pid := range s.order {
		var st bpf.MpiprobeStartup
		if err := s.objs.Startups.Lookup(uint32(pid), &st); err != nil {
			continue
		}
		if st.Ns[probes.MarkAbort] != 0 {
			p := s.procs[pid]
			p.End.MPIAbort, p.End.AbortCode = true, int(st.AbortCode)
		}
	}
}

// running returns the processes still counted as running.
func (s *session) running() []int {
	var out []int
	for _, pid := range s.order {
		if s.procs[pid].End.Kind == agg.Running {
			out = append(out, pid)
		}
	}
	return out
}

func (s *session) allEnded() bool {
	if len(s.order) == 0 {
		return false
	}
	for _, pid := range s.order {
		if s.procs[pid].End.Kind == agg.Running {
			return false
		}
	}
	return true
}

// finish takes the last reading and sums up what was never reported.
func (s *session) finish(events <-chan bpf.MpiprobeProcEvent) error {
	t0 := time.Now()
	defer func() {
		s.cfg.Log.Debug("shutdown", "ms", float64(time.Since(t0).Microseconds())/1000)
	}()
	// Let exit notifications already in the ring buffer arrive: wait while
	// a process is gone whose exit has not been read, 200 ms at most (a
	// fixed wait here was most of a short traced run's added time). When
	// the command has ended, its ranks still running are being torn down
	// by the launcher (MPICH's hydra kills them after an MPI_Abort, maybe
	// after its own exit): their end is waited for, 2 s at most, so that
	// they are not summed up as running.
	wait := 200 * time.Millisecond
	if len(s.cfg.Command) > 0 && s.ranksRunning() {
		wait = 2 * time.Second
	}
	deadline := time.After(wait)
drain:
	for events != nil {
		select {
		case e, ok := <-events:
			if !ok {
				break drain
			}
			s.procEvent(e)
			continue
		default:
		}
		if !s.exitPending() && (wait < time.Second || !s.ranksRunning()) {
			break
		}
		select {
		case e, ok := <-events:
			if !ok {
				break drain
			}
			s.procEvent(e)
		case <-time.After(time.Millisecond):
		case <-deadline:
			break drain
		}
	}
	s.poll()
	s.readAborts()
	if len(s.cfg.Command) > 0 && len(s.cmdTargets) == 0 {
		s.cfg.Log.Warn("no MPI library was found for the command: neither where ldconfig looks (here or in the root its processes ran in) nor in the memory of its processes; name the library with --lib")
	}
	if s.coll != nil {
		s.coll.final()
	}
	for _, r := range s.limiter.Finalize() {
		s.print(r)
	}
	if s.rec != nil {
		st, err := s.rec.stop(s.objs.TraceLost, s.objs.TraceStages, s.endOf)
		s.cfg.Trace.Stats = st
		s.rec = nil
		if err != nil {
			return fmt.Errorf("trace file: %w", err)
		}
	}
	return nil
}

// summary builds the per-job summary of the session.
func (s *session) summary() agg.Summary {
	var procs []agg.Proc
	for _, pid := range s.order {
		p := s.procs[pid]
		// Launchers and helpers the command started are not ranks; keep
		// them only if something was counted in them.
		if p.Identity.Rank == identity.Unknown && !s.hasSamples(pid) && len(s.cfg.Command) > 0 {
			continue
		}
		procs = append(procs, *p)
	}
	var drops []agg.Drop
	reasons := kernel.DropReasons()
	for i, n := range s.drops {
		if n > 0 {
			drops = append(drops, agg.Drop{What: reasons[i], Count: n})
		}
	}
	sum := s.snap.Summary(s.cfg.Host, s.start, s.cfg.Clock.Now(), procs, nil, drops)
	if s.coll != nil {
		sum.AddCollectives(s.coll.result())
	}
	return sum
}

func (s *session) hasSamples(pid int) bool {
	return len(s.snap.Keys(func(p uint32) bool { return int(p) == pid })) > 0
}
