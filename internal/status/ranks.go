package status

// The per-thread facts of each rank and the rank as package hang sees it.

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/collstate"
	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/status/hang"
)

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
			r.Note = "communicators are not read: " + p.commUnknown()
		}
	}
	if gone(pid) {
		r.Ended = "exited during status"
	}
	r.Stopped, r.resume = stopState(cfg.Proc, pid)
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

// stopState says how process pid is stopped ("by SIGSTOP", "by its
// debugger") and how to resume it; "" when it runs. The kernel keeps the
// signal that stopped a process in its exit code (stat field 52).
func stopState(pfs procfs.FS, pid int) (how, resume string) {
	st, err := pfs.Stat(pid)
	switch {
	case err != nil || !st.Stopped():
		return "", ""
	case st.State == 't':
		// A debugger's stop: SIGCONT does not resume it, the debugger does.
		return "by its debugger (tracing stop)", ""
	case st.StopSignal() != 0:
		how = "by " + agg.SignalName(int(st.StopSignal()))
	default:
		how = "by a stop signal"
	}
	return how, "kill -CONT " + strconv.Itoa(pid)
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

// hangRank is the rank as package hang sees it: the thread inside its call
// longest stands for the rank.
func hangRank(r Rank) hang.Rank {
	h := hang.Rank{Rank: r.Rank, PID: r.PID, Host: r.Host, Ended: r.Ended, Stopped: r.Stopped, Resume: r.resume}
	if r.Counts != nil {
		h.Counts = countsMap(r.Counts)
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
		h.Threaded = best.TID != r.PID || len(r.Threads) > 1
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

// countsMap is collective counts as package hang takes them.
func countsMap(cs []CommCount) map[agg.Comm]map[string]uint64 {
	out := map[agg.Comm]map[string]uint64{}
	for _, c := range cs {
		m := out[c.Comm]
		if m == nil {
			m = map[string]uint64{}
			out[c.Comm] = m
		}
		for n, v := range c.Calls {
			m[n] += v
		}
	}
	return out
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
