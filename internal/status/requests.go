package status

import (
	"cmp"
	"debug/elf"
	"fmt"
	"path"
	"strings"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// newRequestReader finds the libraries that hold a process's
// point-to-point requests and their layouts, for mpiabi to read them.
func newRequestReader(p *process) mpiabi.RequestReader {
	r := mpiabi.RequestReader{Mem: p.read, Comms: p.comms}
	// usable says a library's file was read and its load bias is known.
	usable := func(m procfs.Mapping) bool {
		_, ok := p.bias(m)
		return p.file(m).err == nil && ok
	}
	find := func(prefix string) (procfs.Mapping, bool) {
		for _, m := range p.maps {
			if m.Inode != 0 && strings.HasPrefix(path.Base(m.Path), prefix) && usable(m) {
				return m, true
			}
		}
		return procfs.Mapping{}, false
	}
	switch r.Kind() {
	case mpiabi.LayoutOMPI:
		closeLib := func() {}
		defer func() { closeLib() }()
		openLib := func() *elf.File {
			lib, done, err := p.openLib()
			if err != nil {
				return nil
			}
			closeLib = done
			return lib
		}
		found, builtIn, ok := mpiabi.LocateOB1(p.maps, usable, openLib)
		if builtIn {
			// Open MPI 5.0 builds its components into libmpi.so.
			found, ok = find("libmpi.so")
		}
		if !ok {
			if _, ucx := find("mca_pml_ucx.so"); ucx {
				r.Note = "peer unknown (Open MPI uses pml ucx here; only ob1's requests are read: --mca pml ob1)"
			} else {
				r.Note = "peer unknown (mca_pml_ob1.so is not mapped)"
			}
			return r
		}
		build := p.file(found).build
		bias, _ := p.bias(found)
		l, known := mpiabi.OB1LayoutOf(build)
		if !known {
			var err error
			if l, err = p.ob1Layout(found, build); err != nil {
				// The fix first: a shown line is cut at text.MaxLine.
				r.Note = fmt.Sprintf("peer unknown (%s build %s: its ob1 request layout is in no table and was not inferred; `mpiprobe probes -p %d` lists each field and why: %v)", path.Base(found.Path), shortID(build), p.pid, err)
				return r
			}
		}
		r.OB1, r.OB1Bias, r.OK = l, bias, true
	case mpiabi.LayoutMPICH:
		l, known := mpiabi.MPICHReqLayoutOf(p.build)
		if !known {
			l = mpiabi.MPICHReqHeader()
		}
		ucp, ok := find("libucp.so")
		if !ok {
			dev := p.mpichDevice()
			if !strings.HasPrefix(dev, "ch3:") {
				r.Note = fmt.Sprintf("peer unknown (MPICH %s: only ch4:ucx's and ch3's requests are read)", cmp.Or(dev, "of an unknown device"))
				return r
			}
			// ch3: the requests' match is found by its signature.
			r.Req, r.OK, r.CH3 = l, true, p.files.learnt.CH3For(p.build)
			return r
		}
		build := p.file(ucp).build
		u, known := mpiabi.UCPReqLayoutOf(build)
		if !known {
			// Learnt from the requests themselves (mpiabi/ucx.go).
			r.Req, r.UCPLearn, r.OK = l, p.files.learnt.UCPFor(build), true
			return r
		}
		r.Req, r.UCP, r.OK = l, u, true
	default:
		r.Note = "peer unknown (requests are found through communicators, which are not read: " + p.commUnknown() + ")"
	}
	return r
}

// mpichDevice returns the device the process's MPICH library names
// (mpiabi.MPICHDevice), "" if unknown; read once per build.
func (p *process) mpichDevice() string {
	return p.files.learnt.Device(p.build, func() string {
		var dev string
		p.withLib(func(f *elf.File) { dev, _ = mpiabi.MPICHDevice(f) })
		return dev
	})
}

// openLib opens the ELF file of the process's MPI library, with the
// function that closes it.
func (p *process) openLib() (*elf.File, func(), error) {
	for _, m := range p.maps {
		if m.Inode == 0 || m.Path != p.lib {
			continue
		}
		f, err := p.open(m)
		if err != nil {
			return nil, nil, err
		}
		ef, err := elf.NewFile(f)
		if err != nil {
			_ = f.Close()
			return nil, nil, err
		}
		return ef, func() { _ = f.Close() }, nil
	}
	return nil, nil, fmt.Errorf("%s is not mapped", p.lib)
}

// withLib calls fn with the ELF file of the process's MPI library, if it
// can be opened.
func (p *process) withLib(fn func(*elf.File)) {
	if f, done, err := p.openLib(); err == nil {
		defer done()
		fn(f)
	}
}

// ob1Layout finds the ob1 request layout of a build the table does not
// hold, once per pair of builds for all processes (mpiabi.ResolveOB1Layout):
// from the DWARF Open MPI builds into libmpi.so, else, when the library is
// stripped, inferred from the process's predefined objects and ob1's code.
func (p *process) ob1Layout(ob1 procfs.Mapping, ob1Build string) (mpiabi.OB1Layout, error) {
	return p.files.learnt.OB1Layout(ob1Build+"/"+p.build, func() (mpiabi.OB1Layout, error) { return p.readOB1Layout(ob1) })
}

func (p *process) readOB1Layout(ob1 procfs.Mapping) (mpiabi.OB1Layout, error) {
	var lib procfs.Mapping
	for _, m := range p.maps {
		if m.Inode != 0 && m.Path == p.lib {
			lib = m
			break
		}
	}
	if lib.Inode == 0 {
		return mpiabi.OB1Layout{}, fmt.Errorf("%s is not mapped", p.lib)
	}
	var files [2]*elf.File
	for i, m := range []procfs.Mapping{lib, ob1} {
		f, err := p.open(m)
		if err != nil {
			return mpiabi.OB1Layout{}, err
		}
		defer f.Close()
		if files[i], err = elf.NewFile(f); err != nil {
			return mpiabi.OB1Layout{}, fmt.Errorf("%s: %w", m.Path, err)
		}
	}
	bias, ok := p.bias(lib)
	if !ok {
		return mpiabi.OB1Layout{}, fmt.Errorf("no load bias for %s", p.lib)
	}
	lp := mpiabi.LiveProcess{Mem: p.read, Bias: bias, WorldRank: -1, WorldSize: -1, OMPIName: p.ompiName}
	res, err := mpiabi.ResolveOB1Layout(files[0], files[1], lp, p.comms.Layout)
	return res.Layout, err
}
