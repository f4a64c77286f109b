package probes

import (
	"debug/elf"
	"slices"

	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/status/unwind"
)

// callSites holds, for one library file, the call sites of the catalog's
// call-site probes (elfx.Calls.Sites: in the function, its cold part and the
// clones it calls) and which events reach each one. A clone the compiler
// shares between functions of two events would count one event's calls
// as the other's: such a site is attached for neither. A site two probes
// of one event reach (Open MPI 5.0's mca_pml_ob1_isend and _send share
// one clone of the send path) is attached once.
type callSites struct {
	file      *elf.File
	calls     *elfx.Calls // nil: the file's symbols cannot be read
	exec      elfx.Segments
	outOfLine *elfx.Calls          // calls, also following unnamed local functions (nil: not yet, or no frames)
	found     map[siteKey][]uint64 // virtual addresses
	owners    map[uint64]map[string]bool
	attached  map[uint64]map[uint64]bool // site: cookies attached there
}

// newCallSites finds the sites of the call-site probes of cat in lib's
// file; symbol names the function a probe is in, in this file.
func newCallSites(file *elf.File, cat Catalog, lib Library, symbol func(Probe) string) *callSites {
	calls, _ := elfx.ReadCalls(file)
	c := &callSites{file: file, calls: calls, exec: elfx.Loads(file.Progs).Exec(), found: map[siteKey][]uint64{},
		owners: map[uint64]map[string]bool{}, attached: map[uint64]map[uint64]bool{}}
	for _, e := range cat.Events {
		for _, p := range e.Probes {
			if p.Library != lib || p.CallTo == "" {
				continue
			}
			for _, site := range c.of(symbol(p), p.CallTo, p.OutOfLine) {
				if c.owners[site] == nil {
					c.owners[site] = map[string]bool{}
				}
				c.owners[site][e.ID] = true
			}
		}
	}
	return c
}

// siteKey names one search for call sites.
type siteKey struct {
	fn, callee string
	outOfLine  bool
}

// of returns the virtual addresses of fn's calls to callee, none when they
// cannot all be found. With outOfLine it also looks in the unnamed local
// functions fn calls, known by their frames in .eh_frame: Debian strips
// its libraries, and the out-of-line copies of inline functions (Open MPI
// 5.0's ob1 send path) have no other name there.
func (c *callSites) of(fn, callee string, outOfLine bool) []uint64 {
	k := siteKey{fn, callee, outOfLine}
	if sites, ok := c.found[k]; ok {
		return sites
	}
	calls := c.calls
	if outOfLine && calls != nil {
		if c.outOfLine == nil {
			c.outOfLine = calls
			if frames, err := unwind.LoadFile(c.file); err == nil {
				c.outOfLine = calls.WithFrames(frames.Function)
			}
		}
		calls = c.outOfLine
	}
	var sites []uint64
	if calls != nil {
		var err error
		if sites, err = calls.Sites(fn, callee); err != nil {
			sites = nil
		}
	}
	c.found[k] = sites
	return sites
}

// take returns the file offsets of fn's calls to callee to attach for
// event with cookie, marking them attached, and whether fn calls callee
// in a way the event may count. When it does not, shared names the other
// events whose functions reach fn's calls ("" when fn has none).
func (c *callSites) take(event string, cookie uint64, fn, callee string, outOfLine bool) (offsets []uint64, ok bool, shared []string) {
	for _, site := range c.of(fn, callee, outOfLine) {
		if len(c.owners[site]) > 1 {
			for other := range c.owners[site] {
				if other != event && !slices.Contains(shared, other) {
					shared = append(shared, other)
				}
			}
			continue
		}
		ok = true
		if c.attached[site][cookie] {
			continue
		}
		off, _, inFile := c.exec.Offset(site)
		if !inFile {
			continue
		}
		if c.attached[site] == nil {
			c.attached[site] = map[uint64]bool{}
		}
		c.attached[site][cookie] = true
		offsets = append(offsets, off)
	}
	if ok {
		shared = nil
	}
	slices.Sort(shared)
	return offsets, ok, shared
}
