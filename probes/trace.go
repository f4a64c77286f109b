package probes

import (
	"debug/elf"
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
)

// The Fortran binding libraries trace mode probes in addition to the C ones.
const (
	// OMPIFortran is Open MPI's mpif.h / use mpi binding library, libmpi_mpifh.so.40.
	OMPIFortran Library = "libmpi_mpifh"
	// MPICHFortran is MPICH's Fortran binding library, libmpifort.so.12 (libmpichfort.so.12 on Debian).
	MPICHFortran Library = "libmpichfort"
)

// argSpec says which arguments (1-based, 0 for none) of an MPI function
// hold what trace mode records.
type argSpec struct {
	Peer, Count, Datatype, Root int
}

// datatypeKind says how to read an element size out of a datatype argument.
type datatypeKind uint8

// The datatype representations trace mode can read (enum datatype_kind in
// bpf/trace.h).
const (
	// dtUnknown: the size is not read.
	dtUnknown = datatypeKind(bpf.MpiprobeDatatypeKindDT_UNKNOWN)
	// dtOMPI: a pointer to ompi_datatype_t, whose size_t size sits at
	// +24 in Open MPI 4.1 (checked against MPI_DOUBLE, MPI_INT and a
	// contiguous derived type).
	dtOMPI = datatypeKind(bpf.MpiprobeDatatypeKindDT_OMPI)
	// dtMPICH: an int handle; builtin types carry their size in bits
	// 8-15, derived types are reported as unknown.
	dtMPICH = datatypeKind(bpf.MpiprobeDatatypeKindDT_MPICH)
)

// datatypeKindOf returns how the library's datatypes are read.
func datatypeKindOf(l Library) datatypeKind {
	switch l {
	case OMPILibMPI:
		return dtOMPI
	case MPICHLib:
		return dtMPICH
	}
	return dtUnknown
}

// argSpecs lists the functions whose peer, count, datatype or root trace
// mode records, by C prototype (MPI 3.1). Nonblocking and persistent
// variants share the positions of their blocking form.
var argSpecs = func() map[string]argSpec {
	m := map[string]argSpec{}
	p2p := argSpec{Peer: 4, Count: 2, Datatype: 3}
	for _, f := range []string{"Send", "Bsend", "Ssend", "Rsend", "Isend", "Ibsend", "Issend", "Irsend",
		"Send_init", "Bsend_init", "Ssend_init", "Rsend_init", "Recv", "Irecv", "Recv_init",
		"Sendrecv", "Sendrecv_replace", "Mrecv"} {
		m["MPI_"+f] = p2p
	}
	m["MPI_Mrecv"] = argSpec{Count: 2, Datatype: 3}
	for _, f := range []string{"Probe", "Iprobe", "Mprobe", "Improbe"} {
		m["MPI_"+f] = argSpec{Peer: 1}
	}
	set := func(spec argSpec, names ...string) {
		for _, n := range names {
			m["MPI_"+n] = spec
			m["MPI_I"+strings.ToLower(n[:1])+n[1:]] = spec
		}
	}
	set(argSpec{Count: 2, Datatype: 3, Root: 4}, "Bcast")
	set(argSpec{Count: 3, Datatype: 4, Root: 6}, "Reduce")
	set(argSpec{Count: 3, Datatype: 4}, "Allreduce", "Reduce_scatter_block", "Scan", "Exscan")
	set(argSpec{Datatype: 4}, "Reduce_scatter")
	set(argSpec{Count: 2, Datatype: 3, Root: 7}, "Gather")
	set(argSpec{Count: 5, Datatype: 6, Root: 7}, "Scatter")
	set(argSpec{Count: 2, Datatype: 3, Root: 8}, "Gatherv")
	set(argSpec{Count: 6, Datatype: 7, Root: 8}, "Scatterv")
	set(argSpec{Count: 2, Datatype: 3}, "Allgather", "Allgatherv", "Alltoall", "Neighbor_allgather",
		"Neighbor_allgatherv", "Neighbor_alltoall")
	return m
}()

// argsOf returns the recorded arguments of an MPI function ("MPI_Send").
func argsOf(name string) argSpec { return argSpecs[name] }

// maxCalls is the number of call indexes a trace cookie can carry.
const maxCalls = 1 << bpf.MpiprobeTraceCookieTRACE_CALL_BITS

// traceCookie packs a trace probe's call index, arguments and datatype kind
// into the attach cookie that trace_enter decodes (enum trace_cookie in
// bpf/trace.h).
func traceCookie(call int, a argSpec, kind datatypeKind) (uint64, error) {
	if call < 0 || call >= maxCalls {
		return 0, fmt.Errorf("call index %d out of range 0..%d", call, maxCalls-1)
	}
	for _, n := range []int{a.Peer, a.Count, a.Datatype, a.Root} {
		if n < 0 || n > maxArg {
			return 0, fmt.Errorf("argument %d out of range 0..%d", n, maxArg)
		}
	}
	const kindMask = 1<<bpf.MpiprobeTraceCookieTRACE_KIND_BITS - 1
	return uint64(call)<<bpf.MpiprobeTraceCookieTRACE_CALL_SHIFT |
		uint64(a.Peer)<<bpf.MpiprobeTraceCookieTRACE_PEER_SHIFT |
		uint64(a.Count)<<bpf.MpiprobeTraceCookieTRACE_COUNT_SHIFT |
		uint64(a.Datatype)<<bpf.MpiprobeTraceCookieTRACE_DATATYPE_SHIFT |
		uint64(a.Root)<<bpf.MpiprobeTraceCookieTRACE_ROOT_SHIFT |
		uint64(kind&kindMask)<<bpf.MpiprobeTraceCookieTRACE_KIND_SHIFT, nil
}

// TraceCookieOf is the trace cookie of the MPI function name ("" for one
// whose arguments are not recorded) at call index call in a library lib:
// the cookie the trace attacher gives it.
func TraceCookieOf(call int, name string, lib Library) (uint64, error) {
	return traceCookie(call, argsOf(name), datatypeKindOf(lib))
}

// changesDatatypes says whether an MPI function may free or make
// datatypes (MPI_Type_*): trace mode's threads then read the sizes of the
// datatypes they pass again, instead of using the size they keep.
func changesDatatypes(call string) bool { return strings.HasPrefix(call, "MPI_Type_") }

// typesCookie marks a trace cookie as the cookie of a function that
// changesDatatypes.
func typesCookie(cookie uint64) uint64 {
	return cookie | 1<<bpf.MpiprobeTraceCookieTRACE_TYPES_SHIFT
}

// entryOnly says whether trace mode records an MPI function at its entry
// only, as a call of no duration and result 0, without a return probe:
// the local queries and handle conversions, which take a few ns, where a
// return probe would cost a hundred times the call. Their recorded
// arguments, if any, are not read.
func entryOnly(call string) bool {
	switch call {
	case "MPI_Wtime", "MPI_Wtick", "MPI_Comm_rank", "MPI_Comm_size", "MPI_Initialized", "MPI_Finalized",
		"MPI_Query_thread", "MPI_Is_thread_main":
		return true
	}
	return strings.HasSuffix(call, "_c2f") || strings.HasSuffix(call, "_f2c")
}

// entryOnlyCookie marks a trace cookie as an entry-only probe (EntryOnly)
// placed frame bytes into the function's stack frame (x86.EntryPoint), a
// multiple of 8 below 2 KiB.
func entryOnlyCookie(cookie, frame uint64) (uint64, error) {
	const words = 1 << bpf.MpiprobeTraceCookieTRACE_FRAME_BITS
	if frame%8 != 0 || frame/8 >= words {
		return 0, fmt.Errorf("stack frame of %d bytes: not a multiple of 8 below %d", frame, 8*words)
	}
	return cookie | 1<<bpf.MpiprobeTraceCookieTRACE_ENTRY_ONLY_SHIFT | frame/8<<bpf.MpiprobeTraceCookieTRACE_FRAME_SHIFT, nil
}

// TracePrograms are the BPF programs of trace mode.
type TracePrograms struct {
	// Enter and Exit run at every MPI C function's entry and return.
	Enter, Exit *ebpf.Program
	// Fortran runs at every Fortran binding's entry.
	Fortran *ebpf.Program
	// EnterMulti, ExitMulti and FortranMulti are the same programs loaded
	// for uprobe_multi links: one link per library and side, attached and
	// detached in one system call each instead of one per function (a
	// thousand single uprobes take a minute to detach). Without them, or on
	// a kernel without uprobe_multi, single uprobes are used.
	EnterMulti, ExitMulti, FortranMulti *ebpf.Program
}

// TraceAttacher attaches trace mode's probes to library files, each
// (device, inode) once, and owns the links.
type TraceAttacher struct {
	progs TracePrograms
	calls []string
	index map[string]int
	files fileLinks
	// noMulti is set once the kernel refused a uprobe_multi link.
	noMulti bool
}

// NewTraceAttacher returns an attacher for the programs.
func NewTraceAttacher(progs TracePrograms) *TraceAttacher {
	return &TraceAttacher{progs: progs, index: map[string]int{}}
}

// Calls returns the call names by index: the index in a trace event's call field.
func (a *TraceAttacher) Calls() []string { return append([]string(nil), a.calls...) }

// Links returns how many links are live (a uprobe_multi link covers a
// whole library).
func (a *TraceAttacher) Links() int { return len(a.files.links) }

// Close detaches every probe. The links are closed at once: each
// uprobe_multi link waits for an RCU grace period as it is detached.
func (a *TraceAttacher) Close() error { return a.files.closeAtOnce() }

func (a *TraceAttacher) callIndex(name string) int {
	if i, ok := a.index[name]; ok {
		return i
	}
	a.index[name] = len(a.calls)
	a.calls = append(a.calls, name)
	return len(a.calls) - 1
}

// Add attaches to every MPI C function of the C libraries among targets
// and to every binding of the Fortran ones. Files already attached, and
// libraries trace mode does not know, are skipped. On failure the links
// this call made are closed and the error names the function and file.
func (a *TraceAttacher) Add(targets []Target) error {
	return a.files.add(targets, nil, func(t Target) ([]link.Link, bool, error) {
		switch t.Library {
		case OMPILibMPI, MPICHLib:
			links, err := a.attachC(t)
			return links, true, err
		case OMPIFortran, MPICHFortran:
			links, err := a.attachFortran(t)
			return links, true, err
		}
		return nil, false, nil
	})
}

func (a *TraceAttacher) attachC(t Target) ([]link.Link, error) {
	f, err := elf.Open(t.Path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", t.Display, err)
	}
	defer f.Close()
	fns, err := mpiabi.MPIFunctions(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Display, err)
	}
	if len(fns) == 0 {
		return nil, fmt.Errorf("%s defines no MPI_ function: not an MPI library", t.Display)
	}
	ex, err := link.OpenExecutable(t.Path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", t.Display, err)
	}
	kind := datatypeKindOf(t.Library)
	code := textReader(f)
	var enter, exit probeList
	enter.single, enter.multi = a.progs.Enter, a.progs.EnterMulti
	exit.single, exit.multi, exit.ret = a.progs.Exit, a.progs.ExitMulti, true
	text := elfx.Loads(f.Progs).Exec()
	for _, fn := range fns {
		only := entryOnly(fn.Call)
		args := argsOf(fn.Call)
		if only {
			args = argSpec{}
		}
		cookie, err := traceCookie(a.callIndex(fn.Call), args, kind)
		if err != nil {
			return nil, fmt.Errorf("attach %s:%s: %w", t.Display, fn.Name, err)
		}
		if changesDatatypes(fn.Call) {
			cookie = typesCookie(cookie)
		}
		// The file offset, passed on, saves the link package a second
		// parse of the library's symbols (tens of ms for MPICH's 41 MB
		// libmpich).
		addr, _, ok := text.Offset(fn.Value)
		if !ok {
			return nil, fmt.Errorf("%s:%s: address %#x is in no executable segment", t.Display, fn.Name, fn.Value)
		}
		// Both probes past an endbr64 or a prologue instruction the kernel
		// would single-step (entryPoint); an entry-only one also past
		// stack and argument register moves.
		off, frame := entryPoint(code(fn), only)
		if only {
			if cookie, err = entryOnlyCookie(cookie, frame); err != nil {
				return nil, fmt.Errorf("attach %s:%s: %w", t.Display, fn.Name, err)
			}
		} else {
			exit.add(fn.Name, addr, cookie, off)
		}
		enter.add(fn.Name, addr, cookie, off)
	}
	return attachLists(ex, t, []probeList{enter, exit}, &a.noMulti)
}

// textReader returns a function reading a function's code from f (nil if
// it cannot be read). f must stay open while it is used.
func textReader(f *elf.File) func(mpiabi.Function) []byte {
	return func(fn mpiabi.Function) []byte {
		if fn.Size == 0 {
			return nil
		}
		for _, p := range f.Progs {
			if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 || fn.Value < p.Vaddr || fn.Value+fn.Size > p.Vaddr+p.Filesz {
				continue
			}
			b := make([]byte, fn.Size)
			if _, err := p.ReadAt(b, int64(fn.Value-p.Vaddr)); err != nil {
				return nil
			}
			return b
		}
		return nil
	}
}

// probeList is one program to attach to a list of functions: at entry (at
// an offset into each) or at return.
type probeList struct {
	single, multi *ebpf.Program
	ret           bool
	names         []string
	addrs         []uint64 // file offsets of the functions
	cookies       []uint64
	offsets       []uint64
}

// add puts a function, at file offset addr, on the list.
func (sd *probeList) add(name string, addr, cookie, offset uint64) {
	sd.names = append(sd.names, name)
	sd.addrs = append(sd.addrs, addr)
	sd.cookies = append(sd.cookies, cookie)
	sd.offsets = append(sd.offsets, offset)
}

// attachLists attaches each list's program to its functions: with one
// uprobe_multi link per list when the kernel has them, else one link per
// function. *noMulti is set once the kernel refuses uprobe_multi.
func attachLists(ex *link.Executable, t Target, lists []probeList, noMulti *bool) ([]link.Link, error) {
	var made []link.Link
	multi := !*noMulti
	for _, sd := range lists {
		if len(sd.names) == 0 {
			continue
		}
		if multi && sd.multi != nil {
			opts := &link.UprobeMultiOptions{Addresses: sd.addrs, Cookies: sd.cookies, Offsets: sd.offsets}
			var syms []string // by symbol when no addresses are known
			if sd.addrs == nil {
				syms = sd.names
			}
			var l link.Link
			var err error
			if sd.ret {
				l, err = ex.UretprobeMulti(syms, sd.multi, opts)
			} else {
				l, err = ex.UprobeMulti(syms, sd.multi, opts)
			}
			if err == nil {
				made = append(made, l)
				continue
			}
			if !errors.Is(err, ebpf.ErrNotSupported) {
				return made, fmt.Errorf("attach %s (%d functions): %w", t.Display, len(sd.names), err)
			}
			*noMulti = true
			multi = false
		}
		for i, name := range sd.names {
			opts := &link.UprobeOptions{Cookie: sd.cookies[i]}
			if sd.addrs != nil {
				opts.Address, opts.Offset = sd.addrs[i], sd.offsets[i]
			}
			var l link.Link
			var err error
			if sd.ret {
				l, err = ex.Uretprobe(name, sd.single, opts)
			} else {
				l, err = ex.Uprobe(name, sd.single, opts)
			}
			if err != nil {
				return made, fmt.Errorf("attach %s:%s: %w", t.Display, name, err)
			}
			made = append(made, l)
		}
	}
	return made, nil
}

func (a *TraceAttacher) attachFortran(t Target) ([]link.Link, error) {
	f, err := elf.Open(t.Path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", t.Display, err)
	}
	defer f.Close()
	fns, err := mpiabi.FortranBindings(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Display, err)
	}
	ex, err := link.OpenExecutable(t.Path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", t.Display, err)
	}
	if len(fns) == 0 {
		return nil, nil
	}
	// A binding has an entry and a return probe like a C function: the
	// MPI calls it makes in between (handle conversions, the C function
	// it implements) are nested, not the application's.
	var enter, exit probeList
	enter.single, enter.multi = a.progs.Fortran, a.progs.FortranMulti
	exit.single, exit.multi, exit.ret = a.progs.Exit, a.progs.ExitMulti, true
	text := elfx.Loads(f.Progs).Exec()
	code := textReader(f)
	for _, fn := range fns {
		// The cookie names the C call the binding implements, whose
		// arguments and result are the binding's.
		cookie, err := traceCookie(a.callIndex(fn.Call), argSpec{}, dtUnknown)
		if err != nil {
			return nil, fmt.Errorf("attach %s:%s: %w", t.Display, fn.Name, err)
		}
		if changesDatatypes(fn.Call) {
			cookie = typesCookie(cookie) // whatever its C call is
		}
		// The file offset, passed on, saves the link package a second
		// parse of the library's symbols (tens of ms for MPICH's 41 MB
		// libmpich).
		addr, _, ok := text.Offset(fn.Value)
		if !ok {
			return nil, fmt.Errorf("%s:%s: address %#x is in no executable segment", t.Display, fn.Name, fn.Value)
		}
		off, _ := entryPoint(code(fn), false)
		enter.add(fn.Name, addr, cookie, off)
		exit.add(fn.Name, addr, cookie, off)
	}
	return attachLists(ex, t, []probeList{enter, exit}, &a.noMulti)
}

// EntryPoints returns the offset past the entry where the attachers put
// the probes of each named function of an ELF file, entry-only as trace
// mode's local queries or with a return probe (for benchmarks and tools
// placing probes as mpiprobe does).
func EntryPoints(path string, syms []string, entryOnly bool) (map[string]uint64, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	dyn, err := elfx.Defined(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	code := textReader(f)
	out := map[string]uint64{}
	for _, name := range syms {
		d, ok := dyn[name]
		if !ok {
			return nil, fmt.Errorf("%s: no symbol %s", path, name)
		}
		out[name], _ = entryPoint(code(mpiabi.Function{Name: name, Value: d.Value, Size: d.Size}), entryOnly)
	}
	return out, nil
}
