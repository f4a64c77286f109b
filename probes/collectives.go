package probes

import (
	"debug/elf"
	"fmt"
	"strings"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/elfx"
)

// Collective is an MPI collective that --collectives tracks, by C
// prototype (MPI 3.1).
type Collective struct {
	// Name is the MPI name, "MPI_Allreduce".
	Name string
	// Comm is the argument (1-based) holding the communicator.
	Comm int
	// Nonblocking is set for the I-variants: their call starts the
	// collective, which completes later through its request.
	Nonblocking bool
	// Root and Count are the arguments (1-based, 0: none) holding the
	// root and a count that all ranks pass alike; the count's datatype
	// is the argument after it. Recorded at entry for mismatch checks.
	Root, Count int
}

// collectives is the tracked set; a collective's index here is its id in
// the BPF cookie and counters (at most 64).
var collectives = func() []Collective {
	var out []Collective
	add := func(name string, comm int, args ...int) {
		c := Collective{Name: "MPI_" + name, Comm: comm}
		if len(args) == 2 {
			c.Root, c.Count = args[0], args[1]
		}
		out = append(out, c)
		c.Name, c.Nonblocking = "MPI_I"+strings.ToLower(name[:1])+name[1:], true
		out = append(out, c)
	}
	// args: root, count (the receive count where the send count matters
	// at the root only).
	add("Barrier", 1)
	add("Bcast", 5, 4, 2)
	add("Gather", 8, 7, 2)
	add("Gatherv", 9, 8, 2)
	add("Scatter", 8, 7, 5)
	add("Scatterv", 9, 8, 6)
	add("Allgather", 7, 0, 2)
	add("Allgatherv", 8, 0, 2)
	add("Alltoall", 7, 0, 2)
	add("Alltoallv", 9)
	add("Alltoallw", 9)
	add("Reduce", 7, 6, 3)
	add("Allreduce", 6, 0, 3)
	add("Reduce_scatter", 6)
	add("Reduce_scatter_block", 6, 0, 3)
	add("Scan", 6, 0, 3)
	add("Exscan", 6, 0, 3)
	add("Neighbor_allgather", 7)
	add("Neighbor_allgatherv", 8)
	add("Neighbor_alltoall", 7)
	add("Neighbor_alltoallv", 9)
	add("Neighbor_alltoallw", 9)
	return out
}()

// MaxCollectives is the number of counters a communicator slot has in BPF
// (COLL_MAX in bpf/collectives.h).
const MaxCollectives = 1 << bpf.MpiprobeCollCookieCOLL_INDEX_BITS

// maxArg is the last argument the BPF programs can read (ARG_MAX in
// bpf/common.h).
const maxArg = int(bpf.MpiprobeArgLimitARG_MAX)

// maxLayouts is the number of communicator layouts a collective cookie can
// name, the size of the coll_layouts map.
const maxLayouts = 1 << bpf.MpiprobeCollCookieCOLL_LAYOUT_BITS

// Collectives returns the tracked collectives; the index of one is its id
// in the BPF counters.
func Collectives() []Collective { return append([]Collective(nil), collectives...) }

// collCookie packs a collective probe's attach cookie (enum coll_cookie in
// bpf/collectives.h): the collective's index, the argument holding the
// communicator, the layout index, the argument receiving the request of a
// nonblocking collective (0 for a blocking one), whether requests are
// 4-byte ints (MPICH), and the function's file address.
func collCookie(coll, commArg, layout, reqArg int, intRequests bool, addr uint64) (uint64, error) {
	switch {
	case coll < 0 || coll >= MaxCollectives:
		return 0, fmt.Errorf("collective index %d out of range 0..%d", coll, MaxCollectives-1)
	case commArg < 1 || commArg > maxArg:
		return 0, fmt.Errorf("communicator argument %d out of range 1..%d", commArg, maxArg)
	case layout < 0 || layout >= maxLayouts:
		return 0, fmt.Errorf("layout index %d out of range 0..%d", layout, maxLayouts-1)
	case reqArg < 0 || reqArg > maxArg:
		return 0, fmt.Errorf("request argument %d out of range 0..%d", reqArg, maxArg)
	case addr > 0xffffffff:
		return 0, fmt.Errorf("function address %#x beyond 4 GiB", addr)
	}
	c := uint64(coll)<<bpf.MpiprobeCollCookieCOLL_INDEX_SHIFT |
		uint64(commArg)<<bpf.MpiprobeCollCookieCOLL_COMM_ARG_SHIFT |
		uint64(layout)<<bpf.MpiprobeCollCookieCOLL_LAYOUT_SHIFT |
		uint64(reqArg)<<bpf.MpiprobeCollCookieCOLL_REQ_ARG_SHIFT |
		addr<<bpf.MpiprobeCollCookieCOLL_ADDR_SHIFT
	if intRequests {
		c |= 1 << bpf.MpiprobeCollCookieCOLL_INT_REQ_SHIFT
	}
	return c, nil
}

// collArgs adds to a collective cookie the arguments holding the root and
// the count (0: none; the datatype is the argument after the count).
func collArgs(cookie uint64, rootArg, countArg int) (uint64, error) {
	switch {
	case rootArg < 0 || rootArg > maxArg:
		return 0, fmt.Errorf("root argument %d out of range 0..%d", rootArg, maxArg)
	case countArg < 0 || countArg >= maxArg:
		return 0, fmt.Errorf("count argument %d out of range 0..%d", countArg, maxArg-1)
	}
	return cookie | uint64(rootArg)<<bpf.MpiprobeCollCookieCOLL_ROOT_ARG_SHIFT |
		uint64(countArg)<<bpf.MpiprobeCollCookieCOLL_COUNT_ARG_SHIFT, nil
}

// completion is a call that completes requests: the argument holding the
// request (or the request array) and the one holding the count (0: one).
type completion struct {
	name           string
	reqArg, cntArg int
}

// completions are the calls through which a nonblocking collective's
// request completes.
var completions = []completion{
	{"MPI_Wait", 1, 0}, {"MPI_Test", 1, 0},
	{"MPI_Waitall", 2, 1}, {"MPI_Testall", 2, 1},
	{"MPI_Waitany", 2, 1}, {"MPI_Testany", 2, 1},
	{"MPI_Waitsome", 2, 1}, {"MPI_Testsome", 2, 1},
}

// waitCookie packs a completion probe's cookie: the request (array)
// argument, the count argument (0: one request) and the request width.
func waitCookie(reqArg, cntArg int, intRequests bool) (uint64, error) {
	if reqArg < 1 || reqArg > maxArg || cntArg < 0 || cntArg > maxArg {
		return 0, fmt.Errorf("request argument %d or count argument %d out of range", reqArg, cntArg)
	}
	c := uint64(reqArg)<<bpf.MpiprobeCollCookieCOLL_WAIT_REQ_ARG_SHIFT |
		uint64(cntArg)<<bpf.MpiprobeCollCookieCOLL_WAIT_COUNT_ARG_SHIFT
	if intRequests {
		c |= 1 << bpf.MpiprobeCollCookieCOLL_INT_REQ_SHIFT
	}
	return c, nil
}

// CollPrograms are the BPF programs of collective tracking.
type CollPrograms struct {
	// Enter and Exit run at every collective's entry and return; the Multi
	// variants are the same programs for uprobe_multi links.
	Enter, Exit, EnterMulti, ExitMulti *ebpf.Program
	// CommFree runs at MPI_Comm_free and MPI_Comm_disconnect.
	CommFree *ebpf.Program
	// WaitEnter and WaitExit run around the completion calls (MPI_Wait,
	// MPI_Testall, ...), as uprobe_multi links or single uprobes.
	WaitEnter, WaitExit, WaitEnterSingle, WaitExitSingle *ebpf.Program
}

// CollLibrary is one library file collective tracking attached to.
type CollLibrary struct {
	// Display is the path as the traced process sees it.
	Display string
	// Library is its kind.
	Library Library
	// BuildID is its GNU build id ("" if it has none).
	BuildID string
	// Layout is how its communicators are identified; Kind is
	// mpiabi.LayoutUnknown when the build is not in the table and no layout was
	// inferred yet (see SetLayout).
	Layout mpiabi.CommLayout
	// Fields says where each field of Layout came from.
	Fields []mpiabi.LayoutField
	// LayoutIndex is the layout's index in the BPF coll_layouts map; the
	// slot holds the unknown layout until one is installed.
	LayoutIndex int
	// Target is the file attached to, to open it and to find it in a
	// process's mappings.
	Target Target
	// Collectives is how many collectives were attached.
	Collectives int
}

// CollAttacher attaches collective tracking to MPI C libraries, each file
// once, and owns the links.
type CollAttacher struct {
	progs   CollPrograms
	install func(index int, l mpiabi.CommLayout) error
	libs    []CollLibrary
	files   fileLinks
	noMulti bool
}

// NewCollAttacher returns an attacher for the programs. install writes a
// library's layout at an index of the BPF coll_layouts map (1..15; index 0
// stays the unknown layout).
func NewCollAttacher(progs CollPrograms, install func(index int, l mpiabi.CommLayout) error) *CollAttacher {
	return &CollAttacher{progs: progs, install: install}
}

// Libraries returns the files attached so far.
func (a *CollAttacher) Libraries() []CollLibrary { return append([]CollLibrary(nil), a.libs...) }

// SetLayout installs the layout of the library at a layout index (as
// CollLibrary.LayoutIndex), inferred once a process using it passed
// MPI_Init: the collectives called from then on are keyed by it.
func (a *CollAttacher) SetLayout(index int, r mpiabi.CommLayoutResult) error {
	for i := range a.libs {
		if a.libs[i].LayoutIndex != index {
			continue
		}
		if err := a.install(index, r.Layout); err != nil {
			return fmt.Errorf("write the communicator layout of %s: %w", a.libs[i].Display, err)
		}
		a.libs[i].Layout, a.libs[i].Fields = r.Layout, r.Fields
		return nil
	}
	return fmt.Errorf("no library at layout index %d", index)
}

// Links returns how many links are live.
func (a *CollAttacher) Links() int { return len(a.files.links) }

// Close detaches every probe.
func (a *CollAttacher) Close() error { return a.files.close() }

// Add attaches to the collectives of the MPI C libraries among targets.
// Files already attached and other libraries are skipped. On failure the
// links this call made are closed and the error names the file.
func (a *CollAttacher) Add(targets []Target) error {
	return a.files.add(targets, nil, func(t Target) ([]link.Link, bool, error) {
		if t.Library != OMPILibMPI && t.Library != MPICHLib {
			return nil, false, nil
		}
		links, lib, err := a.attach(t)
		if err == nil {
			// Now: the next file's layout index counts this one.
			a.libs = append(a.libs, lib)
		}
		return links, true, err
	})
}

func (a *CollAttacher) attach(t Target) ([]link.Link, CollLibrary, error) {
	lib := CollLibrary{Display: t.Display, Library: t.Library}
	f, err := elf.Open(t.Path)
	if err != nil {
		return nil, lib, fmt.Errorf("open %s: %w", t.Display, err)
	}
	defer f.Close()
	fns, err := mpiabi.MPIFunctions(f)
	lib.BuildID, _ = elfx.BuildID(f)
	// Known before any rank runs where the build allows: no collective
	// is then keyed by its local handle while a layout is inferred.
	if r, ok := mpiabi.StaticCommLayout(f, t.Library.Flavour(), lib.BuildID); ok {
		lib.Layout, lib.Fields = r.Layout, r.Fields
	}
	if err != nil {
		return nil, lib, fmt.Errorf("%s: %w", t.Display, err)
	}
	lib.Target = t
	if len(a.libs) >= maxLayouts-1 {
		return nil, lib, fmt.Errorf("attach %s: more than %d MPI library builds", t.Display, maxLayouts-1)
	}
	// Every file gets its slot; an unknown build's stays the unknown
	// layout until SetLayout installs an inferred one.
	lib.LayoutIndex = len(a.libs) + 1
	if lib.Layout.Kind != mpiabi.LayoutUnknown {
		if err := a.install(lib.LayoutIndex, lib.Layout); err != nil {
			return nil, lib, fmt.Errorf("attach %s: write communicator layout: %w", t.Display, err)
		}
	}
	byName := map[string]mpiabi.Function{}
	for _, fn := range fns {
		byName[fn.Call] = fn
	}
	// where returns a function's file offset and how far past its entry
	// its probes go (entryPoint).
	text, code := elfx.Loads(f.Progs).Exec(), textReader(f)
	where := func(fn mpiabi.Function) (addr, off uint64, err error) {
		addr, _, ok := text.Offset(fn.Value)
		if !ok {
			return 0, 0, fmt.Errorf("%s:%s: address %#x is in no executable segment", t.Display, fn.Name, fn.Value)
		}
		off, _ = entryPoint(code(fn), false)
		return addr, off, nil
	}
	enter := probeList{single: a.progs.Enter, multi: a.progs.EnterMulti}
	exit := probeList{single: a.progs.Exit, multi: a.progs.ExitMulti, ret: true}
	for i, c := range collectives {
		fn, ok := byName[c.Name]
		if !ok {
			continue
		}
		addr, off, err := where(fn)
		if err != nil {
			return nil, lib, err
		}
		req := 0
		if c.Nonblocking {
			req = c.Comm + 1 // the request follows the communicator
		}
		// The address is the probe's: the entry program takes it from the
		// instruction pointer to find the library's load bias.
		ck, err := collCookie(i, c.Comm, lib.LayoutIndex, req, t.Library == MPICHLib, fn.Value+off)
		if err == nil {
			ck, err = collArgs(ck, c.Root, c.Count)
		}
		if err != nil {
			return nil, lib, fmt.Errorf("attach %s:%s: %w", t.Display, fn.Name, err)
		}
		enter.add(fn.Name, addr, ck, off)
		exit.add(fn.Name, addr, ck, off)
	}
	if len(enter.names) == 0 {
		return nil, lib, fmt.Errorf("%s defines no MPI collective: not an MPI library", t.Display)
	}
	lib.Collectives = len(enter.names)
	ex, err := link.OpenExecutable(t.Path)
	if err != nil {
		return nil, lib, fmt.Errorf("open %s: %w", t.Display, err)
	}
	made, err := attachLists(ex, t, []probeList{enter, exit}, &a.noMulti)
	if err != nil {
		return made, lib, err
	}
	wenter := probeList{single: a.progs.WaitEnterSingle, multi: a.progs.WaitEnter}
	wexit := probeList{single: a.progs.WaitExitSingle, multi: a.progs.WaitExit, ret: true}
	for _, c := range completions {
		fn, ok := byName[c.name]
		if !ok {
			continue
		}
		addr, off, err := where(fn)
		if err != nil {
			return made, lib, err
		}
		ck, err := waitCookie(c.reqArg, c.cntArg, t.Library == MPICHLib)
		if err != nil {
			return made, lib, fmt.Errorf("attach %s:%s: %w", t.Display, fn.Name, err)
		}
		wenter.add(fn.Name, addr, ck, off)
		wexit.add(fn.Name, addr, ck, off)
	}
	if len(wenter.names) > 0 && a.progs.WaitEnter != nil {
		links, err := attachLists(ex, t, []probeList{wenter, wexit}, &a.noMulti)
		made = append(made, links...)
		if err != nil {
			return made, lib, err
		}
	}
	for _, name := range []string{"MPI_Comm_free", "MPI_Comm_disconnect"} {
		fn, ok := byName[name]
		if !ok || a.progs.CommFree == nil {
			continue
		}
		addr, off, err := where(fn)
		if err != nil {
			return made, lib, err
		}
		l, err := ex.Uprobe(fn.Name, a.progs.CommFree, &link.UprobeOptions{Address: addr, Offset: off})
		if err != nil {
			return made, lib, fmt.Errorf("attach %s:%s: %w", t.Display, fn.Name, err)
		}
		made = append(made, l)
	}
	return made, lib, nil
}
