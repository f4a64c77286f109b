package session

import (
	"fmt"
	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/collstate"
	"github.com/mpiprobe/mpiprobe/internal/kernel"
	"github.com/mpiprobe/mpiprobe/probes"
)

// collTracker runs collective tracking in a session.
type collTracker struct {
	s      *session
	att    *probes.CollAttacher
	maps   collstate.Maps
	pinDir string
	// final readings of processes whose slots were released, by pid
	done map[int][]collstate.Entry
	// the last reading of everything, at the end of the session
	last []collstate.Entry
	// mu guards att once the layout watch runs; watch infers the
	// layouts of unknown builds
	mu    sync.Mutex
	watch *layoutWatch
}

// startCollectives attaches collective tracking to the MPI C libraries
// among targets and pins its maps for `mpiprobe status`. The layouts of
// builds not in the verified table are inferred from the running
// processes live, or later from the first traced process past MPI_Init.
func (s *session) startCollectives(targets []probes.Target, live []int) (*collTracker, error) {
	ct := &collTracker{s: s, maps: collstate.Of(&s.objs), done: map[int][]collstate.Entry{}}
	if err := collstate.Init(ct.maps); err != nil {
		return nil, err
	}
	ct.att = probes.NewCollAttacher(probes.CollPrograms{
		Enter: s.objs.CollEnter, Exit: s.objs.CollExit,
		EnterMulti: s.objs.CollEnterMulti, ExitMulti: s.objs.CollExitMulti,
		CommFree:  s.objs.CollCommFree,
		WaitEnter: s.objs.CollWaitEnter, WaitExit: s.objs.CollWaitExit,
		WaitEnterSingle: s.objs.CollWaitEnterSingle, WaitExitSingle: s.objs.CollWaitExitSingle,
	}, func(i int, l mpiabi.CommLayout) error {
		return s.objs.CollLayouts.Put(uint32(i), bpfLayout(l))
	})
	if err := s.attachLive("attach collective probes", ct.att.Add); err != nil {
		_ = ct.att.Close()
		return nil, err
	}
	// A command's ranks may map an MPI of their own, found as they start
	// (add): then nothing attached ahead is no error.
	if ct.att.Links() == 0 && len(s.cfg.Command) == 0 {
		_ = ct.att.Close()
		return nil, fmt.Errorf("no MPI C library to track collectives in %s: --collectives knows Open MPI's libmpi.so.40 and MPICH's libmpich.so.12", describeTargets(targets))
	}
	ct.watch = s.startLayoutWatch(ct.att, &ct.mu, ct.maps, live)
	if err := kernel.MountBPFFS(filepath.Dir(collstate.PinRoot)); err != nil {
		s.cfg.Log.Warn("collective history is not shared with `mpiprobe status`", "err", err)
		return ct, nil
	}
	dir := filepath.Join(collstate.PinRoot, strconv.Itoa(os.Getpid()))
	if err := collstate.Pin(ct.maps, dir); err != nil {
		s.cfg.Log.Warn("collective history is not shared with `mpiprobe status`", "err", err)
		_ = collstate.Unpin(ct.maps, dir)
		return ct, nil
	}
	ct.pinDir = dir
	return ct, nil
}

// bpfLayout converts a layout for the coll_layouts map.
func bpfLayout(l mpiabi.CommLayout) bpf.MpiprobeCollLayout {
	return bpf.MpiprobeCollLayout{
		Kind: uint32(l.Kind), CidOff: l.CIDOff, CidMask: l.CIDMask, RankOff: l.RankOff,
		SizeOff: l.SizeOff, GroupOff: l.GroupOff, ObjSize: l.ObjSize, IndBlocksOff: l.IndBlocksOff,
		Builtin: l.Builtin, Direct: l.Direct, Mem: l.Mem,
		IndShift: l.IndShift, IndBlockMask: l.IndBlockMask, IndIndexMask: l.IndIndexMask,
	}
}

// add attaches collective tracking to the MPI C libraries among targets
// that a process of the command maps from elsewhere (another root, a
// private directory: the follower finds them as it starts), and has the
// layouts of those of unknown builds inferred.
func (ct *collTracker) add(targets []probes.Target) error {
	ct.mu.Lock()
	before := len(ct.att.Libraries())
	err := ct.att.Add(targets)
	fresh := ct.att.Libraries()[before:]
	ct.mu.Unlock()
	ct.watch.watch(fresh)
	return err
}

// ended keeps the final counts of a process that exited and frees its slots.
func (ct *collTracker) ended(pid int) {
	es, err := collstate.Read(ct.maps, func(p int) bool { return p == pid })
	if err != nil {
		ct.s.cfg.Log.Warn("read collective counters", "pid", pid, "err", err)
		return // keep the slots: they are read again at the end
	}
	ct.done[pid] = append(ct.done[pid], es...)
	if err := collstate.Release(ct.maps, func(p int) bool { return p == pid }); err != nil {
		ct.s.cfg.Log.Warn("release communicator slots", "pid", pid, "err", err)
	}
}

// final takes the last reading.
func (ct *collTracker) final() {
	es, err := collstate.Read(ct.maps, nil)
	if err != nil {
		ct.s.cfg.Log.Warn("read collective counters", "err", err)
	}
	ct.last = es
}

// result returns every reading as the summary's figures.
func (ct *collTracker) result() []agg.CommCalls {
	var out []agg.CommCalls
	add := func(es []collstate.Entry) {
		for _, e := range es {
			c := agg.CommCalls{PID: e.PID, Comm: e.Comm, Rank: e.Rank}
			for _, st := range e.Stats {
				c.Calls = append(c.Calls, agg.CollCalls{Name: st.Name, Calls: st.Calls, Total: st.Total, Max: st.Max,
					Pending: st.Pending, Completed: st.Completed, ToComplete: st.ToComplete})
			}
			out = append(out, c)
		}
	}
	for _, es := range ct.done {
		add(es)
	}
	add(ct.last)
	return out
}

func (ct *collTracker) close() {
	if ct.watch != nil {
		ct.watch.close()
	}
	if ct.pinDir != "" {
		if err := collstate.Unpin(ct.maps, ct.pinDir); err != nil {
			ct.s.cfg.Log.Warn("unpin collective maps", "dir", ct.pinDir, "err", err)
		}
	}
	_ = ct.att.Close()
}
