package status

// Sampling the threads of the ranks: their registers, read by a BPF
// task iterator, unwound and symbolized, at both ends of the window.

import (
	"context"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/status/unwind"
	"github.com/mpiprobe/mpiprobe/internal/symbolize"
)

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
// again; threads that seem to have left their call, communicator votes
// that tie, and MPICH calls whose frame gave no peer are sampled more
// (confirmLeft, resolveComms, resolveFramePeers).
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
	resolveFramePeers(k, procs, resolver, w.last)
	w.now = monotonic()
	return w, nil
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

// framePeerTries bounds the extra samples resolveFramePeers takes.
const framePeerTries = 20

// resolveFramePeers samples again, up to framePeerTries times, the
// threads in a call that keeps its peer only in its frame (MPICH's
// MPI_Probe, MPI_Ssend: frameargs.go) whose last sample read none. The
// slots are known at the return addresses of the calls the function
// makes; a sample that caught the thread in the function's own code
// (MPI_Probe's loop between ucp_tag_probe_nb and progress: one sample in
// eight on Debian 12's MPICH here) reads nothing. A later sample in the
// same call from the same site that reads a peer replaces the last.
func resolveFramePeers(k *live, procs map[int]*process, res *symbolize.Resolver, last map[int]map[int]thread) {
	type id struct{ pid, tid int }
	open := map[id]bool{}
	for pid, ts := range last {
		p := procs[pid]
		for tid, t := range ts {
			if p != nil && p.p2p.OK && p.p2p.Kind() == mpiabi.LayoutMPICH && mpiabi.FrameArgCall(t.in.Call) && !peerRead(t.waits) {
				open[id{pid, tid}] = true
			}
		}
	}
	for try := 1; try <= framePeerTries && len(open) > 0; try++ {
		time.Sleep(time.Millisecond)
		again, err := sampleOnce(k, procs, res)
		if err != nil {
			return
		}
		for i := range open {
			t, a := last[i.pid][i.tid], again[i.pid][i.tid]
			if a.in.Call == t.in.Call && a.in.SitePC == t.in.SitePC && peerRead(a.waits) {
				last[i.pid][i.tid] = a
				delete(open, i)
			}
		}
	}
}

// peerRead reports whether a request of ws names its peer.
func peerRead(ws []mpiabi.Request) bool {
	for _, w := range ws {
		if w.Peer != mpiabi.PeerUnknown || w.CommPeer >= 0 {
			return true
		}
	}
	return false
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
