package probes

import (
	"slices"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"

	"debug/elf"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/elfx"
)

// Target is one library file to attach the catalog's probes to.
type Target struct {
	Library Library
	// Path opens the file from mpiprobe's own mount namespace, e.g.
	// /proc/PID/map_files/... or /proc/PID/root/usr/lib/....
	Path string
	// Display is the file's path as the traced process sees it.
	Display string
	// Dev and Inode identify the file; a file is attached once per
	// Library (Open MPI 5.0's libmpi.so is also its ob1 component).
	Dev   uint64
	Inode uint64
	// Root, when set, is the root of the mount namespace the file was
	// found in (/proc/PID/root): separate debug files are also looked up
	// in the system's debug directories below it, so that a library of a
	// container finds the debug file installed in that container.
	Root string
}

// DebugDirs returns where the separate debug file of t is looked up: dirs
// (elfx.DefaultDebugDir when nil), then, for a file of another namespace,
// the default directory inside that namespace.
// Sibling returns a path that opens the file name in the directory where
// the target's process sees the target file: an installation keeps its
// libraries together.
func (t Target) Sibling(name string) string {
	dir := filepath.Dir(t.Display)
	switch {
	case t.Root != "":
		return filepath.Join(t.Root, dir, name)
	case !strings.HasPrefix(t.Path, "/proc/"):
		return filepath.Join(filepath.Dir(t.Path), name)
	}
	return filepath.Join(dir, name)
}

func (t Target) DebugDirs(dirs []string) []string {
	if dirs == nil {
		dirs = []string{elfx.DefaultDebugDir}
	}
	if t.Root == "" {
		return dirs
	}
	return append(slices.Clone(dirs), filepath.Join(t.Root, elfx.DefaultDebugDir))
}

// Programs are the BPF programs the probes run, one per Program kind. The
// tags name them in bpf/mpiprobe.bpf.c, so that a collection spec's
// LoadAndAssign loads exactly these programs and the maps they use.
type Programs struct {
	// Count serves every plain event probe: entry, return and call site.
	Count         *ebpf.Program `ebpf:"count_event"`
	Stash         *ebpf.Program `ebpf:"stash_arg"`
	FreeListGrow  *ebpf.Program `ebpf:"free_list_grow"`
	FreeListAtMax *ebpf.Program `ebpf:"free_list_at_max"`
	MPIError      *ebpf.Program `ebpf:"mpi_error"`
	AsyncEventRet *ebpf.Program `ebpf:"async_event_ret"`
	GateOpen      *ebpf.Program `ebpf:"gate_open"`
	GateCount     *ebpf.Program `ebpf:"gate_count"`
	GateClose     *ebpf.Program `ebpf:"gate_close"`
}

// ProgramsOf returns the probe programs of a loaded collection.
func ProgramsOf(o *bpf.MpiprobePrograms) Programs {
	return Programs{
		Count: o.CountEvent, Stash: o.StashArg, FreeListGrow: o.FreeListGrow,
		FreeListAtMax: o.FreeListAtMax, MPIError: o.MpiError, AsyncEventRet: o.AsyncEventRet,
		GateOpen: o.GateOpen, GateCount: o.GateCount, GateClose: o.GateClose,
	}
}

// Close closes every program that is set.
func (p Programs) Close() {
	for _, prog := range []*ebpf.Program{p.Count, p.Stash, p.FreeListGrow, p.FreeListAtMax, p.MPIError,
		p.AsyncEventRet, p.GateOpen, p.GateCount, p.GateClose} {
		if prog != nil {
			_ = prog.Close()
		}
	}
}

func (p Programs) of(k Program) *ebpf.Program {
	switch k {
	case Stash:
		return p.Stash
	case FreeListGrow:
		return p.FreeListGrow
	case FreeListAtMax:
		return p.FreeListAtMax
	case MPIError:
		return p.MPIError
	case AsyncEventRet:
		return p.AsyncEventRet
	case GateOpen:
		return p.GateOpen
	case GateCount:
		return p.GateCount
	case GateClose:
		return p.GateClose
	}
	return p.Count
}

// FileTarget returns the Target of a library file: hostPath opens it from
// mpiprobe's mount namespace, display is its path as the traced process sees it.
func FileTarget(lib Library, hostPath, display string) (Target, error) {
	var st unix.Stat_t
	if err := unix.Stat(hostPath, &st); err != nil {
		return Target{}, fmt.Errorf("stat %s: %w", display, err)
	}
	return Target{Library: lib, Path: hostPath, Display: display, Dev: st.Dev, Inode: st.Ino}, nil
}

// Status says whether one event could be attached in one file, and why not.
type Status struct {
	Event    string
	Library  Library
	File     string
	Attached bool
	Reason   string
	// Layout says where the struct layout the event reads in this file
	// came from; empty for events that read none.
	Layout string
}

// Attacher attaches the catalog to library files, each (device, inode) once,
// and owns the resulting links.
type Attacher struct {
	progs  Programs
	cat    Catalog
	files  fileLinks
	status []Status
	// OnFile, when set, is given the links made for each newly attached
	// file before Add returns, e.g. to pin them; an error fails Add.
	OnFile func(t Target, links []link.Link) error
	// DebugDirs are searched, in order, for the separate debug file of a
	// library whose struct layout is not in mpiprobe's tables (see
	// resolveFreeListLayout); nil means elfx.DefaultDebugDir.
	DebugDirs []string
}

// Skip marks a file as attached already, e.g. by an earlier agent whose
// pinned links still run.
func (a *Attacher) Skip(dev, ino uint64) { a.files.skipFile(dev, ino) }

// NewAttacher returns an Attacher for the catalog, which must be valid.
func NewAttacher(progs Programs, cat Catalog) (*Attacher, error) {
	if err := cat.Validate(); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return &Attacher{progs: progs, cat: cat}, nil
}

// Status returns the attach status of every (event, file) tried so far.
func (a *Attacher) Status() []Status { return append([]Status(nil), a.status...) }

// Attached returns how many links are live.
func (a *Attacher) Attached() int { return len(a.files.links) }

// Close detaches every probe.
func (a *Attacher) Close() error { return a.files.close() }

// Add attaches the catalog's probes to the targets not attached before.
// A symbol missing from a file makes the events that need it unavailable
// there (see Status) and is not an error. Any other failure is: the links
// this call made are closed again and the error names the symbol and file.
func (a *Attacher) Add(targets []Target) error {
	var status []Status
	err := a.files.add(targets, a.OnFile, func(t Target) ([]link.Link, bool, error) {
		if !a.usesLibrary(t.Library) {
			return nil, false, nil
		}
		links, st, err := a.attachFile(t)
		status = append(status, st...)
		return links, true, err
	})
	if err == nil {
		a.status = append(a.status, status...)
	}
	return err
}

func (a *Attacher) usesLibrary(l Library) bool { return slices.Contains(a.cat.Libraries(), l) }

// attachFile attaches the catalog's probes to one file. On an error it
// returns the links it made until then, for Add to close.
func (a *Attacher) attachFile(t Target) ([]link.Link, []Status, error) {
	var made []link.Link
	var status []Status
	ex, err := link.OpenExecutable(t.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s (%s): %w", t.Display, t.Path, err)
	}
	file, err := elf.Open(t.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", t.Display, err)
	}
	defer file.Close()
	syms, err := elfx.ReadSymbols(file)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", t.Display, err)
	}
	// The free-list layout as the cookie carries it, and where it came
	// from: resolved on first use, once per file.
	freeList := sync.OnceValues(func() (cookieLayout, error) {
		id, _ := elfx.BuildID(file)
		l, src, err := mpiabi.ResolveFreeListLayout(file, id, t.DebugDirs(a.DebugDirs), t.Sibling(mpiabi.LibMPIName))
		if err != nil {
			// The package of the file, in the dpkg database of its root.
			return cookieLayout{}, elfx.WithPackage(err, t.Root, t.Display)
		}
		op, err := l.Operand()
		return cookieLayout{operand: op, note: mpiabi.FreeListStruct + " from " + src}, err
	})
	// resolve finds p's function in this file, under the name a later
	// version gave it if the file lacks the first.
	resolve := func(p Probe) (symbol string, def elf.Symbol, off uint64, found, versioned bool, err error) {
		def, off, found, versioned, err = syms.Definition(p.Symbol)
		if err == nil && !found && p.Renamed != "" {
			def, off, found, versioned, err = syms.Definition(p.Renamed)
			return p.Renamed, def, off, found, versioned, err
		}
		return p.Symbol, def, off, found, versioned, err
	}
	sites := newCallSites(file, a.cat, t.Library, func(p Probe) string {
		symbol, _, _, _, _, _ := resolve(p)
		return symbol
	})
	// attach returns false when the symbol (or the call) is not in this
	// build, and then why when it is for another reason.
	attach := func(p Probe, id int, cookie uint64) (bool, string, error) {
		prog := a.progs.of(p.Program)
		if prog == nil {
			return false, "", fmt.Errorf("attach %s:%s: no BPF program %s loaded", t.Display, p, p.Program)
		}
		symbol, def, off, found, versioned, err := resolve(p)
		if err != nil {
			return false, "", fmt.Errorf("attach %s:%s: %w", t.Display, p, err)
		}
		if !found {
			return false, "", nil
		}
		// Where each link goes, as a file offset: 0 for the function's
		// start found by name, its offset when the name has several
		// versions, or each call site's. A probe at the function's entry,
		// or at its return, goes past an endbr64 or a prologue
		// instruction the kernel would single-step (entryPoint); a call
		// site stays where it is.
		addresses := []uint64{0}
		if versioned {
			addresses[0] = off
		}
		var past uint64
		if p.CallTo == "" {
			past, _ = entryPoint(symbolCode(file, def), false)
		}
		if p.CallTo != "" {
			offsets, ok, shared := sites.take(a.cat.Events[id].ID, cookie, symbol, p.CallTo, p.OutOfLine)
			if !ok && len(shared) > 0 {
				return false, "its calls are in code shared with " + strings.Join(shared, ", "), nil
			}
			if !ok {
				return false, "", nil
			}
			addresses = offsets
		}
		for _, addr := range addresses {
			opts := &link.UprobeOptions{Cookie: cookie, Address: addr, Offset: past}
			var l link.Link
			var err error
			if p.Side == Return {
				l, err = ex.Uretprobe(symbol, prog, opts)
			} else {
				l, err = ex.Uprobe(symbol, prog, opts)
			}
			if errors.Is(err, link.ErrNoSymbol) {
				return false, "", nil
			}
			if err != nil {
				return false, "", fmt.Errorf("attach %s:%s: %w", t.Display, p, err)
			}
			made = append(made, l)
		}
		return true, "", nil
	}

	for id, e := range a.cat.Events {
		st := Status{Event: e.ID, Library: t.Library, File: t.Display}
		var mine []Probe
		layout := false
		for _, p := range e.Probes {
			if p.Library == t.Library {
				mine = append(mine, p)
				layout = layout || p.Program.readsFreeList()
			}
		}
		if len(mine) == 0 {
			continue
		}
		var operand int32
		if layout {
			cl, err := freeList()
			if err != nil {
				// None of the event's probes attach: with a wrong layout
				// it would count garbage.
				st.Reason = err.Error()
				status = append(status, st)
				continue
			}
			operand, st.Layout = cl.operand, cl.note
		}
		var missing, unusable []string
		for _, p := range mine {
			c := p.Cond
			if p.Program.readsFreeList() {
				c.Value = operand
			}
			cookie, err := cookieParam(id, c, p.Param)
			if err != nil {
				return made, nil, fmt.Errorf("event %s: %w", e.ID, err)
			}
			ok, why, err := attach(p, id, cookie)
			switch {
			case err != nil:
				return made, nil, err
			case ok:
				st.Attached = true
			case why != "":
				unusable = append(unusable, p.String()+": "+why)
			default:
				missing = append(missing, p.String())
			}
		}
		var reasons []string
		if len(missing) > 0 {
			reasons = append(reasons, "not in this build: "+strings.Join(missing, ", "))
		}
		st.Reason = strings.Join(append(reasons, unusable...), "; ")
		status = append(status, st)
	}
	return made, status, nil
}

// cookieLayout is a struct layout packed for the cookie's operand bits,
// and a note of where it came from (Status.Layout).
type cookieLayout struct {
	operand int32
	note    string
}
