package probes

import (
	"debug/elf"
	"fmt"
	"strings"

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

// CommLayoutKind says how a library represents MPI_Comm.
type CommLayoutKind uint32

// The communicator representations (enum comm_layout_kind in
// bpf/collectives.h).
const (
	// LayoutUnknown: the build is not in the table; communicators are
	// keyed by their rank-local handle and flagged as such.
	LayoutUnknown = CommLayoutKind(bpf.MpiprobeCommLayoutKindLAYOUT_UNKNOWN)
	// LayoutOMPI: MPI_Comm is an ompi_communicator_t pointer.
	LayoutOMPI = CommLayoutKind(bpf.MpiprobeCommLayoutKindLAYOUT_OMPI)
	// LayoutMPICH: MPI_Comm is an int handle into MPICH's object tables.
	LayoutMPICH = CommLayoutKind(bpf.MpiprobeCommLayoutKindLAYOUT_MPICH)
)

// CommLayout says where one library build keeps a communicator's
// identity. Offsets are in bytes; addresses are the file's virtual
// addresses. It mirrors struct coll_layout in bpf/collectives.h.
type CommLayout struct {
	Kind CommLayoutKind
	// CIDOff is the context id's offset in the communicator object, read
	// as 32 bits and masked with CIDMask.
	CIDOff, CIDMask uint32
	// RankOff is the offset of the caller's rank in the communicator.
	RankOff uint32
	// SizeOff is the offset of the group size: in the group object that
	// GroupOff points to (Open MPI), or in the communicator (MPICH).
	SizeOff, GroupOff uint32
	// NameOff and NameLen locate the communicator's name (MPI_Comm_set_name).
	NameOff, NameLen uint32
	// ClassAddr (Open MPI) is the address of ompi_communicator_t_class,
	// which every communicator object holds at ClassOff (0, or 8 in a
	// debug build, whose objects start with a magic number).
	ClassAddr uint64
	ClassOff  uint32
	// MPICH: MPIR_Comm_builtin, MPIR_Comm_direct and MPIR_Comm_mem, the
	// size of an MPIR_Comm, and how indirect handles are decoded: the
	// block array pointer at IndBlocksOff in MPIR_Comm_mem, block =
	// (handle >> IndShift) & IndBlockMask, index = handle & IndIndexMask.
	Builtin, Direct, Mem                 uint64
	ObjSize, DirectCount, IndBlocksOff   uint32
	IndShift, IndBlockMask, IndIndexMask uint32
	// MapOff (MPICH ch4) is the offset of the communicator's rank map
	// (dev.ch4.map, an MPIDI_rank_map_t), which turns its ranks into
	// WORLD's; 0 when unknown.
	MapOff uint32
	// VCRTOff (MPICH ch3) is the offset of the communicator's connection
	// table pointer (dev.vcrt); in the table, VCRTSizeOff is its size and
	// VCRTEntriesOff its first MPIDI_VC_t pointer; VCRankOff is the
	// connection's rank in its process group (WORLD's rank for the job's
	// own processes). 0 when unknown.
	VCRTOff, VCRTSizeOff, VCRTEntriesOff, VCRankOff uint32
}

// commLayouts holds the library builds whose communicator layout was
// checked, by GNU build id. See ../shared/docs/mpi-internals.md and
// probes/collectives_test.go.
// debianMPICH is the GNU build id of Debian 12's libmpich.so.12.2.2
// (libmpich12 4.0.2-3), whose layouts the tables hold.
const debianMPICH = "15ff29242f0f6336eb8096d953e03de259b65bb4"

var commLayouts = map[string]CommLayout{
	// Debian 12 Open MPI 4.1.4 (libopenmpi3 4.1.4-3+b1), libmpi.so.40.30.4.
	"2a2f4d8c4f8dc5dcc63f6789a50f3ab49f61e168": {
		Kind: LayoutOMPI, CIDOff: 224, CIDMask: 0xffffffff, RankOff: 228,
		GroupOff: 248, SizeOff: 16, NameOff: 160, NameLen: 64,
		ClassAddr: 0x11d220,
	},
	// Debian 12 MPICH 4.0.2 (libmpich12 4.0.2-3), libmpich.so.12.2.2:
	// MPIR_Comm_builtin[3], MPIR_Comm_direct[8] and MPIR_Comm_mem found
	// through PMPI_Comm_rank's code; MPIR_Comm is 0x368 bytes with the
	// u16 context_id at 0x40, rank at 0x48, local_size at 0x58, name at
	// 0x74. Checked on 2,884 live communicators, direct and indirect.
	// The ch4 rank map (dev.ch4.map) at 0x310: PMPI_Probe tests its mode
	// against MPIDI_RANK_MAP_NONE (cmpl $0xb,0x310(%r15) at 0x15ce90).
	debianMPICH: {
		Kind: LayoutMPICH, CIDOff: 0x40, CIDMask: 0xffff, RankOff: 0x48, SizeOff: 0x58,
		NameOff: 0x74, NameLen: 128, MapOff: 0x310,
		Builtin: 0x27a48c0, Direct: 0x27a2d80, Mem: 0x279ffc0,
		ObjSize: 0x368, DirectCount: 8, IndBlocksOff: 0x10,
		IndShift: 12, IndBlockMask: 0x3fff, IndIndexMask: 0xfff,
	},
}

// CommLayoutOf returns the communicator layout of a library build from the
// table of verified builds; none when the table is turned off (see
// NoVerifiedLayoutsEnv). ResolveCommLayout also infers unknown builds.
func CommLayoutOf(buildID string) (CommLayout, bool) {
	if !verifiedLayoutsOn() {
		return CommLayout{}, false
	}
	l, ok := commLayouts[buildID]
	return l, ok
}

// CollCookie packs a collective probe's attach cookie (enum coll_cookie in
// bpf/collectives.h): the collective's index, the argument holding the
// communicator, the layout index, the argument receiving the request of a
// nonblocking collective (0 for a blocking one), whether requests are
// 4-byte ints (MPICH), and the function's file address.
func CollCookie(coll, commArg, layout, reqArg int, intRequests bool, addr uint64) (uint64, error) {
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

// WaitCookie packs a completion probe's cookie: the request (array)
// argument, the count argument (0: one request) and the request width.
func WaitCookie(reqArg, cntArg int, intRequests bool) (uint64, error) {
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
	// LayoutUnknown when the build is not in the table and no layout was
	// inferred yet (see SetLayout).
	Layout CommLayout
	// Fields says where each field of Layout came from.
	Fields []LayoutField
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
	install func(index int, l CommLayout) error
	libs    []CollLibrary
	files   fileLinks
	noMulti bool
}

// NewCollAttacher returns an attacher for the programs. install writes a
// library's layout at an index of the BPF coll_layouts map (1..15; index 0
// stays the unknown layout).
func NewCollAttacher(progs CollPrograms, install func(index int, l CommLayout) error) *CollAttacher {
	return &CollAttacher{progs: progs, install: install}
}

// Libraries returns the files attached so far.
func (a *CollAttacher) Libraries() []CollLibrary { return append([]CollLibrary(nil), a.libs...) }

// SetLayout installs the layout of the library at a layout index (as
// CollLibrary.LayoutIndex), inferred once a process using it passed
// MPI_Init: the collectives called from then on are keyed by it.
func (a *CollAttacher) SetLayout(index int, r CommLayoutResult) error {
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
	fns, ferr := MPIFunctions(f)
	lib.BuildID, _ = elfx.BuildID(f)
	if l, ok := CommLayoutOf(lib.BuildID); ok {
		lib.Layout, lib.Fields = l, verifiedFields(l)
	} else if t.Library == OMPILibMPI {
		// Known before any rank runs: no collective is keyed by its
		// local handle while a layout is inferred.
		if r, err := OMPICommLayoutFromDWARF(f); err == nil {
			lib.Layout, lib.Fields = r.Layout, r.Fields
		}
	}
	_ = f.Close()
	if ferr != nil {
		return nil, lib, fmt.Errorf("%s: %w", t.Display, ferr)
	}
	lib.Target = t
	if len(a.libs) >= maxLayouts-1 {
		return nil, lib, fmt.Errorf("attach %s: more than %d MPI library builds", t.Display, maxLayouts-1)
	}
	// Every file gets its slot; an unknown build's stays the unknown
	// layout until SetLayout installs an inferred one.
	lib.LayoutIndex = len(a.libs) + 1
	if lib.Layout.Kind != LayoutUnknown {
		if err := a.install(lib.LayoutIndex, lib.Layout); err != nil {
			return nil, lib, fmt.Errorf("attach %s: write communicator layout: %w", t.Display, err)
		}
	}
	byName := map[string]Function{}
	for _, fn := range fns {
		byName[fn.Call] = fn
	}
	var names []string
	var cookies []uint64
	for i, c := range collectives {
		fn, ok := byName[c.Name]
		if !ok {
			continue
		}
		req := 0
		if c.Nonblocking {
			req = c.Comm + 1 // the request follows the communicator
		}
		ck, err := CollCookie(i, c.Comm, lib.LayoutIndex, req, t.Library == MPICHLib, fn.Value)
		if err == nil {
			ck, err = collArgs(ck, c.Root, c.Count)
		}
		if err != nil {
			return nil, lib, fmt.Errorf("attach %s:%s: %w", t.Display, fn.Name, err)
		}
		names = append(names, fn.Name)
		cookies = append(cookies, ck)
	}
	if len(names) == 0 {
		return nil, lib, fmt.Errorf("%s defines no MPI collective: not an MPI library", t.Display)
	}
	lib.Collectives = len(names)
	ex, err := link.OpenExecutable(t.Path)
	if err != nil {
		return nil, lib, fmt.Errorf("open %s: %w", t.Display, err)
	}
	made, err := attachSides(ex, t, names, cookies, []side{
		{a.progs.Enter, a.progs.EnterMulti, false},
		{a.progs.Exit, a.progs.ExitMulti, true},
	}, &a.noMulti)
	if err != nil {
		return made, lib, err
	}
	var wnames []string
	var wcookies []uint64
	for _, c := range completions {
		fn, ok := byName[c.name]
		if !ok {
			continue
		}
		ck, err := WaitCookie(c.reqArg, c.cntArg, t.Library == MPICHLib)
		if err != nil {
			return made, lib, fmt.Errorf("attach %s:%s: %w", t.Display, fn.Name, err)
		}
		wnames = append(wnames, fn.Name)
		wcookies = append(wcookies, ck)
	}
	if len(wnames) > 0 && a.progs.WaitEnter != nil {
		links, err := attachSides(ex, t, wnames, wcookies, []side{
			{a.progs.WaitEnterSingle, a.progs.WaitEnter, false},
			{a.progs.WaitExitSingle, a.progs.WaitExit, true},
		}, &a.noMulti)
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
		l, err := ex.Uprobe(fn.Name, a.progs.CommFree, nil)
		if err != nil {
			return made, lib, fmt.Errorf("attach %s:%s: %w", t.Display, fn.Name, err)
		}
		made = append(made, l)
	}
	return made, lib, nil
}
