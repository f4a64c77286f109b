package probes

import (
	"debug/elf"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/mpiprobe/mpiprobe/bpf"
)

// The Fortran binding libraries trace mode probes in addition to the C ones.
const (
	// OMPIFortran is Open MPI's mpif.h / use mpi binding library, libmpi_mpifh.so.40.
	OMPIFortran Library = "libmpi_mpifh"
	// MPICHFortran is MPICH's Fortran binding library, libmpichfort.so.12.
	MPICHFortran Library = "libmpichfort"
)

// ArgSpec says which arguments (1-based, 0 for none) of an MPI function
// hold what trace mode records.
type ArgSpec struct {
	Peer, Count, Datatype, Root int
}

// DatatypeKind says how to read an element size out of a datatype argument.
type DatatypeKind uint8

// The datatype representations trace mode can read (enum datatype_kind in
// bpf/trace.h).
const (
	// DatatypeUnknown: the size is not read.
	DatatypeUnknown = DatatypeKind(bpf.MpiprobeDatatypeKindDT_UNKNOWN)
	// DatatypeOMPI: a pointer to ompi_datatype_t, whose size_t size sits at
	// +24 in Open MPI 4.1 (checked against MPI_DOUBLE, MPI_INT and a
	// contiguous derived type).
	DatatypeOMPI = DatatypeKind(bpf.MpiprobeDatatypeKindDT_OMPI)
	// DatatypeMPICH: an int handle; builtin types carry their size in bits
	// 8-15, derived types are reported as unknown.
	DatatypeMPICH = DatatypeKind(bpf.MpiprobeDatatypeKindDT_MPICH)
)

// DatatypeKindOf returns how the library's datatypes are read.
func DatatypeKindOf(l Library) DatatypeKind {
	switch l {
	case OMPILibMPI:
		return DatatypeOMPI
	case MPICHLib:
		return DatatypeMPICH
	}
	return DatatypeUnknown
}

// argSpecs lists the functions whose peer, count, datatype or root trace
// mode records, by C prototype (MPI 3.1). Nonblocking and persistent
// variants share the positions of their blocking form.
var argSpecs = func() map[string]ArgSpec {
	m := map[string]ArgSpec{}
	p2p := ArgSpec{Peer: 4, Count: 2, Datatype: 3}
	for _, f := range []string{"Send", "Bsend", "Ssend", "Rsend", "Isend", "Ibsend", "Issend", "Irsend",
		"Send_init", "Bsend_init", "Ssend_init", "Rsend_init", "Recv", "Irecv", "Recv_init",
		"Sendrecv", "Sendrecv_replace", "Mrecv"} {
		m["MPI_"+f] = p2p
	}
	m["MPI_Mrecv"] = ArgSpec{Count: 2, Datatype: 3}
	for _, f := range []string{"Probe", "Iprobe", "Mprobe", "Improbe"} {
		m["MPI_"+f] = ArgSpec{Peer: 1}
	}
	set := func(spec ArgSpec, names ...string) {
		for _, n := range names {
			m["MPI_"+n] = spec
			m["MPI_I"+strings.ToLower(n[:1])+n[1:]] = spec
		}
	}
	set(ArgSpec{Count: 2, Datatype: 3, Root: 4}, "Bcast")
	set(ArgSpec{Count: 3, Datatype: 4, Root: 6}, "Reduce")
	set(ArgSpec{Count: 3, Datatype: 4}, "Allreduce", "Reduce_scatter_block", "Scan", "Exscan")
	set(ArgSpec{Datatype: 4}, "Reduce_scatter")
	set(ArgSpec{Count: 2, Datatype: 3, Root: 7}, "Gather")
	set(ArgSpec{Count: 5, Datatype: 6, Root: 7}, "Scatter")
	set(ArgSpec{Count: 2, Datatype: 3, Root: 8}, "Gatherv")
	set(ArgSpec{Count: 6, Datatype: 7, Root: 8}, "Scatterv")
	set(ArgSpec{Count: 2, Datatype: 3}, "Allgather", "Allgatherv", "Alltoall", "Neighbor_allgather",
		"Neighbor_allgatherv", "Neighbor_alltoall")
	return m
}()

// ArgsOf returns the recorded arguments of an MPI function ("MPI_Send").
func ArgsOf(name string) ArgSpec { return argSpecs[name] }

// maxCalls is the number of call indexes a trace cookie can carry.
const maxCalls = 1 << bpf.MpiprobeTraceCookieTRACE_CALL_BITS

// TraceCookie packs a trace probe's call index, arguments and datatype kind
// into the attach cookie that trace_enter decodes (enum trace_cookie in
// bpf/trace.h).
func TraceCookie(call int, a ArgSpec, kind DatatypeKind) (uint64, error) {
	if call < 0 || call >= maxCalls {
		return 0, fmt.Errorf("call index %d out of range 0..%d", call, maxCalls-1)
	}
	for _, n := range []int{a.Peer, a.Count, a.Datatype, a.Root} {
		if n < 0 || n > MaxArg {
			return 0, fmt.Errorf("argument %d out of range 0..%d", n, MaxArg)
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

// Function is one function of a library file, named once however many
// aliases share its address.
type Function struct {
	// Name is the symbol trace mode attaches to.
	Name string
	// Call is the MPI name reported for it, e.g. "MPI_Send".
	Call string
	// Value is the symbol's address in the file.
	Value uint64
}

// MPIFunctions returns the MPI C API functions a library defines: MPI_X and
// its weak alias PMPI_X share one address and are returned once, named by
// the MPI_ symbol. Probing one address catches calls through either name.
func MPIFunctions(f *elf.File) ([]Function, error) {
	return functions(f, mpiCName, func(old, new string) bool {
		// Prefer the MPI_ name; among equals, the first in sort order.
		return (strings.HasPrefix(old, "PMPI_") && strings.HasPrefix(new, "MPI_")) ||
			(old[0] == new[0] && new < old)
	})
}

// mpiCName returns the MPI_ name of an MPI or PMPI C API symbol.
func mpiCName(sym string) (string, bool) {
	name := strings.TrimPrefix(sym, "P")
	if !strings.HasPrefix(name, "MPI_") || len(name) < 5 {
		return "", false
	}
	// C API functions are MPI_Xxx with a capital after the prefix; Fortran
	// aliases are all upper case (MPI_SEND) or end in _f / _f08.
	rest := name[4:]
	if rest[0] < 'A' || rest[0] > 'Z' || rest == strings.ToUpper(rest) ||
		strings.HasSuffix(rest, "_f") || strings.HasSuffix(rest, "_f08") {
		return "", false
	}
	return name, true
}

// APIName returns the MPI C API name ("MPI_Barrier") of a C or Fortran
// binding symbol: MPI_Barrier, PMPI_Barrier, mpi_barrier_, pmpi_barrier_.
func APIName(sym string) (string, bool) {
	if n, ok := mpiCName(sym); ok {
		return n, true
	}
	return fortranCName(sym)
}

// FortranBindings returns the Fortran binding functions of a Fortran MPI
// library: mpi_send_ and its aliases share one address and are returned
// once, with Call the C API name it implements ("MPI_Send").
func FortranBindings(f *elf.File) ([]Function, error) {
	return functions(f, fortranCName, func(old, new string) bool { return new < old })
}

// fortranCName returns the C API name a Fortran binding symbol implements:
// mpi_comm_rank_ and pmpi_comm_rank_ give MPI_Comm_rank. Other name
// manglings (no or two underscores) and the mpi_f08 bindings are skipped.
func fortranCName(sym string) (string, bool) {
	n := strings.TrimPrefix(sym, "p")
	if !strings.HasPrefix(n, "mpi_") || !strings.HasSuffix(n, "_") || strings.HasSuffix(n, "__") ||
		strings.Contains(n, "_f08") {
		return "", false
	}
	base := strings.TrimSuffix(strings.TrimPrefix(n, "mpi_"), "_")
	if base == "" {
		return "", false
	}
	return "MPI_" + strings.ToUpper(base[:1]) + base[1:], true
}

// functions returns the defined functions whose names call accepts, one per
// address; prefer says whether a new alias names the address better than
// the one kept so far.
func functions(f *elf.File, call func(sym string) (string, bool), prefer func(old, new string) bool) ([]Function, error) {
	syms, err := f.DynamicSymbols()
	if err != nil {
		return nil, fmt.Errorf("read dynamic symbols: %w", err)
	}
	byAddr := map[uint64]Function{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section == elf.SHN_UNDEF || s.Value == 0 {
			continue
		}
		c, ok := call(s.Name)
		if !ok {
			continue
		}
		if old, seen := byAddr[s.Value]; !seen || prefer(old.Name, s.Name) {
			byAddr[s.Value] = Function{Name: s.Name, Call: c, Value: s.Value}
		}
	}
	return sortedFunctions(byAddr), nil
}

func sortedFunctions(byAddr map[uint64]Function) []Function {
	out := make([]Function, 0, len(byAddr))
	for _, fn := range byAddr {
		out = append(out, fn)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	return out
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

// Close detaches every probe.
func (a *TraceAttacher) Close() error { return a.files.close() }

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
	return a.files.add(targets, func(t Target) ([]link.Link, bool, error) {
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
	fns, err := MPIFunctions(f)
	_ = f.Close()
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
	kind := DatatypeKindOf(t.Library)
	names := make([]string, len(fns))
	cookies := make([]uint64, len(fns))
	for i, fn := range fns {
		names[i] = fn.Name
		if cookies[i], err = TraceCookie(a.callIndex(fn.Call), ArgsOf(fn.Call), kind); err != nil {
			return nil, fmt.Errorf("attach %s:%s: %w", t.Display, fn.Name, err)
		}
	}
	return attachSides(ex, t, names, cookies, []side{
		{a.progs.Enter, a.progs.EnterMulti, false},
		{a.progs.Exit, a.progs.ExitMulti, true},
	}, &a.noMulti)
}

// side is one program to attach to every function: at entry or at return.
type side struct {
	single, multi *ebpf.Program
	ret           bool
}

// attachSides attaches each side's program to every named function: with
// one uprobe_multi link per side when the kernel has them, else one link per
// function. *noMulti is set once the kernel refuses uprobe_multi.
func attachSides(ex *link.Executable, t Target, names []string, cookies []uint64, sides []side, noMulti *bool) ([]link.Link, error) {
	var made []link.Link
	multi := !*noMulti
	for _, sd := range sides {
		if multi && sd.multi != nil {
			opts := &link.UprobeMultiOptions{Cookies: cookies}
			var l link.Link
			var err error
			if sd.ret {
				l, err = ex.UretprobeMulti(names, sd.multi, opts)
			} else {
				l, err = ex.UprobeMulti(names, sd.multi, opts)
			}
			if err == nil {
				made = append(made, l)
				continue
			}
			if !errors.Is(err, ebpf.ErrNotSupported) {
				return made, fmt.Errorf("attach %s (%d functions): %w", t.Display, len(names), err)
			}
			*noMulti = true
			multi = false
		}
		for i, name := range names {
			opts := &link.UprobeOptions{Cookie: cookies[i]}
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
	fns, err := FortranBindings(f)
	_ = f.Close()
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
	names := make([]string, len(fns))
	cookies := make([]uint64, len(fns))
	for i, fn := range fns {
		names[i] = fn.Name
		// The cookie names the C call the binding implements; only that
		// call is recorded at the binding's call site.
		if cookies[i], err = TraceCookie(a.callIndex(fn.Call), ArgSpec{}, DatatypeUnknown); err != nil {
			return nil, fmt.Errorf("attach %s:%s: %w", t.Display, fn.Name, err)
		}
	}
	return attachSides(ex, t, names, cookies, []side{{a.progs.Fortran, a.progs.FortranMulti, false}}, &a.noMulti)
}
