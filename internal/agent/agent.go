package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/config"
	"github.com/mpiprobe/mpiprobe/internal/counters"
	"github.com/mpiprobe/mpiprobe/internal/discover"
	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/jobstore"
	"github.com/mpiprobe/mpiprobe/internal/journal"
	"github.com/mpiprobe/mpiprobe/internal/kernel"
	"github.com/mpiprobe/mpiprobe/internal/metrics"
	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/report"
	"github.com/mpiprobe/mpiprobe/internal/text"
	"github.com/mpiprobe/mpiprobe/probes"
	"github.com/mpiprobe/mpiprobe/thresholds"
)

// Config is how the agent runs. Zero fields take the defaults of package
// config (config.Default, the configuration file's keys).
type Config struct {
	// Host names this node (default: the hostname).
	Host string
	// Catalog is the probe catalog (default probes.DefaultCatalog()).
	Catalog probes.Catalog
	// Overrides of the catalog's C/T rules, weakest first.
	Overrides []thresholds.Overrides
	// Interval is how often counters are read (default 1s).
	Interval time.Duration
	// StateDir holds agent-state.json, agent.lock and jobs/ (default /var/lib/mpiprobe).
	StateDir string
	// PinDir is where maps and links are pinned (default
	// /sys/fs/bpf/mpiprobe/agent). One agent at a time uses it: Run locks
	// it as well as StateDir.
	PinDir string
	// ConfigPath names the configuration file the settings came from, for
	// messages that tell how to change one ("" when none was read).
	ConfigPath string
	// LibraryPaths are files or directories searched for MPI libraries at
	// start, besides the ones ldconfig knows.
	LibraryPaths []string
	// DebugDirs are searched for the separate debug file of a library whose
	// struct layout mpiprobe does not know; nil means
	// elfx.DefaultDebugDir.
	DebugDirs []string
	// Metrics, when non-nil, is where the Prometheus metrics are served.
	Metrics net.Listener
	// MetricsWebConfig, when set, is the web configuration file of the
	// metrics page (TLS, basic authentication): see metrics.Serve.
	MetricsWebConfig string
	// MetricsTTL is how long a finished job stays in the metrics (default 10m).
	MetricsTTL time.Duration
	// MaxSeries caps the number of metric samples (default 20000).
	MaxSeries int
	// RetentionJobs and RetentionAge bound the job summaries kept.
	RetentionJobs int
	RetentionAge  time.Duration
	// Rescan is how often every process's memory map is read again for MPI
	// libraries (default 30s); new processes are read when they exec.
	Rescan time.Duration
	// RunningEvery is how often running jobs' summaries are written (default 10s).
	RunningEvery time.Duration
	// SharedDir, when set, is a directory the nodes share: each job's
	// summary on this node is also written there as the node's part of the
	// job (jobstore.Shared, report.Part), when it is written locally.
	SharedDir string
	// Proc reads /proc (default /proc).
	Proc procfs.FS
	// Log receives diagnostics.
	Log *slog.Logger
	// Journal receives warnings and job summaries.
	Journal journal.Sink
	// Clock is the C/T rule's clock (default the system clock).
	Clock thresholds.Clock
}

// agent is the state of one Run. mu guards everything the metrics handler
// reads; the loop holds it while it works.
type agent struct {
	cfg   Config
	cat   probes.Catalog
	libs  []probes.Library // the library kinds it probes, made once: every exec on the node is scanned for them
	rules map[string]thresholds.Rule
	k     *pinned
	att   *probes.Attacher
	satt  *probes.StartupAttacher
	store jobstore.Store
	tb    kernel.Timebase

	mu       sync.Mutex
	t        *tracker
	snap     *counters.Snapshot
	limiter  *thresholds.Limiter[counters.Key]
	drops    []uint64
	finished uint64
	files    map[[2]uint64]bool  // library files attached (device, inode), for metrics
	pending  map[int][]time.Time // scans due for processes that exec'd
	// roots are the root directories whose linker cache was looked at
	// (device, inode): the agent's own, then each new one a process ran
	// a program in (execRoot).
	roots    map[[2]uint64]bool
	lastScan time.Time
	lastRun  time.Time
	lastSave time.Time
	// lastAlive is when processes were last checked for being alive.
	lastAlive time.Time
}

// Run watches every MPI process on the node until ctx ends. On return the
// pinned maps and links stay in place while MPI processes still run, so
// that a restarted agent continues without losing counts.
func Run(ctx context.Context, cfg Config) error {
	a, err := newAgent(cfg)
	if err != nil {
		return err
	}
	where := ""
	if a.cfg.ConfigPath != "" {
		where = " (in " + a.cfg.ConfigPath + ", or with --state-dir and --pin-dir)"
	}
	lk, err := takeLock(a.cfg.StateDir, where)
	if err != nil {
		return err
	}
	defer lk.release()
	// The configured state directory may be a symbolic link (the
	// administrator's choice), resolved once here; nothing in it is
	// followed (jobstore refuses a linked jobs/ or file).
	if dir, err := filepath.EvalSymlinks(a.cfg.StateDir); err == nil {
		a.cfg.StateDir, a.store.Dir = dir, jobstore.JobsDir(dir)
	}
	if err := kernel.Preflight(); err != nil {
		return err
	}
	plk, err := lockPinDir(a.cfg.PinDir, where)
	if err != nil {
		return err
	}
	defer plk.release()
	if a.k, err = openPinned(a.cfg.PinDir, a.cfg.Log); err != nil {
		return err
	}
	keep := true
	defer func() { a.k.close(!keep) }()
	if err := a.start(); err != nil {
		keep = a.k.reused
		return err
	}
	defer a.att.Close()
	defer a.satt.Close()

	events, stopEvents, err := kernel.ProcEvents(a.k.objs.ProcEvents, 4096)
	if err != nil {
		return err
	}
	defer stopEvents()

	if a.cfg.Metrics != nil {
		h, err := a.metricsHandler()
		if err != nil {
			return err
		}
		go func() {
			if err := metrics.Serve(ctx, a.cfg.Metrics, h, a.cfg.MetricsWebConfig, a.cfg.Log); err != nil {
				a.cfg.Log.Error("metrics server stopped", "err", err)
			}
		}()
	}

	tick := time.NewTicker(a.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			keep = a.stop()
			return nil
		case e, ok := <-events:
			if !ok {
				a.cfg.Log.Warn("process notifications stopped; exits are detected by polling")
				events = nil
				continue
			}
			a.mu.Lock()
			a.procEvent(e)
			a.mu.Unlock()
		case <-tick.C:
			a.mu.Lock()
			a.poll()
			a.mu.Unlock()
		}
	}
}

func newAgent(cfg Config) (*agent, error) {
	if cfg.Catalog.Events == nil {
		cfg.Catalog = probes.DefaultCatalog()
	}
	if err := cfg.Catalog.Validate(); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if cfg.Host == "" {
		cfg.Host, _ = os.Hostname()
	}
	def := config.Default()
	if cfg.Interval <= 0 {
		cfg.Interval = def.Interval
	}
	if cfg.StateDir == "" {
		cfg.StateDir = def.StateDir
	}
	if cfg.PinDir == "" {
		cfg.PinDir = def.PinDir
	}
	if cfg.MetricsTTL == 0 {
		cfg.MetricsTTL = def.MetricsTTL
	}
	if cfg.MaxSeries <= 0 {
		cfg.MaxSeries = 20000
	}
	if cfg.RetentionJobs <= 0 {
		cfg.RetentionJobs = def.RetentionJobs
	}
	if cfg.RetentionAge <= 0 {
		cfg.RetentionAge = def.RetentionAge
	}
	if cfg.Rescan <= 0 {
		cfg.Rescan = 30 * time.Second
	}
	if cfg.RunningEvery <= 0 {
		cfg.RunningEvery = 10 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.Journal == nil {
		cfg.Journal = journal.NewText(os.Stderr)
	}
	if cfg.Clock == nil {
		cfg.Clock = thresholds.SystemClock{}
	}
	a := &agent{
		cfg:     cfg,
		cat:     cfg.Catalog,
		libs:    libraries(cfg.Catalog),
		rules:   map[string]thresholds.Rule{},
		store:   jobstore.Store{Dir: filepath.Join(cfg.StateDir, "jobs"), Keep: cfg.RetentionJobs, MaxAge: cfg.RetentionAge, Now: cfg.Clock.Now},
		t:       newTracker(),
		tb:      kernel.NewTimebase(),
		limiter: thresholds.NewLimiter[counters.Key](cfg.Clock),
		drops:   make([]uint64, len(kernel.DropReasons())),
		files:   map[[2]uint64]bool{},
		pending: map[int][]time.Time{},
		roots:   map[[2]uint64]bool{},
	}
	// The agent's own root is looked at when it starts (SystemTargets).
	if r, err := discover.RootOf(cfg.Proc, os.Getpid()); err == nil {
		a.roots[[2]uint64{r.Dev, r.Inode}] = true
	}
	a.snap = counters.New(a.cat, a.tb.Wall)
	for _, e := range a.cat.Events {
		a.rules[e.ID] = thresholds.Resolve(e.ID, thresholds.Rule{C: e.C, T: e.T}, cfg.Overrides...)
	}
	return a, nil
}

// start attaches to the libraries known now, restores a previous agent's
// state and finds the MPI processes that already run.
func (a *agent) start() error {
	var err error
	if a.att, err = probes.NewAttacher(a.k.objs.Programs, a.cat); err != nil {
		return err
	}
	a.att.OnFile = a.k.pinner("c")
	a.att.DebugDirs = a.cfg.DebugDirs
	a.satt = probes.NewStartupAttacher(a.k.objs.StartupMark)
	a.satt.OnFile = a.k.pinner("s")
	for _, f := range a.k.attached["c"] {
		a.att.Skip(f[0], f[1])
		a.files[f] = true
	}
	for _, f := range a.k.attached["s"] {
		a.satt.Skip(f[0], f[1])
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	a.checkSharedDir()
	a.restore()
	files, errs := discover.LibraryFiles(a.cfg.LibraryPaths)
	for _, err := range errs {
		a.cfg.Log.Warn("library path unreadable", "err", err)
	}
	targets, err := discover.SystemTargets(a.libs, files)
	if err != nil {
		a.cfg.Log.Warn("no MPI library installed where ldconfig looks; libraries are found in the processes that map them", "err", err)
	}
	if err := a.attach(targets, nil); err != nil {
		return err
	}
	a.scanAll()
	a.cfg.Log.Info("agent started", "host", a.cfg.Host, "libraries", len(a.files), "probes", a.k.pinnedLinks(),
		"processes", len(a.t.procs), "restarted", a.k.reused)
	return nil
}

// libraries are the library kinds a catalog's agent probes: the
// catalog's and the startup probes'.
func libraries(cat probes.Catalog) []probes.Library {
	return append(cat.Libraries(), probes.StartupLibraries()...)
}

// attach attaches the catalog and the startup probes to new library files.
// A failure is logged and the other files and processes go on, but for a
// refusal of the kernel to let the agent attach at all, which is returned.
// gone, when set, tells after a failure whether the process the targets
// were found in went away meanwhile (discover.Recheck): then that race is
// returned, and its other files are left.
func (a *agent) attach(targets []probes.Target, gone func() error) error {
	for _, t := range targets {
		one := []probes.Target{t}
		if err := a.att.Add(one); err != nil {
			if gone != nil {
				if race := gone(); race != nil {
					return race
				}
			}
			if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
				return kernel.ExplainLoad("attach probes to "+t.Display, err)
			}
			a.cfg.Log.Warn("library not attached", "file", t.Display, "err", err)
			continue
		}
		if err := a.satt.Add(one); err != nil {
			a.cfg.Log.Warn("startup probes not attached", "file", t.Display, "err", err)
		}
		key := [2]uint64{t.Dev, t.Inode}
		if !a.files[key] {
			a.files[key] = true
			a.cfg.Log.Debug("library attached", "file", t.Display, "library", t.Library)
		}
	}
	return nil
}

// scanAll reads every process's memory map for MPI libraries.
func (a *agent) scanAll() {
	pids, err := a.cfg.Proc.PIDs()
	if err != nil {
		a.cfg.Log.Warn("list processes", "err", err)
		return
	}
	self := os.Getpid()
	for _, pid := range pids {
		if pid != self {
			a.scan(pid)
		}
	}
	a.lastScan = a.cfg.Clock.Now()
}

// scan looks at one process: if it maps an MPI library, the library is
// attached and the process traced. It returns false when the process is
// gone, so that it is not looked at again.
func (a *agent) scan(pid int) bool {
	if p, ok := a.t.procs[pid]; ok && p.End.Kind == agg.Running {
		return true
	}
	maps, err := a.cfg.Proc.Maps(pid)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	targets, errs, ok := discover.ScanMaps(a.cfg.Proc, pid, maps, a.libs)
	if !ok {
		return true
	}
	st, err := a.cfg.Proc.Stat(pid)
	if err != nil {
		return false // gone already
	}
	proc := discover.Proc{PID: pid, Comm: st.Comm, StartTime: st.StartTime}
	gone := func() error { return discover.Recheck(a.cfg.Proc, proc, "attaching") }
	if len(errs) > 0 {
		if race := gone(); race != nil {
			a.cfg.Log.Info("target gone", "err", race)
			return false
		}
	}
	for _, err := range errs {
		a.cfg.Log.Warn("library not attachable", "pid", pid, "err", err)
	}
	if err := a.attach(targets, gone); discover.IsRace(err) {
		a.cfg.Log.Info("target gone", "err", err)
		return false
	} else if err != nil {
		a.cfg.Log.Error("cannot attach", "pid", pid, "err", err)
	}
	if err := a.k.objs.Traced.Update(uint32(pid), uint32(0), ebpf.UpdateNoExist); err != nil && !errors.Is(err, ebpf.ErrKeyExist) {
		a.cfg.Log.Warn("cannot trace process", "pid", pid, "err", err)
		return true
	}
	a.addProc(pid)
	return true
}

// addProc registers a traced process with its identity, read from /proc
// or, for a process gone from it (or whose pid a later process took), from
// what the BPF side recorded when it entered MPI_Init. It reports whether
// the process is known now.
func (a *agent) addProc(pid int) bool {
	var rec bpf.MpiprobeIdent
	st, err := a.cfg.Proc.Stat(pid)
	if a.k.objs.Idents.Lookup(uint32(pid), &rec) == nil {
		if r := recordOf(pid, &rec); err != nil || st.StartTime != r.ticks {
			a.track(pid, r.comm(), r, r.ticks, " recorded")
			return true
		}
	}
	if err != nil {
		return false
	}
	a.track(pid, st.Comm, a.cfg.Proc, st.StartTime, "")
	return true
}

// track adds a process to the tracker, named from what rd reads of it;
// from says where that came from, for the log.
func (a *agent) track(pid int, comm string, rd identity.Reader, ticks uint64, from string) {
	now := a.cfg.Clock.Now()
	id := identity.Resolve(pid, rd, a.cfg.Host)
	ps, isNew := a.t.add(agg.Proc{PID: pid, Comm: comm, Identity: id}, ticks, procStarted(ticks, now), now)
	if isNew && a.cfg.SharedDir != "" {
		if env, err := rd.Environ(pid); err == nil {
			a.noteNodeList(a.t.jobs[ps.Job], env)
		}
	}
	if ps.mpi == mpiabi.NoFlavour {
		ps.mpi = mpiOf(a.cfg.Proc, pid)
	}
	if isNew {
		a.cfg.Log.Info("MPI process"+from, "pid", pid, "comm", text.Quote(comm), "job", text.Quote(ps.Identity.Job), "rank", text.Quote(ps.Identity.Rank))
	}
}

func (a *agent) procEvent(e bpf.MpiprobeProcEvent) {
	pid := int(e.Tgid)
	if e.Type != kernel.ProcExit && !a.cfg.Proc.InScope(pid) {
		// Outside the scope (--scope netns): another node's process. BPF
		// traces every process entering MPI_Init: not this one.
		_ = a.k.objs.Traced.Delete(uint32(pid))
		return
	}
	switch e.Type {
	case kernel.ProcMPI:
		// Entered MPI_Init: BPF traces it already.
		a.addProc(pid)
	case kernel.ProcExec:
		// A new program: its libraries are mapped by the dynamic linker
		// right after exec, so look at it shortly, and once more later.
		a.execRoot(pid)
		now := a.cfg.Clock.Now()
		a.pending[pid] = []time.Time{now.Add(200 * time.Millisecond), now.Add(2 * time.Second)}
	case kernel.ProcExit:
		a.ended(pid, kernel.DecodeExit(e.ExitCode, a.tb.Wall(e.TsNs)))
	}
}

// execRoot looks at the root of process pid, which has just run a new
// program, when no process ran one in that root before (a chroot, a
// container, unshare --root): the MPI libraries of the root's linker cache
// are attached at once, with the process held, as at the agent's start
// for its own root. The look at the process's maps comes 200 ms later,
// when a job's ranks may have started sending already.
func (a *agent) execRoot(pid int) {
	r, err := discover.RootOf(a.cfg.Proc, pid)
	if err != nil {
		return // gone already
	}
	key := [2]uint64{r.Dev, r.Inode}
	if a.roots[key] {
		return
	}
	a.roots[key] = true
	if discover.Hold(a.cfg.Proc, pid, unix.Kill) {
		defer func() { _ = unix.Kill(pid, unix.SIGCONT) }()
	}
	targets, err := discover.RootTargets(a.cfg.Proc, pid, a.libs)
	if err != nil {
		a.cfg.Log.Warn("libraries of a process's root", "pid", pid, "root", r.Link, "err", err)
	}
	a.cfg.Log.Debug("a process runs in another root", "pid", pid, "root", r.Link, "libraries", len(targets))
	if err := a.attach(targets, nil); err != nil {
		a.cfg.Log.Error("cannot attach", "pid", pid, "err", err)
	}
}

// ended records a process's end and finishes its job when it was the last.
// The kernel's exit record stays until the job's summary is stored
// (release): an agent restarted before that finds the end again.
func (a *agent) ended(pid int, e agg.End) {
	delete(a.pending, pid)
	if j := a.t.end(pid, e); j != nil {
		a.readCounts() // the last counts of the job's processes
		a.finishJob(j)
	}
}

// poll reads the maps, applies the C/T rule, and does what is due.
func (a *agent) poll() {
	now := a.cfg.Clock.Now()
	a.readCounts()
	kernel.ReadDrops(a.k.objs.Drops, a.drops, a.cfg.Log)
	a.readExits()
	a.readStartups(false)
	for pid, due := range a.pending {
		if len(due) > 0 && !now.Before(due[0]) {
			a.pending[pid] = due[1:]
			if !a.scan(pid) {
				delete(a.pending, pid) // gone: its later look is not needed
				continue
			}
		}
		if p, ok := a.t.procs[pid]; len(a.pending[pid]) == 0 || (ok && p.End.Kind == agg.Running) {
			delete(a.pending, pid)
		}
	}
	if now.Sub(a.lastScan) >= a.cfg.Rescan {
		a.scanAll()
	}
	// Processes gone without an exit record (e.g. exited before the agent
	// traced them): rare, so looked for every 10 s only.
	if now.Sub(a.lastAlive) >= 10*time.Second {
		a.endVanished(now)
	}
	if now.Sub(a.lastRun) >= a.cfg.RunningEvery {
		a.lastRun = now
		for _, j := range a.t.running() {
			a.saveJob(j, a.summaryOf(j))
		}
		a.saveUnsaved()
	}
	for _, j := range a.t.jobs {
		if !j.Finished.IsZero() && j.final != nil && !j.Unsaved && now.Sub(j.Finished) > a.cfg.MetricsTTL {
			a.t.forget(j)
		}
	}
	if now.Sub(a.lastSave) >= 10*time.Second {
		a.saveState()
	}
}

// endVanished ends the running processes that are gone although no exit
// was recorded for them. The exits are read again first: a process that
// ended since poll read them has its record in the map already (it is
// written at the exit, before the process leaves /proc), and would
// otherwise be taken for vanished.
func (a *agent) endVanished(now time.Time) {
	a.lastAlive = now
	a.readExits()
	for pid, p := range a.t.procs {
		if p.End.Kind == agg.Running && !alive(pid, p.StartTicks, a.cfg.Proc) {
			a.ended(pid, agg.End{Kind: agg.Vanished, At: now})
		}
	}
}

// userHZ is the unit of /proc/PID/stat's start time: USER_HZ, 100 on
// every Linux architecture.
const userHZ = 100

// procStarted returns when a process with /proc/PID/stat start time ticks
// (after boot, CLOCK_BOOTTIME) started, on the clock whose time now is;
// zero when the boot clock cannot be read.
func procStarted(ticks uint64, now time.Time) time.Time {
	var ts unix.Timespec
	if ticks == 0 || unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return time.Time{}
	}
	return startedAt(ticks, time.Duration(ts.Nano()), now)
}

// startedAt is procStarted with the boot clock read: a process that
// started ticks/userHZ seconds after boot is uptime minus that old.
func startedAt(ticks uint64, uptime time.Duration, now time.Time) time.Time {
	age := uptime - time.Duration(ticks)*time.Second/userHZ
	if age < 0 {
		age = 0
	}
	return now.Add(-age)
}

// alive reports whether pid is still the process that started at ticks.
func alive(pid int, ticks uint64, pfs procfs.FS) bool {
	st, err := pfs.Stat(pid)
	if err != nil {
		return false
	}
	return ticks == 0 || st.StartTime == ticks
}

// readCounts reads every counter, applies the C/T rule and sends what is due.
func (a *agent) readCounts() {
	err := kernel.ReadCounters(a.k.objs.Counts, func(r counters.Reading) {
		o, ok := a.snap.Update(r)
		if !ok {
			return
		}
		if _, ok := a.t.procs[int(r.PID)]; !ok {
			a.addProc(int(r.PID))
		}
		if rep, ok := a.limiter.Observe(o.Key, a.rules[o.Key.Event], o.Count); ok {
			a.warn(rep)
		}
	})
	if err != nil {
		a.cfg.Log.Warn("read counters", "err", err)
	}
}

// readExits takes the exits the kernel recorded, also those of a time the
// agent was not running.
func (a *agent) readExits() {
	var pid uint32
	var r bpf.MpiprobeExitRec
	type rec struct {
		pid uint32
		r   bpf.MpiprobeExitRec
	}
	var all []rec
	it := a.k.objs.Exits.Iterate()
	for it.Next(&pid, &r) {
		all = append(all, rec{pid, r})
	}
	// The processes that ended while no agent ran are added from their
	// records first, so that a job's ranks end together.
	for _, e := range all {
		if _, ok := a.t.procs[int(e.pid)]; !ok && !a.addProc(int(e.pid)) {
			_ = a.k.objs.Exits.Delete(e.pid)
		}
	}
	for _, e := range all {
		p, ok := a.t.procs[int(e.pid)]
		if !ok || p.End.Kind != agg.Running {
			continue // ended already; the record goes with its job's summary
		}
		a.ended(int(e.pid), kernel.DecodeExit(e.r.Code, a.tb.Wall(e.r.TsNs)))
	}
}

// readStartups reads the startup marks of the processes still in
// MPI_Init, or with all, of every process (when a job ends, for its
// MPI_Finalize times).
func (a *agent) readStartups(all bool) {
	for pid, p := range a.t.procs {
		if !all && p.Startup.Init > 0 {
			continue
		}
		var s bpf.MpiprobeStartup
		if err := a.k.objs.Startups.Lookup(uint32(pid), &s); err != nil {
			continue
		}
		p.Startup = startupOf(s.Ns, a.tb.Wall)
		if s.Ns[probes.MarkAbort] != 0 {
			p.End.MPIAbort, p.End.AbortCode = true, int(s.AbortCode)
		}
	}
}

// warn sends a C/T report to the journal.
func (a *agent) warn(r thresholds.Report[counters.Key]) {
	p := a.t.procs[int(r.Key.PID)]
	id := identity.Identity{Host: a.cfg.Host, Job: identity.Unknown, Rank: identity.Unknown}
	if p != nil {
		id = p.Identity
	}
	ev, _, _ := a.cat.Lookup(r.Key.Event)
	sm, _ := a.snap.Sample(r.Key)
	detail := sm.Detail
	w := report.Warning{ID: &id, PID: int(r.Key.PID), Prefix: r.Prefix(), Message: ev.Message, Detail: detail}
	entry := journal.Entry{
		Priority: journal.Warning,
		Message:  w.Line(),
		Fields: []journal.Field{
			{Name: "HOST", Value: id.Host}, {Name: "JOB", Value: id.Job}, {Name: "RANK", Value: id.Rank},
			{Name: "PID", Value: strconv.Itoa(int(r.Key.PID))}, {Name: "EVENT", Value: r.Key.Event},
			{Name: "COUNT", Value: strconv.FormatUint(r.Count, 10)},
		},
	}
	if detail != "" {
		entry.Fields = append(entry.Fields, journal.Field{Name: "DETAIL", Value: detail})
	}
	err := a.cfg.Journal.Send(entry)
	if err != nil {
		a.cfg.Log.Warn("journal", "err", err)
	}
}

// ofJob says whether a process belongs to the job.
func ofJob(j *jobState) func(pid uint32) bool {
	return func(pid uint32) bool { return slices.Contains(j.PIDs, int(pid)) }
}

// summaryOf builds the summary of one job from what was read so far.
func (a *agent) summaryOf(j *jobState) agg.Summary {
	end := j.Finished
	if end.IsZero() {
		end = a.cfg.Clock.Now()
	}
	return a.snap.Summary(a.cfg.Host, j.Started, end, a.t.procsOf(j), ofJob(j), nil)
}

// saveJob writes a job's summary to the state directory and says whether
// it did.
func (a *agent) saveJob(j *jobState, sum agg.Summary) bool {
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, sum); err != nil {
		a.cfg.Log.Error("encode job summary", "job", text.Quote(j.Key), "err", err)
		return false
	}
	a.savePart(j, sum)
	if err := a.store.Save(j.Key, buf.Bytes()); err != nil {
		a.cfg.Log.Error("save job summary", "job", text.Quote(j.Key), "err", err)
		return false
	}
	return true
}

// saveUnsaved tries again to store the summaries of the finished jobs
// whose summary could not be written (a full or read-only state
// directory), also those a previous agent left unsaved: their counts,
// startup marks and exit records are still in the kernel's maps.
func (a *agent) saveUnsaved() {
	for _, j := range a.t.jobs {
		if !j.Unsaved {
			continue
		}
		if j.final == nil { // restored: rebuilt from the maps, read at this poll
			a.readStartups(true)
			sum := a.summaryOf(j)
			j.final = &sum
		}
		if a.saveJob(j, *j.final) {
			a.cfg.Log.Info("job summary saved after an earlier failure", "job", text.Quote(j.Key), "file", a.store.Path(j.Key))
			a.release(j)
		}
	}
}

// finishJob writes the summary of a job whose last rank ended, sums up
// what was never reported, and frees the job's kernel state.
func (a *agent) finishJob(j *jobState) {
	a.readStartups(true)
	keys := a.snap.Keys(ofJob(j))
	for _, k := range keys {
		if r, ok := a.limiter.FinalizeKey(k); ok {
			a.warn(r)
		}
	}
	sum := a.summaryOf(j)
	j.final = &sum
	a.finished++
	saved := a.saveJob(j, sum)
	var table bytes.Buffer
	if err := report.WriteTable(&table, sum); err != nil {
		a.cfg.Log.Error("render job summary", "job", text.Quote(j.Key), "err", err)
	}
	var events uint64
	for _, e := range sum.Totals() {
		events += e.Count
	}
	err := a.cfg.Journal.Send(journal.Entry{
		Priority: journal.Notice,
		Message:  table.String(),
		Fields: []journal.Field{
			{Name: "HOST", Value: a.cfg.Host}, {Name: "JOB", Value: j.Key},
			{Name: "RANKS", Value: strconv.Itoa(len(j.PIDs))}, {Name: "COUNT", Value: strconv.FormatUint(events, 10)},
			{Name: "SUMMARY_FILE", Value: a.store.Path(j.Key)},
		},
	})
	if err != nil {
		a.cfg.Log.Warn("journal", "err", err)
	}
	if saved {
		a.release(j)
	} else {
		// Kept, with the kernel's entries, until saveUnsaved stores it.
		j.Unsaved = true
		a.saveState()
	}
}

// release frees the kernel's entries and the counts of a job whose summary
// is stored (a later process may reuse its pids), and applies the
// retention.
func (a *agent) release(j *jobState) {
	j.Unsaved = false
	kernel.DeleteCounters(a.k.objs.Counts, ofJob(j))
	for _, pid := range j.PIDs {
		_ = a.k.objs.Startups.Delete(uint32(pid))
		_ = a.k.objs.Exits.Delete(uint32(pid))
		_ = a.k.objs.Idents.Delete(uint32(pid))
	}
	a.snap.Forget(a.snap.Keys(ofJob(j)))
	if removed, err := a.store.Prune(func(job string) bool { r, ok := a.t.jobs[job]; return ok && r.Finished.IsZero() }); err != nil {
		a.cfg.Log.Warn("prune job summaries", "err", err)
	} else if len(removed) > 0 {
		a.cfg.Log.Info("job summaries removed by retention", "count", len(removed))
	}
	a.saveState()
}

// stop saves the state for the next agent and says whether the pins must
// stay: they do while MPI processes run, so that their counts go on.
func (a *agent) stop() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.poll()
	a.saveState()
	running := a.t.kept() // an unsaved job's counts are in the maps only
	if len(running) == 0 {
		a.cfg.Log.Info("agent stopped; no MPI job runs, probes detached")
		return false
	}
	a.cfg.Log.Info("agent stopped; probes stay attached and keep counting for the next agent (mpiprobe agent --cleanup detaches them)",
		"jobs", len(running))
	return true
}
