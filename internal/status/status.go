package status

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"

	"golang.org/x/sys/unix"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/collstate"
	"github.com/mpiprobe/mpiprobe/internal/discover"
	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/kernel"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/status/hang"
	"github.com/mpiprobe/mpiprobe/internal/status/unwind"
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

	sel, err := selectRanks(cfg, &res)
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
	procs, ids := openProcesses(cfg, sel.Procs, &res)
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
// that the kernel can run status's programs.
func selectRanks(cfg Config, res *Result) (discover.Selection, error) {
	pids, err := discover.Named(cfg.Proc, cfg.PIDs, cfg.Job, cfg.Host)
	if err != nil {
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

// openProcesses opens the selected processes, with the memory map
// discover read and their environment, read once here for both their
// identity and their MPI library's layouts. A process that cannot be
// opened is noted on res and has an identity only.
func openProcesses(cfg Config, sel []discover.Proc, res *Result) (map[int]*process, map[int]identity.Identity) {
	files := &tables{byFile: map[fileID]*fileInfo{}}
	procs := map[int]*process{}
	ids := map[int]identity.Identity{}
	for _, dp := range sel {
		pid := dp.PID
		env, err := cfg.Proc.Environ(pid)
		if err != nil {
			env = nil
		}
		ids[pid] = identity.Resolve(pid, knownEnv{cfg.Proc, pid, env, err}, cfg.Host)
		p, err := openProcess(cfg.Proc, dp, env, files)
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("pid %d: %v", pid, err))
			continue
		}
		procs[pid] = p
	}
	return procs, ids
}

// window is what watch saw: the threads at both ends of the window, by
// pid and tid, the MPI calls each thread entered in between, how long
// the window really lasted, and the monotonic clock at its end.
type window struct {
	first, last map[int]map[int]thread
	calls       map[int]uint64
	watched     time.Duration
	now         uint64
}

// watch samples every thread's stack, waits cfg.Window, and samples
// again; threads that seem to have left their call, and communicator
// votes that tie, are sampled more (confirmLeft, resolveComms).
func watch(ctx context.Context, cfg Config, k *live, procs map[int]*process, resolver *symbolize.Resolver) (window, error) {
	var w window
	var err error
	if w.first, err = sample(k, procs, resolver); err != nil {
		return w, err
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return w, ctx.Err()
	case <-time.After(cfg.Window):
	}
	if w.last, err = sample(k, procs, resolver); err != nil {
		return w, err
	}
	w.watched = time.Since(start)
	if w.calls, err = k.calls(); err != nil {
		return w, err
	}
	confirmLeft(k, procs, resolver, w.first, w.last, w.calls)
	resolveComms(k, procs, resolver, w.first, w.last)
	w.now = monotonic()
	return w, nil
}

// rankState is what one rank does: its identity, library, and the
// threads the last sample found inside an MPI call (threadState), with
// the collective counts of its history. p is nil when the process could
// not be opened.
func rankState(cfg Config, pid int, id identity.Identity, p *process, w window, hist []collstate.Entry, res *Result) Rank {
	r := Rank{PID: pid, Job: id.Job, Host: id.Host, Rank: -1}
	if n, err := strconv.Atoi(id.Rank); err == nil {
		r.Rank = n
	}
	if p != nil {
		r.Library = p.libName()
		if p.comms.Layout.Kind == mpiabi.LayoutUnknown {
			r.Note = fmt.Sprintf("unknown %s build %s: communicators are not read", p.libName(), shortID(p.build))
		}
	}
	if gone(pid) {
		r.Ended = "exited during status"
	}
	if hist != nil {
		r.Counts = counts(hist)
	}
	for tid, t := range w.last[pid] {
		before, seen := w.first[pid][tid]
		if unreadable(t) && seen && !unreadable(before) && w.calls[tid] == 0 {
			// The thread entered no MPI call during the window: it
			// is where the first sample saw it.
			t = before
		}
		if unreadable(t) && tid == pid {
			r.Unreadable = fmt.Sprintf("its stack could not be unwound (%v)", t.unwindErr)
		}
		if t.in.Call == "" && t.unwindErr != nil && len(t.frames) > 0 && apiLibrary(t.frames[0].Object) {
			res.Notes = append(res.Notes, fmt.Sprintf("rank %s (pid %d) thread %d is in %s but its stack could not be followed (%v): it may be inside an MPI call",
				id.Rank, pid, tid, path.Base(t.frames[0].Object), t.unwindErr))
		}
		if t.in.Call == "" {
			var fs []string
			for _, f := range t.frames {
				fs = append(fs, frameText(f))
			}
			cfg.Log.Debug("thread in no MPI call", "pid", pid, "tid", tid, "ip", fmt.Sprintf("%#x", t.regs.IP),
				"sp", fmt.Sprintf("%#x", t.regs.SP), "stack", strings.Join(fs, " <- "), "unwind", t.unwindErr)
			continue
		}
		var b *thread
		if seen {
			b = &before
		}
		r.Threads = append(r.Threads, threadState(cfg, pid, t, b, p, w, hist, res))
	}
	if len(r.Threads) > 0 {
		r.Unreadable = ""
	}
	slices.SortFunc(r.Threads, func(a, b Thread) int { return a.TID - b.TID })
	if len(r.Threads) > 1 {
		res.Notes = append(res.Notes, fmt.Sprintf("rank %d (pid %d) has %d threads in MPI calls; the verdict uses the one inside longest", r.Rank, pid, len(r.Threads)))
	}
	return r
}

// threadState is what a thread inside an MPI call does: its call and
// stack, the MPI objects it works on (mpiObjects), whether it moved during
// the window, and, from the rank's history, the collective it is in and
// since when. before is the first sample of the thread, nil if it had
// none.
func threadState(cfg Config, pid int, t thread, before *thread, p *process, w window, hist []collstate.Entry, res *Result) Thread {
	tid := t.tid
	th := Thread{TID: tid, Call: t.in.Call, Site: t.in.Site}
	for _, f := range t.frames {
		th.Stack = append(th.Stack, frameText(f))
	}
	switch {
	case t.in.Hidden:
		th.Note = "call site hidden by a uretprobe"
	case t.unwindErr != nil && t.in.Site == "":
		th.Note = t.unwindErr.Error()
	}
	mpiObjects(&th, t, p, res)
	switch {
	case w.calls[tid] > 0:
		th.Moving = true
		cfg.Log.Debug("thread entered MPI calls during the window", "pid", pid, "tid", tid, "calls", w.calls[tid])
	case before != nil && !unreadable(*before) && (before.in.Call != t.in.Call || before.in.SitePC != t.in.SitePC):
		th.Moving = true
		cfg.Log.Debug("thread changed calls during the window", "pid", pid, "tid", tid,
			"before", before.in.Call, "now", t.in.Call, "before_site", before.in.Site, "unwind_before", before.unwindErr, "stack_before", stackText(*before))
	default:
		th.Since, th.AtLeast = w.watched, true
	}
	if e, st, ok := completing(hist, th); ok && !th.Moving {
		// In MPI_Wait & co. for the only nonblocking collective
		// this rank has not completed: that collective is what it
		// waits for.
		c := e.Comm
		th.Via, th.Call, th.Comm, th.Seq, th.Members = th.Call, st.Name, &c, st.Calls, nil
		if st.PendingSince != 0 && st.PendingSince <= w.now {
			th.Since, th.AtLeast = time.Duration(w.now-st.PendingSince), false
		}
	}
	if e, st, ok := inFlight(hist, th); ok && !th.Moving {
		c := e.Comm
		if th.Comm == nil || th.Comm.ID != c.ID {
			th.Members = nil // read from another communicator
		}
		th.Comm, th.Seq = &c, st.Calls
		if st.Count >= 0 || st.Root >= 0 {
			th.Args = &hang.Args{Root: int(st.Root), Count: st.Count}
			if p != nil {
				th.Args.Datatype = p.datatypeText(st.Datatype)
			}
		}
		if st.Since <= w.now {
			th.Since, th.AtLeast = time.Duration(w.now-st.Since), false
		}
	}
	return th
}

// mpiObjects puts on th the MPI objects the thread works on, read through
// mpiabi: the communicator the stack points to (its identity, the
// thread's rank in it, its name and members) and the requests it waits
// for (addWaits).
func mpiObjects(th *Thread, t thread, p *process, res *Result) {
	th.commRank = -1
	if p != nil && t.comm != 0 {
		if mc, cr, ok := p.comms.Comm(t.comm); ok {
			c := aggComm(mc)
			th.Comm, th.commRank = &c, cr
			if c.Name == "" {
				th.CommName = p.comms.UserName(t.comm)
				th.Members = p.p2p.OMPIMembers(t.comm)
				if th.Members == nil {
					th.Members = p.comms.MPICHMembers(t.comm)
				}
			}
		}
	}
	addWaits(th, t, p, res)
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

// sampleTries bounds how often a thread whose stack could not be followed
// is read again.
const sampleTries = 8

// sample reads the registers of every thread and what each is doing, by
// pid and tid. The registers of a thread running on another CPU are read
// while they may change: a read whose stack cannot be followed (instruction
// pointer and stack pointer from two different moments) is retried.
func sample(k *live, procs map[int]*process, res *symbolize.Resolver) (map[int]map[int]thread, error) {
	out, err := sampleOnce(k, procs, res)
	for try := 1; err == nil && try < sampleTries; try++ {
		if !torn(out) {
			break
		}
		time.Sleep(time.Duration(try) * time.Millisecond)
		again, aerr := sampleOnce(k, procs, res)
		if aerr != nil {
			return out, nil
		}
		for pid, ts := range out {
			for tid, t := range ts {
				if t.in.Call == "" && t.unwindErr != nil {
					if a, ok := again[pid][tid]; ok {
						ts[tid] = a
					}
				}
			}
		}
	}
	return out, err
}

// leftTries bounds the extra samples confirmLeft takes.
const leftTries = 3

// confirmLeft samples again, up to leftTries times, the threads that the
// first sample saw inside an MPI call and the last in none although they
// entered no MPI call in between: either the call returned and the thread
// computes, or the last sample missed the call's frames. A later sample
// that finds the thread back in the first sample's call replaces the
// last; a thread that really computes stays so in every one.
func confirmLeft(k *live, procs map[int]*process, res *symbolize.Resolver, first, last map[int]map[int]thread, calls map[int]uint64) {
	left := func() bool {
		for pid, ts := range last {
			for tid, t := range ts {
				if b, ok := first[pid][tid]; ok && t.in.Call == "" && b.in.Call != "" && calls[tid] == 0 {
					return true
				}
			}
		}
		return false
	}
	for try := 1; try <= leftTries && left(); try++ {
		time.Sleep(time.Duration(try) * time.Millisecond)
		again, err := sampleOnce(k, procs, res)
		if err != nil {
			return
		}
		for pid, ts := range last {
			for tid, t := range ts {
				b, ok := first[pid][tid]
				if !ok || t.in.Call != "" || b.in.Call == "" || calls[tid] != 0 {
					continue
				}
				if a, ok := again[pid][tid]; ok && a.in.Call == b.in.Call {
					ts[tid] = a
				}
			}
		}
	}
}

// commTries bounds the extra samples taken for threads whose communicator
// vote tied.
const commTries = 10

// resolveComms decides the communicator of threads in the same call at
// both ends of the window whose stack words tie between two candidates:
// the words of both samples, then of up to commTries more, are counted
// together until one candidate leads.
func resolveComms(k *live, procs map[int]*process, res *symbolize.Resolver, first, last map[int]map[int]thread) {
	type id struct{ pid, tid int }
	open := map[id]map[uint64]int{}
	for pid, ts := range last {
		for tid, t := range ts {
			b, ok := first[pid][tid]
			if t.in.Call == "" || t.comm != 0 || len(t.votes) < 2 || !ok || b.in.Call != t.in.Call || b.in.SitePC != t.in.SitePC {
				continue
			}
			votes := mergeVotes(b.votes, t.votes)
			if c, ok := bestVote(votes); ok {
				t.comm = c
				ts[tid] = t
				continue
			}
			open[id{pid, tid}] = votes
		}
	}
	for try := 0; try < commTries && len(open) > 0; try++ {
		time.Sleep(2 * time.Millisecond)
		again, err := sampleOnce(k, procs, res)
		if err != nil {
			return
		}
		for i, votes := range open {
			t, a := last[i.pid][i.tid], again[i.pid][i.tid]
			if a.in.Call != t.in.Call || a.in.SitePC != t.in.SitePC {
				continue
			}
			votes = mergeVotes(votes, a.votes)
			open[i] = votes
			if c, ok := bestVote(votes); ok {
				t.comm = c
				last[i.pid][i.tid] = t
				delete(open, i)
			}
		}
	}
}

// torn reports whether a thread's stack could not be followed.
func torn(s map[int]map[int]thread) bool {
	for _, ts := range s {
		for _, t := range ts {
			if t.in.Call == "" && t.unwindErr != nil {
				return true
			}
		}
	}
	return false
}

func sampleOnce(k *live, procs map[int]*process, res *symbolize.Resolver) (map[int]map[int]thread, error) {
	regs, err := k.regs()
	if err != nil {
		return nil, err
	}
	out := map[int]map[int]thread{}
	for _, r := range regs {
		p := procs[int(r.Tgid)]
		if p == nil {
			continue
		}
		if out[p.pid] == nil {
			out[p.pid] = map[int]thread{}
		}
		n := min(int(r.Nret), len(r.RetStack))
		patches := make([]patch, 0, n)
		for i := range n {
			patches = append(patches, patch{at: r.RetStack[i], value: r.RetOrig[i]})
		}
		regs := unwind.Regs{IP: r.Ip, SP: r.Sp, BP: r.Bp, HasLive: true}
		regs.Live[3], regs.Live[12], regs.Live[13], regs.Live[14], regs.Live[15] = r.Bx, r.R12, r.R13, r.R14, r.R15
		out[p.pid][int(r.Tid)] = p.stack(int(r.Tid), regs, patches, res)
	}
	return out, nil
}

// readHistory returns, per pid, the collective counts of running
// --collectives sessions.
func readHistory(cfg Config, pids []int, res *Result) map[int][]collstate.Entry {
	want := map[int]bool{}
	for _, p := range pids {
		want[p] = true
	}
	sessions, err := collstate.OpenPinned(cfg.PinRoot, func(pid int) bool { return !gone(pid) })
	if err != nil {
		res.Notes = append(res.Notes, "collective history: "+err.Error())
	}
	out := map[int][]collstate.Entry{}
	for _, s := range sessions {
		es, err := collstate.Read(s.Maps, func(pid int) bool { return want[pid] })
		s.Close()
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("collective history of mpiprobe pid %d: %v", s.PID, err))
			continue
		}
		if len(es) > 0 {
			res.History = append(res.History, s.PID)
		}
		for _, e := range es {
			out[e.PID] = append(out[e.PID], e)
		}
	}
	return out
}

// inFlight finds the history entry of the collective a thread is in: same
// name and a thread inside. When several communicators qualify, the one
// the stack shows decides; a single entry wins over the stack's vote, since
// the probe read the communicator from the call's own argument.
func inFlight(hist []collstate.Entry, th Thread) (collstate.Entry, collstate.Stat, bool) {
	var found []struct {
		e  collstate.Entry
		st collstate.Stat
	}
	for _, e := range hist {
		for _, st := range e.Stats {
			if st.Name == th.Call && st.Inside > 0 {
				found = append(found, struct {
					e  collstate.Entry
					st collstate.Stat
				}{e, st})
			}
		}
	}
	if len(found) > 1 && th.Comm != nil {
		for _, f := range found {
			if f.e.Comm.ID == th.Comm.ID && f.e.Comm.Size == th.Comm.Size {
				return f.e, f.st, true
			}
		}
	}
	if len(found) == 1 {
		return found[0].e, found[0].st, true
	}
	return collstate.Entry{}, collstate.Stat{}, false
}

// completionCalls complete requests.
var completionCalls = map[string]bool{
	"MPI_Wait": true, "MPI_Test": true, "MPI_Waitall": true, "MPI_Testall": true,
	"MPI_Waitany": true, "MPI_Testany": true, "MPI_Waitsome": true, "MPI_Testsome": true,
}

// completing finds the nonblocking collective a thread in a completion
// call waits for: the only one of the rank with a request not completed.
func completing(hist []collstate.Entry, th Thread) (collstate.Entry, collstate.Stat, bool) {
	if !completionCalls[th.Call] {
		return collstate.Entry{}, collstate.Stat{}, false
	}
	var e collstate.Entry
	var st collstate.Stat
	n := 0
	for _, h := range hist {
		for _, s := range h.Stats {
			if s.Pending > 0 {
				e, st = h, s
				n++
			}
		}
	}
	return e, st, n == 1
}

// counts turns history entries into per-communicator counts.
func counts(es []collstate.Entry) []CommCount {
	var out []CommCount
	for _, e := range es {
		c := CommCount{Comm: e.Comm, Calls: map[string]uint64{}}
		for _, st := range e.Stats {
			c.Calls[st.Name] = st.Calls
		}
		out = append(out, c)
	}
	return out
}

// hangRank is the rank as package hang sees it: the thread inside its call
// longest stands for the rank.
func hangRank(r Rank) hang.Rank {
	h := hang.Rank{Rank: r.Rank, PID: r.PID, Host: r.Host, Ended: r.Ended}
	if r.Counts != nil {
		h.Counts = map[agg.Comm]map[string]uint64{}
		for _, c := range r.Counts {
			m := h.Counts[c.Comm]
			if m == nil {
				m = map[string]uint64{}
				h.Counts[c.Comm] = m
			}
			for n, v := range c.Calls {
				m[n] += v
			}
		}
	}
	var best *Thread
	for i := range r.Threads {
		t := &r.Threads[i]
		if best == nil || betterThread(t, best) {
			best = t
		}
	}
	h.Unreadable = r.Unreadable
	if best != nil {
		call := &hang.Call{Name: best.Call, Comm: best.Comm, Seq: best.Seq, Peer: -1,
			Since: best.Since, AtLeast: best.AtLeast, Site: best.Site, Args: best.Args, Members: best.Members}
		if len(best.Waits) > 0 {
			call.Waits, call.Peer = best.Waits, waitsPeer(best.Waits)
		}
		if best.Moving {
			call.Since = 0
		}
		h.In = call
	}
	return h
}

// betterThread reports whether a stands for its rank rather than b: a
// thread that stays in its call before one that moves, then one inside
// longer, then one in a collective (what the other ranks wait for).
func betterThread(a, b *Thread) bool {
	if a.Moving != b.Moving {
		return !a.Moving
	}
	if a.Since != b.Since {
		return a.Since > b.Since
	}
	return a.Comm != nil && hang.IsCollective(a.Call) && !(b.Comm != nil && hang.IsCollective(b.Call))
}

// unreadable reports whether a sample of a thread says nothing: no MPI call
// found because its stack could not be unwound.
func unreadable(t thread) bool { return t.in.Call == "" && t.unwindErr != nil }

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

// knownEnv is /proc as identity.Resolve reads it, with the environment of
// pid already read (env, or the error reading it).
type knownEnv struct {
	procfs.FS
	pid int
	env map[string]string
	err error
}

func (k knownEnv) Environ(pid int) (map[string]string, error) {
	if pid == k.pid {
		return k.env, k.err
	}
	return k.FS.Environ(pid)
}
