package symbolize

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// Site is a symbolized code address.
type Site struct {
	// Object is the path of the mapped file as the process sees it
	// (procfs Mapping.Path).
	Object string
	// Offset is the address as an ELF virtual address of Object: the
	// address the linker assigned, identical in every process.
	Offset uint64
	// Function is the name of the function containing the address, or ""
	// if no symbol covers it.
	Function string
	// FuncOffset is Offset minus the value of Function's symbol; 0 when
	// Function is "".
	FuncOffset uint64
	// File is the source file of the line containing the address as the
	// DWARF line table records it (joined with its directory and the
	// compilation directory when those are given), or "" without DWARF.
	File string
	// Line is the source line, or 0 when unknown. A File with Line 0 means
	// the compiler attributed the code to no particular line.
	Line int
	// AlsoLines are other lines of File whose call the compiler merged
	// into this one (mergedLines): the call instruction serves Line and
	// each of these, and which one a process came from cannot be told.
	AlsoLines []int
}

// Opener opens the file of a mapping of the process (e.g. via
// /proc/PID/map_files, falling back to /proc/PID/root/PATH). The Resolver
// takes ownership of the returned file and closes it.
type Opener func(m procfs.Mapping) (*os.File, error)

// objKey identifies a mapped file across processes.
type objKey struct {
	major, minor uint32
	inode        uint64
	path         string
}

// Resolver symbolizes addresses; it caches parsed objects by (device,
// inode, path) so many processes running the same binary share one parse,
// and it caches the Site of every (object, address) it resolved, so
// repeated lookups of the same call site cost a map lookup.
//
// A Resolver is safe for concurrent use by several goroutines; calls are
// serialized by an internal lock (the first lookup in an object with large
// DWARF line tables holds it while the tables are read). The caches are
// never trimmed: a Resolver's memory grows with the set of distinct
// objects and call sites it saw, which for mpiprobe's MPI call sites is
// small. Close releases everything.
type Resolver struct {
	mu   sync.Mutex
	objs map[objKey]*object
}

// NewResolver returns an empty Resolver.
func NewResolver() *Resolver {
	return &Resolver{objs: make(map[objKey]*object)}
}

// Resolve symbolizes addr, a code address of the process whose memory map
// is maps (as read from /proc/PID/maps, in ascending order of address;
// other orders work, only slower). open is called, at most once per object
// for the lifetime of the Resolver's cache, to open a mapped file the
// Resolver has not parsed yet.
//
// It fails if no executable mapping contains addr, if that mapping maps no
// file (anonymous memory, [vdso]), if the file cannot be opened or is not
// an ELF file, or if no PT_LOAD segment covers the address. When the error
// comes after the mapping was found, the returned Site still names the
// Object. An object without symbols or DWARF is not an error: its Site
// just has no Function or File.
func (r *Resolver) Resolve(maps []procfs.Mapping, open Opener, addr uint64) (Site, error) {
	m, ok := findMapping(maps, addr)
	if !ok {
		return Site{}, fmt.Errorf("symbolize: address %#x is in no executable mapping", addr)
	}
	if m.Inode == 0 || m.Path == "" {
		what := m.Path
		if what == "" {
			what = "anonymous memory"
		}
		return Site{Object: m.Path}, fmt.Errorf("symbolize: address %#x is in %s, which maps no file", addr, what)
	}
	off := addr - m.Start + m.Offset
	key := objKey{major: m.Major, minor: m.Minor, inode: m.Inode, path: m.Path}

	r.mu.Lock()
	defer r.mu.Unlock()
	o, err := r.object(key, m, open)
	if err != nil {
		return Site{Object: m.Path}, fmt.Errorf("symbolize: address %#x: %w", addr, err)
	}
	va, ok := o.loads.Vaddr(off)
	if !ok {
		return Site{Object: m.Path}, fmt.Errorf("symbolize: address %#x: file offset %#x of %s is in no PT_LOAD segment", addr, off, m.Path)
	}
	if s, ok := o.sites[va]; ok {
		return s, nil
	}
	s := o.site(va)
	s.Object = m.Path
	o.sites[va] = s
	return s, nil
}

// object returns the cached object for key, opening and parsing it with
// open on first use. A failure to open is not cached (another process, or
// a later attempt, may succeed); a file that is not ELF is.
func (r *Resolver) object(key objKey, m procfs.Mapping, open Opener) (*object, error) {
	if r.objs == nil {
		r.objs = make(map[objKey]*object)
	}
	if o, ok := r.objs[key]; ok {
		return o, o.err
	}
	if open == nil {
		return nil, errors.New("no Opener to open " + m.Path)
	}
	f, err := open(m)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", m.Path, err)
	}
	if f == nil {
		return nil, fmt.Errorf("open %s: Opener returned no file", m.Path)
	}
	o := newObject(f)
	if o.err != nil {
		o.err = fmt.Errorf("%s: %w", m.Path, o.err)
	}
	r.objs[key] = o
	return o, o.err
}

// Close closes the files of all cached objects and empties the cache. The
// Resolver may be used again afterwards; it will reopen what it needs.
func (r *Resolver) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for k, o := range r.objs {
		if err := o.close(); err != nil {
			errs = append(errs, err)
		}
		delete(r.objs, k)
	}
	return errors.Join(errs...)
}

// findMapping returns the executable mapping containing addr. maps is
// expected in ascending order, as the kernel prints it; if the binary
// search misses, a linear scan covers unsorted input.
func findMapping(maps []procfs.Mapping, addr uint64) (procfs.Mapping, bool) {
	i := sort.Search(len(maps), func(i int) bool { return maps[i].End > addr })
	if i < len(maps) && maps[i].Start <= addr && addr < maps[i].End && maps[i].Executable() {
		return maps[i], true
	}
	for _, m := range maps {
		if m.Start <= addr && addr < m.End && m.Executable() {
			return m, true
		}
	}
	return procfs.Mapping{}, false
}
