package status

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/collstate"
	"github.com/mpiprobe/mpiprobe/internal/discover"
	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/kernel"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/status/hang"
	"github.com/mpiprobe/mpiprobe/internal/symbolize"
)

// Config says which ranks status looks at and how.
type Config struct {
	// PIDs are ranks to look at.
	PIDs []int
	// Job takes every rank of the job on this node.
	Job string
	// Window is how long threads are watched when no history says how long
	// they have been inside their call (default DefaultWindow).
	Window time.Duration
	// MinWait is how long a rank must be inside a call to count as blocked
	// (default: the window).
	MinWait time.Duration
	// Host names this node (default: the hostname).
	Host string
	// Proc reads /proc.
	Proc procfs.FS
	// PinRoot is where sessions pin their collective maps (default
	// collstate.PinRoot).
	PinRoot string
	// Log receives diagnostics.
	Log *slog.Logger
	// Allow, when set, says whether the caller may look at a process (the
	// agent's query socket answers a user for their own processes only).
	// A pid of PIDs it refuses is an error, its error; a rank of Job it
	// refuses is left out as if it ran elsewhere.
	Allow func(pid int) error
}

// DefaultWindow is how long status watches threads by default.
const DefaultWindow = time.Second

// Thread is one thread of a rank that is inside an MPI call.
type Thread struct {
	TID int `json:"tid"`
	// Call is the MPI call ("MPI_Barrier").
	Call string `json:"call"`
	// Comm is the communicator, nil if unknown.
	Comm *agg.Comm `json:"comm,omitempty"`
	// CommName is the name the application gave it (MPI_Comm_set_name),
	// read from the stack's communicator object; "" if none.
	CommName string `json:"comm_name,omitempty"`
	// Members are the WORLD ranks of Comm's group, read from the library
	// (Open MPI's group, MPICH ch4's rank map); nil if not read.
	Members []int `json:"members,omitempty"`
	// Seq numbers a collective on Comm (1-based), 0 if unknown.
	Seq uint64 `json:"seq,omitempty"`
	// Since is how long the thread has been inside; a lower bound when
	// AtLeast.
	Since   time.Duration `json:"-"` // written as since_seconds (jsonThread)
	AtLeast bool          `json:"at_least,omitempty"`
	// Moving says the thread entered other MPI calls during the window:
	// it is making progress, Since is not meaningful.
	Moving bool `json:"moving,omitempty"`
	// Via is the completion call (MPI_Wait, ...) the thread is in when
	// Call is the nonblocking collective it completes.
	Via string `json:"via,omitempty"`
	// Site is the application's call site.
	Site string `json:"site,omitempty"`
	// Stack is the symbolized stack, innermost first.
	Stack []string `json:"stack,omitempty"`
	// Note says what could not be read.
	Note string `json:"note,omitempty"`
	// Args are the root, count and datatype the collective was entered
	// with, from a --collectives session; nil without.
	Args *hang.Args `json:"args,omitempty"`
	// Waits are the point-to-point requests the call waits for, read
	// from the library (see stackrequests.go); nil if none was found.
	Waits []hang.Wait `json:"waits,omitempty"`
	// commRank is the thread's rank in Comm, -1 if unknown.
	commRank int
}

// Rank is one rank's state.
type Rank struct {
	Rank int    `json:"rank"`
	PID  int    `json:"pid"`
	Job  string `json:"job"`
	Host string `json:"host"`
	// Threads are its threads inside MPI calls; none means computing.
	Threads []Thread `json:"threads"`
	// Ended is set when the rank ended while status looked at it.
	Ended string `json:"ended,omitempty"`
	// Stopped says how the rank is stopped ("by SIGSTOP", "by its
	// debugger"); "" while it runs. resume is how to resume it.
	Stopped string `json:"stopped,omitempty"`
	resume  string
	// Counts are the collective calls per communicator, from a
	// --collectives session; nil without history.
	Counts []CommCount `json:"counts,omitempty"`
	// Unreadable says why the rank's state is unknown: its main thread is
	// in no MPI call that could be seen, and its stack could not be
	// unwound. "" when the state is known.
	Unreadable string `json:"unreadable,omitempty"`
	// Library is the MPI library and its build; Note says when its
	// communicator layout is unknown.
	Library string `json:"library,omitempty"`
	Note    string `json:"note,omitempty"`
}

// CommCount is how many times a rank called each collective on one
// communicator.
type CommCount struct {
	Comm  agg.Comm          `json:"comm"`
	Calls map[string]uint64 `json:"calls"`
}

// Result is what status found.
type Result struct {
	Host string `json:"host"`
	// Window is how long threads were watched.
	Window time.Duration `json:"-"` // written as window_seconds
	// History names the mpiprobe sessions whose collective counts were
	// used; empty without history.
	History []int  `json:"history_sessions,omitempty"`
	Ranks   []Rank `json:"ranks"`
	// Report is the verdict.
	Report hang.Report `json:"report"`
	// Notes are one-line remarks (threads in several calls, unknown builds).
	Notes []string `json:"notes,omitempty"`
	// Nodes are the nodes whose facts were merged, Missing those that
	// did not answer; both nil unless status fanned out (merge.go).
	Nodes   []string      `json:"-"`
	Missing []NodeFailure `json:"-"`
}

// Collect looks at the ranks and decides who waits where, in stages:
// the ranks are selected and opened (selectRanks, openProcesses), their
// threads sampled at both ends of a window (watch), each rank's threads
// turned into facts with the MPI objects they work on (rankState,
// threadState, mpiObjects), and the whole diagnosed (diagnose) into a
// Result ready to render.
func Collect(ctx context.Context, cfg Config) (Result, error) {
	cfg = withDefaults(cfg)
	res := Result{Host: cfg.Host, Window: cfg.Window}

	env := newEnvCache(cfg.Proc)
	sel, err := selectRanks(cfg, env, &res)
	if err != nil {
		return res, err
	}
	k, err := openLive()
	if err != nil {
		return res, err
	}
	defer k.close()
	if err := k.watch(sel.Live); err != nil {
		return res, err
	}
	if err := k.countCalls(sel.Targets); err != nil {
		return res, fmt.Errorf("attach the MPI call counter: %w", err)
	}

	history := readHistory(cfg, sel.Live, &res)
	procs, ids := openProcesses(cfg, env, sel.Procs, &res)
	defer func() {
		for _, p := range procs {
			p.close()
		}
	}()
	resolver := symbolize.NewResolver()
	defer resolver.Close()

	w, err := watch(ctx, cfg, k, procs, resolver)
	if err != nil {
		return res, err
	}
	for _, pid := range sel.Live {
		res.Ranks = append(res.Ranks, rankState(cfg, pid, ids[pid], procs[pid], w, history[pid], &res))
	}
	diagnose(&res, cfg.MinWait)
	return res, nil
}

// withDefaults fills in what cfg leaves unset.
func withDefaults(cfg Config) Config {
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.MinWait <= 0 {
		cfg.MinWait = cfg.Window
	}
	if cfg.Host == "" {
		cfg.Host, _ = os.Hostname()
	}
	if cfg.PinRoot == "" {
		cfg.PinRoot = collstate.PinRoot
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return cfg
}

// selectRanks finds the processes cfg names that map an MPI library
// (discover.Select), noting on res why the others are skipped, and checks
// that the kernel can run status's programs. The environments read to
// find a job's ranks are kept in env.
func selectRanks(cfg Config, env envCache, res *Result) (discover.Selection, error) {
	pids, err := discover.NamedVia(cfg.Proc, env, cfg.PIDs, cfg.Job, cfg.Host)
	if err != nil {
		return discover.Selection{}, err
	}
	if pids, err = allowed(cfg, pids); err != nil {
		return discover.Selection{}, err
	}
	if len(pids) == 0 {
		return discover.Selection{}, errors.New("no target: give -p PID or --job JOBID")
	}
	sel := discover.Select(cfg.Proc, pids, nil)
	if len(sel.Live) == 0 {
		return sel, errors.Join(sel.Skipped...)
	}
	for _, e := range sel.Skipped {
		res.Notes = append(res.Notes, e.Error())
	}
	return sel, kernel.Preflight()
}

// allowed keeps the pids cfg.Allow allows: a refused pid of cfg.PIDs
// is an error, a refused rank of cfg.Job is dropped.
func allowed(cfg Config, pids []int) ([]int, error) {
	if cfg.Allow == nil {
		return pids, nil
	}
	var out []int
	for _, pid := range pids {
		err := cfg.Allow(pid)
		switch {
		case err == nil:
			out = append(out, pid)
		case slices.Contains(cfg.PIDs, pid):
			return nil, err
		}
	}
	if len(out) == 0 && cfg.Job != "" {
		return nil, fmt.Errorf("no rank of job %q that is yours runs on this node: check the id (mpiprobe ps lists your jobs), or ask root to look at other users' jobs", cfg.Job)
	}
	return out, nil
}

// openProcesses opens the selected processes, with the memory map
// discover read and their environment, read once (env) for both their
// identity and their MPI library's layouts. A process that cannot be
// opened is noted on res and has an identity only.
func openProcesses(cfg Config, envs envCache, sel []discover.Proc, res *Result) (map[int]*process, map[int]identity.Identity) {
	files := &tables{byFile: map[fileID]*fileInfo{}}
	procs := map[int]*process{}
	ids := map[int]identity.Identity{}
	for _, dp := range sel {
		pid := dp.PID
		env, err := envs.Environ(pid)
		if err != nil {
			env = nil
		}
		ids[pid] = identity.Resolve(pid, envs, cfg.Host)
		p, err := openProcess(cfg.Proc, dp, env, files)
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("pid %d: %v", pid, err))
			continue
		}
		procs[pid] = p
	}
	return procs, ids
}

// diagnose orders the ranks, names the WORLD ranks of peers known by
// their rank in a communicator (resolveCommPeers) and puts package
// hang's verdict on res.
func diagnose(res *Result, minWait time.Duration) {
	slices.SortFunc(res.Ranks, func(a, b Rank) int {
		if a.Rank != b.Rank {
			return a.Rank - b.Rank
		}
		return a.PID - b.PID
	})
	res.Report = hang.Diagnose(resolveCommPeers(res.Ranks), minWait)
}

// frameText renders one frame for --verbose and JSON.
func frameText(s symbolize.Site) string {
	if s.Object == "" {
		return "?"
	}
	return siteText(s) + " in " + s.Object
}

// stackText renders a sampled stack for debug messages.
func stackText(t thread) string {
	var fs []string
	for i, f := range t.frames {
		s := frameText(f)
		if i < len(t.pcs) {
			s += fmt.Sprintf(" [%#x]", t.pcs[i])
		}
		fs = append(fs, s)
	}
	return strings.Join(fs, " <- ")
}

// gone reports whether a process no longer exists.
func gone(pid int) bool {
	err := unix.Kill(pid, 0)
	return errors.Is(err, unix.ESRCH) || errors.Is(err, fs.ErrNotExist)
}

// monotonic is CLOCK_MONOTONIC in nanoseconds, the clock of BPF's
// bpf_ktime_get_ns.
func monotonic() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	if id == "" {
		return "(no build id)"
	}
	return id
}

// envCache is /proc as identity.Resolve reads it, keeping each
// process's environment (or the error reading it) once read: the --job
// scan, the identities and the layouts read it once per process.
type envCache struct {
	procfs.FS
	envs map[int]envRead
}

type envRead struct {
	env map[string]string
	err error
}

func newEnvCache(fs procfs.FS) envCache { return envCache{fs, map[int]envRead{}} }

func (c envCache) Environ(pid int) (map[string]string, error) {
	e, ok := c.envs[pid]
	if !ok {
		e.env, e.err = c.FS.Environ(pid)
		c.envs[pid] = e
	}
	return e.env, e.err
}
