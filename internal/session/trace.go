package session

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/collstate"
	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/kernel"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/symbolize"
	"github.com/mpiprobe/mpiprobe/internal/trace/tracefile"
	"github.com/mpiprobe/mpiprobe/probes"
)

// TraceConfig turns a session into trace mode: every MPI call of the traced
// processes is recorded to a trace file instead of counting unusual events.
type TraceConfig struct {
	// Out receives the trace file.
	Out io.Writer
	// RingBytes is the size of the BPF ring buffer that carries calls to
	// mpiprobe (a power of two; default DefaultRingBytes).
	RingBytes uint32
	// ThreadSlots is how many threads the BPF side can keep the state of
	// in an array indexed by tid, the fast path (a power of two; default
	// TraceThreadSlots of the node's pid_max). A thread whose slot another
	// thread holds keeps its state in task storage, at ~15 ns more per call.
	ThreadSlots uint32
	// Stats is filled in when Run returns.
	Stats TraceStats
}

// DefaultRingBytes is the default trace ring buffer: 1 Mi calls of 64 bytes.
const DefaultRingBytes = 64 << 20

// TraceStats says what a trace recorded.
type TraceStats struct {
	// Ranks is how many processes made MPI calls.
	Ranks int
	// Events is how many calls were written.
	Events uint64
	// Lost is how many calls the BPF side could not hand over (ring buffer full).
	Lost uint64
	// Unresolved is how many distinct call sites could not be symbolized.
	Unresolved int
}

// readEvery is the longest a recorded call waits in the ring buffer.
const readEvery = 100 * time.Millisecond

// traceEventSize is the size of struct trace_event in bpf/mpiprobe.bpf.c.
const traceEventSize = 64

// recorder turns trace ring buffer records into trace file events. It runs
// on its own goroutine; the session talks to it only through start/stop.
type recorder struct {
	rd       *ringbuf.Reader
	w        *tracefile.Writer
	proc     procfs.FS
	host     string
	monoZero uint64 // CLOCK_MONOTONIC ns of the trace's time zero
	log      *slog.Logger
	calls    []string

	ranks    map[uint32]int    // tgid -> rank index in the file
	sites    map[siteKey]int   // (tgid, address) -> site index
	last     [8]lastSite       // the last site of a few processes, by tgid modulo 8
	siteIdx  map[[2]string]int // (object, offset) -> site index
	maps     map[uint32][]procfs.Mapping
	resolver *symbolize.Resolver
	batch    []tracefile.Event
	stats    TraceStats
	tgids    []uint32
	done     chan error

	mu    sync.Mutex // guards noted, written by the session's goroutine
	noted map[uint32]procInfo

	// callsMu guards moreCalls: the call names by index after the session
	// attached to a library found later, whose functions may get new
	// indexes. The session holds it while it attaches, so that a call of
	// a new index waits here for its name instead of being dropped.
	callsMu   sync.Mutex
	moreCalls []string
}

type siteKey struct {
	tgid uint32
	addr uint64
}

// lastSite is a process's rank and last call's site: a loop calls from the
// same few sites, and consecutive calls of a process mostly repeat one, so
// most records are placed without a map lookup (the recorder's CPU is
// taken from the ranks it traces).
type lastSite struct {
	valid      bool
	tgid       uint32
	rank, site int
	addr       uint64
}

func newRecorder(rd *ringbuf.Reader, out io.Writer, hdr tracefile.Header, calls []string, monoZero uint64, proc procfs.FS, log *slog.Logger) (*recorder, error) {
	w, err := tracefile.NewWriter(out, hdr)
	if err != nil {
		return nil, fmt.Errorf("write trace file: %w", err)
	}
	for _, c := range calls {
		if _, err := w.AddCall(c); err != nil {
			return nil, fmt.Errorf("write trace file: %w", err)
		}
	}
	return &recorder{
		rd: rd, w: w, proc: proc, host: hdr.Host, monoZero: monoZero, log: log, calls: calls,
		ranks: map[uint32]int{}, sites: map[siteKey]int{}, siteIdx: map[[2]string]int{},
		maps: map[uint32][]procfs.Mapping{}, resolver: symbolize.NewResolver(),
		done: make(chan error, 1), noted: map[uint32]procInfo{},
	}, nil
}

// run reads the ring buffer until it is closed or, after stop, empty.
func (r *recorder) run() {
	var rec ringbuf.Record
	var err error
	// The BPF side wakes the reader only when the ring fills up; the
	// deadline makes it read what arrived at least every readEvery. Read
	// returns records while there are any, so the deadline is renewed only
	// once the ring is empty.
	r.rd.SetDeadline(time.Now().Add(readEvery))
	for {
		if err = r.rd.ReadInto(&rec); errors.Is(err, os.ErrDeadlineExceeded) {
			r.rd.SetDeadline(time.Now().Add(readEvery))
			continue
		}
		if err != nil {
			break
		}
		if err = r.addRecord(rec.RawSample); err != nil {
			break
		}
	}
	if errors.Is(err, ringbuf.ErrFlushed) || errors.Is(err, ringbuf.ErrClosed) {
		err = nil
	}
	if err == nil {
		err = r.flush()
	}
	r.done <- err
}

// decodeTraceEvent reads a struct trace_event of bpf/mpiprobe.bpf.c into
// e, whose rank and site are left to fill in, and returns its process and
// return address. It writes in place: the recorder decodes every call the
// ranks make, on CPU taken from them.
func decodeTraceEvent(b []byte, e *tracefile.Event) (tgid uint32, addr uint64) {
	ne := binary.NativeEndian
	_ = b[traceEventSize-1]
	e.TID = int32(ne.Uint32(b[4:]))
	e.Enter = int64(ne.Uint64(b[16:]))
	e.Exit = int64(ne.Uint64(b[24:]))
	e.Count = int64(ne.Uint64(b[32:]))
	e.Peer = int32(ne.Uint32(b[40:]))
	e.Root = int32(ne.Uint32(b[44:]))
	e.ElemSize = int32(ne.Uint32(b[48:]))
	e.Ret = int32(ne.Uint32(b[52:]))
	e.Call = int(ne.Uint16(b[56:]))
	return ne.Uint32(b[0:]), ne.Uint64(b[8:])
}

// addRecord adds the calls of a ring buffer record: one struct
// trace_event, or a CPU's stage of bpf.MpiprobeTraceBatchTRACE_BATCH of
// them.
func (r *recorder) addRecord(b []byte) error {
	for ; len(b) >= traceEventSize; b = b[traceEventSize:] {
		if err := r.add(b[:traceEventSize]); err != nil {
			return err
		}
	}
	return nil
}

func (r *recorder) add(b []byte) error {
	// The call is decoded in place into the slot past the batch's end
	// (every field is written: the slot is not zeroed first), and the
	// batch takes it in once it is complete.
	if len(r.batch) == cap(r.batch) {
		r.batch = slices.Grow(r.batch, 1)
	}
	e := &r.batch[:len(r.batch)+1][len(r.batch)]
	tgid, addr := decodeTraceEvent(b, e)
	e.Enter -= int64(r.monoZero)
	e.Exit -= int64(r.monoZero)
	if e.Call >= len(r.calls) {
		if err := r.learnCalls(); err != nil {
			return err
		}
		if e.Call >= len(r.calls) {
			return nil
		}
	}
	l := &r.last[tgid%uint32(len(r.last))]
	if !l.valid || l.tgid != tgid {
		rank, err := r.rank(tgid)
		if err != nil {
			return err
		}
		*l = lastSite{tgid: tgid, rank: rank, site: -1}
	}
	e.Rank = l.rank
	if l.site < 0 || l.addr != addr {
		site, err := r.site(tgid, addr)
		if err != nil {
			return err
		}
		l.valid, l.site, l.addr = true, site, addr
	}
	e.Site = l.site
	r.batch = r.batch[:len(r.batch)+1]
	r.stats.Events++
	if len(r.batch) >= 4096 {
		return r.flush()
	}
	return nil
}

// addStaged adds the calls still staged per CPU (bpf/trace.h's
// trace_stages): the last calls of each CPU, fewer than a batch. A call a
// program stages meanwhile (the probes are still attached) is not read,
// as any call made after stop.
func (r *recorder) addStaged(stages *ebpf.Map) error {
	var per []bpf.MpiprobeTraceStage
	if err := stages.Lookup(uint32(0), &per); err != nil {
		return fmt.Errorf("read staged calls: %w", err)
	}
	var buf []byte
	for _, st := range per {
		for _, ev := range st.Ev[:min(int(st.N), len(st.Ev))] {
			var err error
			if buf, err = binary.Append(buf[:0], binary.NativeEndian, ev); err != nil {
				return fmt.Errorf("read staged calls: %w", err)
			}
			if err := r.add(buf); err != nil {
				return err
			}
		}
	}
	return r.flush()
}

// flush writes the events batched so far.
func (r *recorder) flush() error {
	if len(r.batch) == 0 {
		return nil
	}
	err := r.w.WriteEvents(r.batch)
	r.batch = r.batch[:0]
	return err
}

// procInfo is what the recorder needs to know of a process, read while
// it lives.
type procInfo struct {
	id   identity.Identity
	exe  string
	maps []procfs.Mapping
}

// read reads who a process is and its memory map.
func (r *recorder) read(pid int) procInfo {
	info := procInfo{id: identity.Resolve(pid, r.proc, r.host)}
	info.exe, _ = r.proc.Exe(pid)
	if m, err := r.proc.Maps(pid); err == nil {
		info.maps = m
	}
	return info
}

// note reads a process on its first MPI call, called from the session as
// soon as BPF tells: the recorder may see its calls only after it exited.
func (r *recorder) note(pid int) {
	info := r.read(pid)
	// Open its code files now (once per file for all ranks): after it
	// exits, /proc/PID/map_files is gone.
	open := symbolize.ProcOpener(r.proc, pid)
	for _, m := range info.maps {
		if m.Executable() && strings.HasPrefix(m.Path, "/") {
			_, _ = r.resolver.Resolve(info.maps, open, m.Start+1)
		}
	}
	r.mu.Lock()
	r.noted[uint32(pid)] = info
	r.mu.Unlock()
}

// rank returns the file's rank index of a process, adding it on its first call.
func (r *recorder) rank(tgid uint32) (int, error) {
	if i, ok := r.ranks[tgid]; ok {
		return i, nil
	}
	r.mu.Lock()
	info, ok := r.noted[tgid]
	r.mu.Unlock()
	if !ok {
		info = r.read(int(tgid))
	}
	i, err := r.w.AddRank(tracefile.Rank{PID: int(tgid), Host: info.id.Host, Job: info.id.Job, Rank: info.id.Rank, Exe: info.exe})
	if err != nil {
		return 0, fmt.Errorf("write trace file: %w", err)
	}
	r.ranks[tgid] = i
	r.tgids = append(r.tgids, tgid)
	r.stats.Ranks++
	r.maps[tgid] = info.maps
	return i, nil
}

// site returns the file's site index of a return address in a process.
func (r *recorder) site(tgid uint32, addr uint64) (int, error) {
	k := siteKey{tgid, addr}
	if i, ok := r.sites[k]; ok {
		return i, nil
	}
	s, err := r.resolver.Resolve(r.maps[tgid], symbolize.ProcOpener(r.proc, int(tgid)), addr)
	if err != nil {
		// Code mapped after the first call (dlopen): read the map again.
		if m, merr := r.proc.Maps(int(tgid)); merr == nil {
			r.maps[tgid] = m
			s, err = r.resolver.Resolve(m, symbolize.ProcOpener(r.proc, int(tgid)), addr)
		}
	}
	if err != nil {
		r.log.Debug("call site not symbolized", "pid", tgid, "addr", fmt.Sprintf("%#x", addr), "err", err)
		r.stats.Unresolved++
		s = symbolize.Site{Object: "?", Offset: addr}
	}
	key := [2]string{s.Object, strconv.FormatUint(s.Offset, 16)}
	i, ok := r.siteIdx[key]
	if !ok {
		i, err = r.w.AddSite(tracefile.Site{Object: s.Object, Offset: s.Offset, Function: s.Function,
			FuncOffset: s.FuncOffset, File: s.File, Line: s.Line})
		if err != nil {
			return 0, fmt.Errorf("write trace file: %w", err)
		}
		r.siteIdx[key] = i
	}
	r.sites[k] = i
	return i, nil
}

// stop lets the reader drain what the ring buffer holds, adds what the
// CPUs' stages hold, then closes the file with each rank's losses and end.
func (r *recorder) stop(lost, stages *ebpf.Map, end func(pid int) string) (TraceStats, error) {
	if ferr := r.rd.Flush(); ferr != nil {
		_ = r.rd.Close() // unblocks the reader; what it held is lost
		r.log.Warn("trace ring buffer could not be drained", "err", ferr)
	}
	err := <-r.done
	if err == nil {
		err = r.addStaged(stages)
	}
	var ends []tracefile.RankEnd
	for _, tgid := range r.tgids {
		var n uint64
		_ = lost.Lookup(tgid, &n)
		r.stats.Lost += n
		ends = append(ends, tracefile.RankEnd{Rank: r.ranks[tgid], Lost: n, End: end(int(tgid))})
	}
	// Processes that lost every call still count as lost calls.
	var k uint32
	var n uint64
	it := lost.Iterate()
	for it.Next(&k, &n) {
		if _, ok := r.ranks[k]; !ok {
			r.stats.Lost += n
		}
	}
	_ = r.resolver.Close()
	if cerr := r.w.Close(ends); err == nil {
		err = cerr
	}
	return r.stats, err
}

// load loads the BPF objects, sizing the trace ring buffer and the
// collective-tracking maps for the mode.
func (s *session) load() error {
	size := uint32(4096) // counting mode never writes to it
	if s.cfg.Trace != nil {
		size = s.cfg.Trace.RingBytes
		if size == 0 {
			size = DefaultRingBytes
		}
		if size < 4096 || size&(size-1) != 0 {
			return fmt.Errorf("trace ring buffer of %d bytes: give a power of two of at least 4096", size)
		}
	}
	sizes := map[string]uint32{"trace_events": size}
	if s.cfg.Collectives {
		slots := s.cfg.CommSlots
		if slots <= 0 {
			slots = DefaultCommSlots
		}
		maps.Copy(sizes, collstate.Sizes(slots))
	}
	if s.cfg.Trace != nil {
		slots := s.cfg.Trace.ThreadSlots
		if slots == 0 {
			pidMax, err := s.cfg.Proc.PidMax()
			if err != nil {
				s.cfg.Log.Debug("pid_max unknown: the most trace thread slots", "slots", MaxThreadSlots, "err", err)
			}
			slots = TraceThreadSlots(pidMax)
		}
		if err := CheckThreadSlots(slots); err != nil {
			return fmt.Errorf("%d trace thread slots: %w", slots, err)
		}
		opts := TraceOptions(size, slots)
		maps.Copy(opts.MaxEntries, sizes)
		return s.loadTrace(opts)
	}
	return kernel.Load(&s.objs, kernel.Options{MaxEntries: sizes})
}

// traceObjects are the BPF programs and maps a trace session uses: loading
// only them, not the counting and collective programs, saves a third of
// the load time (the verifier's work on programs never attached).
type traceObjects struct {
	OnFork                 *ebpf.Program `ebpf:"on_fork"`
	OnExec                 *ebpf.Program `ebpf:"on_exec"`
	OnExit                 *ebpf.Program `ebpf:"on_exit"`
	TraceThreadExit        *ebpf.Program `ebpf:"trace_thread_exit"`
	TraceEnter             *ebpf.Program `ebpf:"trace_enter"`
	TraceEnterMulti        *ebpf.Program `ebpf:"trace_enter_multi"`
	TraceExit              *ebpf.Program `ebpf:"trace_exit"`
	TraceExitMulti         *ebpf.Program `ebpf:"trace_exit_multi"`
	TraceFortranEnter      *ebpf.Program `ebpf:"trace_fortran_enter"`
	TraceFortranEnterMulti *ebpf.Program `ebpf:"trace_fortran_enter_multi"`
	Traced                 *ebpf.Map     `ebpf:"traced"`
	Counts                 *ebpf.Map     `ebpf:"counts"`
	Drops                  *ebpf.Map     `ebpf:"drops"`
	ProcEvents             *ebpf.Map     `ebpf:"proc_events"`
	TraceEvents            *ebpf.Map     `ebpf:"trace_events"`
	TraceLost              *ebpf.Map     `ebpf:"trace_lost"`
	TraceStages            *ebpf.Map     `ebpf:"trace_stages"`
}

// TraceOptions are the map sizes and BPF variables of trace mode for a
// ring buffer of ringBytes, the reader woken when it becomes an eighth
// full, and threadSlots thread-state slots (a power of two).
func TraceOptions(ringBytes, threadSlots uint32) kernel.Options {
	return kernel.Options{
		MaxEntries: map[string]uint32{"trace_events": ringBytes, "trace_owned": threadSlots},
		Variables:  map[string]any{"trace_wake_mark": uint64(ringBytes / 8), "trace_slot_mask": threadSlots - 1},
	}
}

// MaxThreadSlots bounds TraceThreadSlots: 65536 slots take 6 MiB.
const MaxThreadSlots = 1 << 16

// CheckThreadSlots says why n thread-state slots cannot be used, or nil: n
// must be a power of two up to MaxThreadSlots (0 meaning the default).
func CheckThreadSlots(n uint32) error {
	if n&(n-1) != 0 || n > MaxThreadSlots {
		return fmt.Errorf("give a power of two up to %d", MaxThreadSlots)
	}
	return nil
}

// TraceThreadSlots is how many thread-state slots trace mode uses on a
// node whose pid_max (/proc/sys/kernel/pid_max) is pidMax: one per tid
// (the power of two at or above pidMax) up to MaxThreadSlots, beyond which
// threads whose tids are equal modulo the slots share one, the first to
// take it keeping it. pidMax 0 (unknown) gives MaxThreadSlots.
func TraceThreadSlots(pidMax int) uint32 {
	if pidMax <= 0 || pidMax > MaxThreadSlots {
		return MaxThreadSlots
	}
	n := uint32(1)
	for int(n) < pidMax {
		n <<= 1
	}
	return n
}

// loadTrace loads the traceObjects into the session's objects, whose
// other fields stay nil.
func (s *session) loadTrace(opts kernel.Options) error {
	var o traceObjects
	if err := kernel.Load(&o, opts); err != nil {
		return err
	}
	p, m := &s.objs.MpiprobePrograms, &s.objs.MpiprobeMaps
	p.OnFork, p.OnExec, p.OnExit, p.TraceThreadExit = o.OnFork, o.OnExec, o.OnExit, o.TraceThreadExit
	p.TraceEnter, p.TraceEnterMulti, p.TraceExit, p.TraceExitMulti = o.TraceEnter, o.TraceEnterMulti, o.TraceExit, o.TraceExitMulti
	p.TraceFortranEnter, p.TraceFortranEnterMulti = o.TraceFortranEnter, o.TraceFortranEnterMulti
	m.Traced, m.Counts, m.Drops, m.ProcEvents, m.TraceEvents, m.TraceLost = o.Traced, o.Counts, o.Drops, o.ProcEvents, o.TraceEvents, o.TraceLost
	m.TraceStages = o.TraceStages
	return nil
}

// learnCalls takes in the call names the session's attacher numbered
// since the recorder started (moreCalls).
func (r *recorder) learnCalls() error {
	r.callsMu.Lock()
	defer r.callsMu.Unlock()
	for len(r.calls) < len(r.moreCalls) {
		c := r.moreCalls[len(r.calls)]
		if _, err := r.w.AddCall(c); err != nil {
			return fmt.Errorf("write trace file: %w", err)
		}
		r.calls = append(r.calls, c)
	}
	return nil
}

// startTrace attaches trace mode's probes to the targets and starts the
// recorder. The returned function detaches and stops everything.
func (s *session) startTrace(targets []probes.Target) (*recorder, *probes.TraceAttacher, func(), error) {
	att := probes.NewTraceAttacher(probes.TracePrograms{
		Enter: s.objs.TraceEnter, Exit: s.objs.TraceExit, Fortran: s.objs.TraceFortranEnter,
		EnterMulti: s.objs.TraceEnterMulti, ExitMulti: s.objs.TraceExitMulti, FortranMulti: s.objs.TraceFortranEnterMulti,
	})
	if err := s.attachLive("attach trace probes", att.Add); err != nil {
		_ = att.Close()
		return nil, nil, nil, err
	}
	// A command's ranks may map their MPI only later, from where they run
	// (follower): then nothing attached yet is no error.
	if att.Links() == 0 && len(s.cfg.Command) == 0 {
		_ = att.Close()
		return nil, nil, nil, fmt.Errorf("no MPI C library to trace in %s: trace mode knows Open MPI's libmpi.so.40 and MPICH's libmpich.so.12", describeTargets(targets))
	}
	rd, err := ringbuf.NewReader(s.objs.TraceEvents)
	if err != nil {
		_ = att.Close()
		return nil, nil, nil, fmt.Errorf("open trace ring buffer: %w", err)
	}
	mono, err := kernel.MonotonicNow()
	if err != nil {
		_ = rd.Close()
		_ = att.Close()
		return nil, nil, nil, err
	}
	hdr := tracefile.Header{Host: s.cfg.Host, Start: s.tb.Wall(mono), Command: s.describeCommand()}
	rec, err := newRecorder(rd, s.cfg.Trace.Out, hdr, att.Calls(), mono, s.cfg.Proc, s.cfg.Log)
	if err != nil {
		_ = rd.Close()
		_ = att.Close()
		return nil, nil, nil, err
	}
	go rec.run()
	return rec, att, func() {
		_ = rd.Close()
		_ = att.Close()
	}, nil
}

// traceAdd is the trace attacher's Add for libraries found after the
// recorder started: the recorder learns the names of the calls it numbers.
func traceAdd(att *probes.TraceAttacher, rec *recorder) func([]probes.Target) error {
	return func(t []probes.Target) error {
		rec.callsMu.Lock()
		defer rec.callsMu.Unlock()
		err := att.Add(t)
		rec.moreCalls = att.Calls()
		return err
	}
}

// describeCommand says what a session traces, for the trace file's header.
func (s *session) describeCommand() []string {
	if len(s.cfg.Command) > 0 {
		return slices.Clone(s.cfg.Command)
	}
	var out []string
	for _, pid := range s.cfg.PIDs {
		out = append(out, "-p", strconv.Itoa(pid))
	}
	if s.cfg.Job != "" {
		out = append(out, "--job", s.cfg.Job)
	}
	return out
}

// endOf says how a process ended, "" while it runs or if it is unknown.
func (s *session) endOf(pid int) string {
	p, ok := s.procs[pid]
	if !ok || p.End.Kind == agg.Running {
		return ""
	}
	return p.End.String()
}
