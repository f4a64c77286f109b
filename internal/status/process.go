package status

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"path"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"

	"github.com/mpiprobe/mpiprobe/internal/discover"
	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/status/unwind"
	"github.com/mpiprobe/mpiprobe/internal/symbolize"
	"github.com/mpiprobe/mpiprobe/probes"
)

// maxFrames bounds an unwound stack.
const maxFrames = 128

// fileID identifies a mapped file.
type fileID struct {
	major, minor uint32
	inode        uint64
}

// tables caches the unwind tables and program headers of files, shared by
// all processes.
type tables struct {
	byFile map[fileID]*fileInfo
	// learnt is what is learnt of the MPI builds (mpiabi.Learnt).
	learnt mpiabi.Learnt
}

type fileInfo struct {
	table *unwind.Table
	segs  elfx.Segments
	build string
	// aliases are the entries of unnamed functions an MPI symbol only
	// jumps to, by address (mpiabi.JumpAliases); API libraries only.
	aliases map[uint64]string
	err     error
}

// process is one rank seen through /proc: its memory map, memory, and the
// layout of its MPI library.
type process struct {
	pid   int
	maps  []procfs.Mapping
	mem   *procfs.Mem
	open  symbolize.Opener
	files *tables
	// comms reads communicator objects; its layout Kind is LayoutUnknown
	// when the MPI library build is not known.
	comms mpiabi.CommReader
	// lib is the MPI C library's path and build id.
	lib, build string
	// commErr says why the communicator layout is not known (comms).
	commErr error
	// ompiName is the process's Open MPI name from its environment
	// (mpiabi.OMPIName), 0 if none.
	ompiName uint64
	// p2p reads point-to-point requests (stackrequests.go, frameargs.go).
	p2p mpiabi.RequestReader
}

// openProcess opens a process discover selected, with the memory map and
// libraries discover read and the environment Collect read (nil if it
// could not be: the layouts are then inferred without it).
func openProcess(fs procfs.FS, dp discover.Proc, env map[string]string, files *tables) (*process, error) {
	pid := dp.PID
	mem, err := fs.OpenMem(pid)
	if err != nil {
		return nil, err
	}
	// A rank in another root (chroot, unshare --root) is shown, and its
	// files opened (symbolize.ProcOpener), by its own paths.
	maps := discover.SeenMaps(fs, pid, dp.Maps)
	p := &process{pid: pid, maps: maps, mem: mem, open: symbolize.ProcOpener(fs, pid), files: files}
	p.comms = mpiabi.CommReader{Mem: p.read}
	p.ompiName = mpiabi.OMPIName(env)
	for _, m := range discover.Discover(maps) {
		if m.Library != probes.OMPILibMPI && m.Library != probes.MPICHLib {
			continue
		}
		mp := m.Mapping
		fi := p.file(mp)
		p.lib, p.build = mp.Path, fi.build
		if bias, ok := p.bias(mp); ok {
			l, err := p.commLayout(env, m, fi.build, bias)
			if err == nil {
				p.comms.Layout, p.comms.Bias = l, bias
			}
			p.commErr = err
		} else {
			p.commErr = fmt.Errorf("the load bias of %s is not found in its mapping", path.Base(mp.Path))
		}
		break
	}
	p.p2p = newRequestReader(p)
	return p, nil
}

func (p *process) close() { _ = p.mem.Close() }

// read reads the process's memory.
func (p *process) read(addr uint64, b []byte) error { return p.mem.Read(addr, b) }

func (p *process) mapping(addr uint64) (procfs.Mapping, bool) {
	for _, m := range p.maps {
		if addr >= m.Start && addr < m.End {
			return m, true
		}
	}
	return procfs.Mapping{}, false
}

// file returns the parsed unwind table and headers of a mapping's file.
func (p *process) file(m procfs.Mapping) *fileInfo {
	id := fileID{m.Major, m.Minor, m.Inode}
	if fi, ok := p.files.byFile[id]; ok {
		return fi
	}
	fi := &fileInfo{}
	p.files.byFile[id] = fi
	f, err := p.open(m)
	if err != nil {
		fi.err = err
		return fi
	}
	defer f.Close()
	ef, err := elf.NewFile(f)
	if err != nil {
		fi.err = err
		return fi
	}
	fi.segs = elfx.Loads(ef.Progs)
	fi.build, _ = elfx.BuildID(ef)
	if apiLibrary(m.Path) {
		fi.aliases, _ = mpiabi.JumpAliases(ef)
	}
	fi.table, fi.err = unwind.Load(f)
	return fi
}

// bias returns a file mapping's load bias.
func (p *process) bias(m procfs.Mapping) (uint64, bool) {
	return p.file(m).segs.Bias(m.Start, m.Offset)
}

// module finds the unwind table for a code address.
func (p *process) module(addr uint64) (unwind.Module, bool) {
	m, ok := p.mapping(addr)
	if !ok || m.Inode == 0 || !m.Executable() {
		return unwind.Module{}, false
	}
	fi := p.file(m)
	if fi.table == nil {
		return unwind.Module{}, false
	}
	b, ok := p.bias(m)
	if !ok {
		return unwind.Module{}, false
	}
	return unwind.Module{Table: fi.table, Bias: b}, true
}

// nameAlias names a frame no symbol covers after the MPI call whose
// symbol only jumps to the function containing it (mpiabi.JumpAliases):
// Debian 12's MPICH blocks in MPI_Waitany's unnamed body. addr is the
// frame's address (a return address less one).
func (p *process) nameAlias(s *symbolize.Site, addr uint64) {
	m, ok := p.mapping(addr)
	if !ok || m.Inode == 0 {
		return
	}
	fi := p.file(m)
	b, ok := p.bias(m)
	if len(fi.aliases) == 0 || fi.table == nil || !ok {
		return
	}
	start, _, ok := fi.table.Function(addr - b)
	if name, found := fi.aliases[start]; ok && found {
		s.Function, s.FuncOffset = name, addr+1-b-start
	}
}

// thread is what one thread is doing, as read from its stack.
type thread struct {
	tid    int
	regs   unwind.Regs
	pcs    []uint64
	frames []symbolize.Site
	in     inMPI
	// comm is the communicator object the call works on, 0 if unknown;
	// votes are the stack words pointing to each candidate.
	comm  uint64
	votes map[uint64]int
	// waits are the point-to-point requests the call waits for (stackrequests.go, frameargs.go).
	waits []mpiabi.Request
	// unwindErr says why the stack could not be followed to its end.
	unwindErr error
}

// patch is a return address a pending uretprobe replaced on a thread's
// stack with its trampoline: the 8 bytes at address at are really value.
type patch struct {
	at, value uint64
}

// threadMemory reads the process's memory as the thread's stack really
// is: with the return addresses uretprobes hid put back.
func (p *process) threadMemory(patches []patch) procfs.Memory {
	if len(patches) == 0 {
		return p.read
	}
	return func(addr uint64, b []byte) error {
		if err := p.read(addr, b); err != nil {
			return err
		}
		end := addr + uint64(len(b))
		for _, pt := range patches {
			if pt.at >= addr && pt.at+8 <= end {
				binary.LittleEndian.PutUint64(b[pt.at-addr:], pt.value)
			}
		}
		return nil
	}
}

// stack unwinds and symbolizes a thread's stack and finds its MPI call.
func (p *process) stack(tid int, regs unwind.Regs, patches []patch, res *symbolize.Resolver) thread {
	t := thread{tid: tid, regs: regs}
	mem := p.threadMemory(patches)
	var fs []unwind.Frame
	fs, t.unwindErr = unwind.Walk(regs, p.module, mem, maxFrames)
	for _, f := range fs {
		t.pcs = append(t.pcs, f.PC)
	}
	if t.unwindErr == nil && len(t.pcs) == 1 {
		// No thread's stack is one frame deep: the registers are from
		// the thread's last entry into the kernel and the stack has
		// moved on since (a thread spinning in a timer leaf whose return
		// address slot was reused). The sample is retried.
		t.unwindErr = errTorn
	}
	for i, pc := range t.pcs {
		addr := pc
		if i == 0 {
			addr++ // Resolve looks up addr-1, made for return addresses
		}
		s, err := res.Resolve(p.maps, p.open, addr)
		if err != nil {
			s = symbolize.Site{}
			if m, ok := p.mapping(pc); ok {
				s.Object = m.Path
			}
		}
		if s.Function == "" {
			p.nameAlias(&s, addr-1)
		}
		t.frames = append(t.frames, s)
	}
	t.in = findCall(t.frames, t.pcs)
	if t.in.Call != "" {
		// The callee-saved registers the call's frames set and no callee
		// has saved yet hold their values too (a communicator kept in
		// rbx across a progress loop whose functions never touch rbx).
		var live []uint64
		for _, reg := range []int{3, 6, 12, 13, 14, 15} {
			if v, ok := unwind.LiveIn(fs, t.in.API, reg, regs); ok {
				live = append(live, v)
			}
		}
		t.comm, t.votes = p.commOnStack(mem, regs.SP, t.in.SitePC, live)
		t.waits = p.requestsOnStack(mem, regs.SP, t.in.SitePC, t.in.Call, t.comm)
		t.waits = p.frameArgs(mem, fs, regs, t.frames, t.in, t.comm, t.waits)
	}
	return t
}

// errTorn says a stack ended after its first frame.
var errTorn = errors.New("unwind: the stack ends after one frame (registers and stack read at different moments)")

// maxScan bounds the stack bytes read to find a communicator.
const maxScan = 64 << 10

// commOnStack finds the communicator object that the words between sp and
// the return address into the application (the MPI library's frames),
// and the live register values of those frames, point to most often.
func (p *process) commOnStack(mem procfs.Memory, sp, ret uint64, live []uint64) (uint64, map[uint64]int) {
	if p.comms.Layout.Kind == mpiabi.LayoutUnknown || sp == 0 {
		return 0, nil
	}
	buf := make([]byte, maxScan)
	m, ok := p.mapping(sp)
	if !ok {
		return 0, nil
	}
	n := min(uint64(len(buf)), m.End-sp)
	buf = buf[:n&^7]
	if mem(sp, buf) != nil {
		return 0, nil
	}
	var words []uint64
	for i := 0; i+8 <= len(buf); i += 8 {
		w := binary.LittleEndian.Uint64(buf[i:])
		if ret != 0 && w == ret {
			break // the application's frame starts here
		}
		words = append(words, w)
	}
	words = append(words, live...)
	votes := countVotes(words, p.comms.IsComm)
	c, _ := bestVote(votes)
	return c, votes
}

// datatypeText renders a datatype handle so that ranks can compare it: an
// address inside a mapped file (Open MPI's predefined datatypes) as the
// file's base name and offset, anything else (MPICH's int handles) in hex.
func (p *process) datatypeText(h uint64) string {
	if h == 0 {
		return ""
	}
	if m, ok := p.mapping(h); ok && m.Path != "" {
		return fmt.Sprintf("datatype %s+%#x", path.Base(m.Path), h-m.Start+m.Offset)
	}
	return fmt.Sprintf("datatype %#x", h)
}

// libName is the base name of the MPI library, for messages.
func (p *process) libName() string { return path.Base(p.lib) }
