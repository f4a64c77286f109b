package status

import (
	"debug/elf"
	"fmt"
	"slices"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/status/unwind"
	"github.com/mpiprobe/mpiprobe/internal/symbolize"
)

// frameArgs completes an MPICH thread's waits with the arguments its API
// function keeps in its frame (mpiabi.MPICHFrameArgs): MPI_Ssend's
// destination, which its request does not hold, and MPI_Probe's source
// and tag, for which there is no request. The slots come from the table
// of checked builds or, for another build, from decoding the function
// (inferredFrameArgs). Only at the return addresses they were found for,
// and only what passes the checks (the frame's request is the one read,
// or the frame's communicator handle names the request's communicator
// or is a communicator; the rank is one of the communicator's) is taken.
func (p *process) frameArgs(mem procfs.Memory, fs []unwind.Frame, regs unwind.Regs, frames []symbolize.Site, in inMPI, comm uint64, ws []mpiabi.Request) []mpiabi.Request {
	r := p.p2p
	if !r.OK || r.Kind() != mpiabi.LayoutMPICH || in.API <= 0 || in.API >= len(fs) || in.API >= len(frames) {
		return ws
	}
	f := fs[in.API]
	m, ok := p.mapping(f.PC - 1)
	if !ok || m.Path != p.lib {
		return ws
	}
	bias, ok := p.bias(m)
	if !ok {
		return ws
	}
	a, ok := mpiabi.MPICHFrameArgsOf(p.build, in.Call)
	if !ok {
		if a, ok = p.inferredFrameArgs(in.Call, frames[in.API].Function, f.PC-bias); !ok {
			return ws
		}
	}
	if !slices.Contains(a.RetPCs, f.PC-bias) {
		return ws
	}
	slot := func(s mpiabi.FrameSlot) (int32, bool) {
		if s.Reg >= 0 {
			v, ok := unwind.ValueAt(fs, in.API, s.Reg, regs, mem)
			return int32(uint32(v)), ok
		}
		v, ok := mem.U32(f.SP + uint64(s.Off))
		return int32(v), ok
	}
	return r.FrameRequests(a, slot, f.SP, in.Call, comm, ws)
}

// inferredFrameArgs decodes, once per build, function and return
// address, where the library's function fn keeps call's arguments
// (mpiabi.InferMPICHFrameArgs) for a build the table does not hold.
func (p *process) inferredFrameArgs(call, fn string, retPC uint64) (mpiabi.MPICHFrameArgs, bool) {
	if fn == "" || !mpiabi.FrameArgCall(call) {
		return mpiabi.MPICHFrameArgs{}, false
	}
	key := fmt.Sprintf("%s/%s/%#x", p.build, fn, retPC)
	return p.files.learnt.FrameArgs(key, func() (mpiabi.MPICHFrameArgs, error) {
		args, err := mpiabi.MPICHFrameArgs{}, fmt.Errorf("%s cannot be read", p.lib)
		p.withLib(func(f *elf.File) { args, err = mpiabi.InferMPICHFrameArgs(f, call, fn, retPC) })
		return args, err
	})
}
