package session

import (
	"debug/elf"
	"fmt"
	"sync"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/procfs"

	"github.com/mpiprobe/mpiprobe/internal/collstate"
	"github.com/mpiprobe/mpiprobe/internal/discover"
	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/probes"
)

// inferEvery is how often the processes are looked at while a library's
// communicator layout is still to be inferred: often enough to catch a
// rank between the setup of its predefined communicators and the end of
// its MPI_Init (tens of milliseconds).
const inferEvery = time.Millisecond

// inferFor bounds how long a library's layout is looked for.
const inferFor = 10 * time.Minute

// layoutWatch infers the communicator layouts of the unknown library builds
// collective tracking attached to, from the first process that maps one and
// has set up its predefined communicators, and installs them.
type layoutWatch struct {
	s    *session
	att  *probes.CollAttacher
	mu   *sync.Mutex // guards att
	maps collstate.Maps
	stop chan struct{}
	done chan struct{}
	// more hands the goroutine libraries attached since it started
	more chan []*pendingLib
	// procs caches what was read of each process (the watch's
	// goroutine only)
	procs map[int]*watchedProc
	// unmapped holds, for processes that map no pending library, the
	// program they ran and when that was seen: their mappings are read
	// again after an exec, or after recheckAfter (a dlopen).
	unmapped map[int]unmappedProc
}

// unmappedProc is a process seen mapping no pending library.
type unmappedProc struct {
	exe  string
	seen time.Time
}

// recheckAfter is how long a process that maps no pending library and
// runs the same program is not looked at again.
const recheckAfter = 50 * time.Millisecond

// watchedProc is what the watch keeps of a process between attempts.
type watchedProc struct {
	mem  *procfs.Mem
	live mpiabi.LiveProcess
	// bias of each pending library it maps, by layout index
	bias map[int]uint64
}

// pendingLib is one library whose layout is looked for.
type pendingLib struct {
	lib     probes.CollLibrary
	file    *elf.File
	segs    elfx.Segments
	ci      *mpiabi.CommInference
	prep    time.Duration // the time PrepareCommInference took
	lastErr error
}

// pendingLayouts returns the libraries without a layout, opened.
func pendingLayouts(libs []probes.CollLibrary) ([]*pendingLib, []error) {
	var out []*pendingLib
	var errs []error
	for _, l := range libs {
		if l.Layout.Kind != mpiabi.LayoutUnknown {
			continue
		}
		f, err := elf.Open(l.Target.Path)
		if err != nil {
			errs = append(errs, fmt.Errorf("open %s: %w", l.Display, err))
			continue
		}
		start := time.Now()
		ci, err := mpiabi.PrepareCommInference(f, l.Library.Flavour())
		if err != nil {
			_ = f.Close()
			errs = append(errs, fmt.Errorf("%s: %w", l.Display, err))
			continue
		}
		out = append(out, &pendingLib{lib: l, file: f, segs: elfx.Loads(f.Progs), ci: ci, prep: time.Since(start)})
	}
	return out, errs
}

// inferNow tries the pending libraries on pids once; it returns those
// still pending.
func (w *layoutWatch) inferNow(pending []*pendingLib, pids []int) []*pendingLib {
	for _, pid := range pids {
		if len(pending) == 0 {
			break
		}
		pending = w.tryProcess(pending, pid, pids)
	}
	return pending
}

// tryProcess infers the layouts of the pending libraries pid maps.
// all are the processes to rekey once a layout is found.
func (w *layoutWatch) tryProcess(pending []*pendingLib, pid int, all []int) []*pendingLib {
	fs := w.s.cfg.Proc
	wp := w.procs[pid]
	if wp == nil || len(wp.bias) < len(pending) {
		// Not seen yet, or not mapping every pending library yet (a
		// fork before its exec): read its mappings, unless it ran the
		// same program a moment ago without them.
		exe, _ := fs.Exe(pid)
		if u, ok := w.unmapped[pid]; ok && wp == nil && u.exe == exe && time.Since(u.seen) < recheckAfter {
			return pending
		}
		maps, err := fs.Maps(pid)
		if err != nil {
			w.forget(pid)
			return pending
		}
		biases := map[int]uint64{}
		for _, p := range pending {
			if m, ok := discover.MappingOf(maps, p.lib.Target); ok {
				if bias, ok := p.segs.Bias(m.Start, m.Offset); ok {
					biases[p.lib.LayoutIndex] = bias
				}
			}
		}
		if len(biases) == 0 {
			// Not an MPI process (yet: before its exec).
			w.unmapped[pid] = unmappedProc{exe: exe, seen: time.Now()}
			return pending
		}
		delete(w.unmapped, pid)
		if wp == nil {
			// Opened after the exec that mapped the library: the memory
			// file and the environment are the new program's.
			mem, err := fs.OpenMem(pid)
			if err != nil {
				return pending
			}
			env, _ := fs.Environ(pid)
			wp = &watchedProc{mem: mem, live: discover.LiveProcess(mem.Memory(), env)}
			w.procs[pid] = wp
		}
		wp.bias = biases
	}
	var left []*pendingLib
	for _, p := range pending {
		bias, ok := wp.bias[p.lib.LayoutIndex]
		if !ok {
			left = append(left, p)
			continue
		}
		lp := wp.live
		lp.Bias = bias
		res, err := p.ci.Infer(lp)
		if err == nil {
			w.mu.Lock()
			err = w.att.SetLayout(p.lib.LayoutIndex, res)
			w.mu.Unlock()
		}
		if err != nil {
			p.lastErr = fmt.Errorf("pid %d: %w", pid, err)
			left = append(left, p)
			continue
		}
		// Collectives called before now were keyed by their local
		// handle: key them by what the layout reads, in every process of
		// the library seen so far; then make threads that cached a slot
		// look it up again.
		moved := w.rekey(p, res.Layout, all)
		w.s.bumpCollGen()
		w.s.cfg.Log.Info("communicator layout inferred", "file", p.lib.Display, "build_id", p.lib.BuildID,
			"pid", pid, "took", (p.prep + res.Took).Round(time.Microsecond), "rekeyed", moved, "fields", describeFields(res.Fields))
		_ = p.file.Close()
	}
	return left
}

// rekey keys the communicators that processes of the library (among
// pids) keyed by handle, by what layout l reads.
func (w *layoutWatch) rekey(p *pendingLib, l mpiabi.CommLayout, pids []int) int {
	moved := 0
	for _, pid := range pids {
		var mem procfs.Memory
		var bias uint64
		if wp := w.procs[pid]; wp != nil && len(wp.bias) > 0 {
			b, ok := wp.bias[p.lib.LayoutIndex]
			if !ok {
				continue
			}
			mem, bias = wp.live.Mem, b
		} else {
			maps, err := w.s.cfg.Proc.Maps(pid)
			if err != nil {
				continue
			}
			m, ok := discover.MappingOf(maps, p.lib.Target)
			if !ok {
				continue
			}
			if bias, ok = p.segs.Bias(m.Start, m.Offset); !ok {
				continue
			}
			f, err := w.s.cfg.Proc.OpenMem(pid)
			if err != nil {
				continue
			}
			defer f.Close()
			mem = f.Memory()
		}
		n, err := collstate.Rekey(w.maps, pid, func(h uint64) (uint64, int32, int32, bool) {
			return l.CommIdentity(h, bias, mem)
		})
		moved += n
		if err != nil {
			w.s.cfg.Log.Warn("rekey communicators", "pid", pid, "err", err)
		}
	}
	return moved
}

// forget drops what the watch kept of a process.
func (w *layoutWatch) forget(pid int) {
	if wp := w.procs[pid]; wp != nil {
		_ = wp.mem.Close()
		delete(w.procs, pid)
	}
}

// bumpCollGen moves coll_gen, so that the BPF side looks every
// communicator's slot up again instead of using the one a thread cached.
func (s *session) bumpCollGen() {
	var zero uint32
	var gen uint64
	if err := s.objs.CollGen.Lookup(&zero, &gen); err != nil {
		s.cfg.Log.Warn("read coll_gen", "err", err)
		return
	}
	if err := s.objs.CollGen.Update(&zero, gen+1, 0); err != nil {
		s.cfg.Log.Warn("move coll_gen", "err", err)
	}
}

// describeFields is the one-line account of how the fields were found.
func describeFields(fs []mpiabi.LayoutField) string {
	s := ""
	for i, f := range fs {
		if i > 0 {
			s += ", "
		}
		s += f.Name + " " + string(f.How)
	}
	return s
}

// startLayoutWatch infers the layouts of the unknown builds: at once from
// the processes already running (pids), then, in the background, from
// every traced process until each library has its layout or the session
// ends.
func (s *session) startLayoutWatch(att *probes.CollAttacher, mu *sync.Mutex, maps collstate.Maps, pids []int) *layoutWatch {
	w := &layoutWatch{s: s, att: att, mu: mu, maps: maps, stop: make(chan struct{}), done: make(chan struct{}),
		more: make(chan []*pendingLib), procs: map[int]*watchedProc{}, unmapped: map[int]unmappedProc{}}
	mu.Lock()
	libs := att.Libraries()
	mu.Unlock()
	pending := w.inferNow(w.open(libs), pids)
	if len(pending) == 0 {
		w.forgetAll()
	}
	go w.run(pending)
	return w
}

// open returns the libraries among libs whose layouts are to be
// inferred, saying so, and why any cannot be.
func (w *layoutWatch) open(libs []probes.CollLibrary) []*pendingLib {
	pending, errs := pendingLayouts(libs)
	for _, err := range errs {
		w.s.cfg.Log.Warn("communicator layout not inferred", "err", err)
	}
	for _, p := range pending {
		w.s.cfg.Log.Info("unknown MPI library build: its communicator layout will be inferred from the first process past MPI_Init",
			"file", p.lib.Display, "build_id", p.lib.BuildID)
	}
	return pending
}

// watch has the layouts of libraries attached since the watch started
// inferred too.
func (w *layoutWatch) watch(libs []probes.CollLibrary) {
	pending := w.open(libs)
	if len(pending) == 0 {
		return
	}
	select {
	case w.more <- pending:
	case <-w.done:
		w.giveUp(pending)
	}
}

// run looks for the layouts of pending, and of the libraries watch hands
// it, until the session ends: for inferFor since the last library came.
func (w *layoutWatch) run(pending []*pendingLib) {
	defer close(w.done)
	defer w.forgetAll()
	deadline := time.Now().Add(inferFor)
	tick := time.NewTicker(inferEvery)
	defer tick.Stop()
	for {
		if len(pending) == 0 || time.Now().After(deadline) {
			// Nothing to look for: wait for more, without the ticker.
			w.giveUp(pending)
			pending = nil
			select {
			case <-w.stop:
				return
			case more := <-w.more:
				pending, deadline = more, time.Now().Add(inferFor)
			}
		}
		select {
		case <-w.stop:
			w.giveUp(pending)
			return
		case more := <-w.more:
			pending, deadline = append(pending, more...), time.Now().Add(inferFor)
		case <-tick.C:
		}
		var pids []int
		it := w.s.objs.Traced.Iterate()
		var pid, flags uint32
		live := map[int]bool{}
		for it.Next(&pid, &flags) {
			pids = append(pids, int(pid))
			live[int(pid)] = true
		}
		for p := range w.procs {
			if !live[p] {
				w.forget(p)
			}
		}
		for p := range w.unmapped {
			if !live[p] {
				delete(w.unmapped, p)
			}
		}
		pending = w.inferNow(pending, pids)
	}
}

// forgetAll drops what the watch kept of every process.
func (w *layoutWatch) forgetAll() {
	for pid := range w.procs {
		w.forget(pid)
	}
}

// giveUp says, once per library, why its layout was not inferred.
func (w *layoutWatch) giveUp(pending []*pendingLib) {
	for _, p := range pending {
		reason := "no process using it passed MPI_Init"
		if p.lastErr != nil {
			reason = p.lastErr.Error()
		}
		w.s.cfg.Log.Warn("unknown MPI library build and its communicator layout was not inferred: communicators are keyed by their local handle and cannot be matched across ranks",
			"file", p.lib.Display, "build_id", p.lib.BuildID, "reason", reason)
		_ = p.file.Close()
	}
}

// close stops the watch and waits for it.
func (w *layoutWatch) close() {
	select {
	case <-w.done:
	default:
		close(w.stop)
		<-w.done
	}
}
