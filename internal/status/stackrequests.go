package status

import (
	"encoding/binary"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// requestsOnStack returns what a thread in call waits for: the requests in
// flight that the words between sp and the application's frame point to
// (for completion calls under Open MPI also the application's frame,
// where its request array is), innermost first, each once.
func (p *process) requestsOnStack(mem procfs.Memory, sp, ret uint64, call string, comm uint64) []mpiabi.Request {
	if !p.p2p.OK || sp == 0 {
		return nil
	}
	m, ok := p.mapping(sp)
	if !ok {
		return nil
	}
	buf := make([]byte, min(uint64(maxScan), m.End-sp)&^7)
	if mem(sp, buf) != nil {
		return nil
	}
	seen := map[uint64]bool{}
	out := p.requestsIn(buf, ret, call, comm, seen)
	if len(out) == 0 && sp-m.Start >= belowSP {
		// The library may keep the request in a callee-saved register
		// only: the progress functions it calls in a loop push it just
		// below the stack pointer, where it stays between calls.
		below := make([]byte, belowSP)
		if mem(sp-belowSP, below) == nil {
			out = p.requestsIn(below, 0, call, comm, seen)
		}
	}
	return out
}

// belowSP is how many bytes under the stack pointer are read when the
// frames above it show no request.
const belowSP = 1024

// requestsIn returns the requests in flight that the words of buf point
// to, up to the word equal to ret (the application's frame).
func (p *process) requestsIn(buf []byte, ret uint64, call string, comm uint64, seen map[uint64]bool) []mpiabi.Request {
	r := p.p2p
	extra := -1 // words still read after the application's frame starts
	var out []mpiabi.Request
	for i := 0; i+8 <= len(buf) && extra != 0; i += 8 {
		w := binary.LittleEndian.Uint64(buf[i:])
		if extra > 0 {
			extra--
		}
		if ret != 0 && w == ret && extra < 0 {
			if r.Kind() != mpiabi.LayoutOMPI || !completionCalls[call] {
				break
			}
			extra = appFrameWords
		}
		if w == 0 || w%8 != 0 || seen[w] {
			continue
		}
		seen[w] = true
		if wt, ok := r.Request(w, comm); ok {
			out = append(out, wt)
		}
	}
	return out
}

// appFrameWords is how many words of the application's frame are read for
// the request array of MPI_Wait & co.
const appFrameWords = 256
