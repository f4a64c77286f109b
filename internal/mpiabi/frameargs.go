package mpiabi

import (
	"bytes"
	"debug/elf"
	"fmt"

	"github.com/mpiprobe/mpiprobe/internal/layout"
)

// frameArgIndex says which arguments (0-based) of an MPI call are the
// peer rank, the tag and the communicator handle.
type frameArgIndex struct{ peer, tag, comm int }

// frameArgCalls are the blocking calls whose peer MPICH's requests do not
// hold (a send's destination lives with UCX's endpoint) or that have no
// request (a probe), by the C binding's argument order.
var frameArgCalls = map[string]frameArgIndex{
	"MPI_Send":   {3, 4, 5}, // (buf, count, datatype, dest, tag, comm)
	"MPI_Ssend":  {3, 4, 5},
	"MPI_Rsend":  {3, 4, 5},
	"MPI_Bsend":  {3, 4, 5},
	"MPI_Probe":  {0, 1, 2}, // (source, tag, comm, status)
	"MPI_Mprobe": {0, 1, 2}, // (source, tag, comm, message, status)
}

// FrameArgCall reports whether InferMPICHFrameArgs knows call's arguments.
func FrameArgCall(call string) bool {
	_, ok := frameArgCalls[call]
	return ok
}

// InferMPICHFrameArgs finds, for a libmpi build the table does not hold,
// where the function fn (PMPI_Ssend, or the internal_Ssend that MPICH
// 4.1's generated bindings call) implementing call keeps the peer, the
// tag and the communicator handle while the call it made to return to
// retPC (a file address) waits: data flow over its code
// (layout.ArgHomes). The result has Inferred set and, as it holds no
// request slot, HasHandle: a reader checks that the handle names the
// request's communicator, or the probe's.
func InferMPICHFrameArgs(f *elf.File, call, fn string, retPC uint64) (MPICHFrameArgs, error) {
	idx, ok := frameArgCalls[call]
	if !ok {
		return MPICHFrameArgs{}, fmt.Errorf("%s: no frame arguments known", call)
	}
	sym, ok := functionSymbol(f, fn)
	if !ok {
		return MPICHFrameArgs{}, fmt.Errorf("%s: no function symbol with a size", fn)
	}
	code, err := textCode(f)
	if err != nil {
		return MPICHFrameArgs{}, err
	}
	homes, found, err := layout.ArgHomes(code, sym.Value, int(sym.Size), retPC, idx.peer, idx.tag, idx.comm)
	if err != nil {
		return MPICHFrameArgs{}, fmt.Errorf("%s at %#x: %w", fn, retPC, err)
	}
	// A place shared with another argument serves where the values
	// cannot be confused: a peer or tag shared with the communicator
	// handle (an MPICH handle, above 0x40000000, is neither a rank nor a
	// tag the reader accepts). A handle must be its own.
	for i, other := range []int{idx.comm, idx.comm, -1} {
		if found[i] && homes[i].Shared && homes[i].Other != other {
			found[i] = false
		}
	}
	// A send is matched to its request by the tag: it needs all three.
	send := idx.peer == 3
	if !found[0] || !found[2] || (send && !found[1]) {
		return MPICHFrameArgs{}, fmt.Errorf("%s at %#x: the peer, tag or communicator is in no callee-saved register or stack word", fn, retPC)
	}
	return MPICHFrameArgs{
		RetPCs: []uint64{retPC},
		Peer:   frameSlot(homes[0]), Tag: frameSlot(homes[1]), NoTag: !found[1],
		Handle: frameSlot(homes[2]), HasHandle: true,
		Inferred: true, PeerMaybe: homes[0].Maybe,
	}, nil
}

func frameSlot(h layout.Home) FrameSlot { return FrameSlot{Reg: h.Reg, Off: h.Off} }

// functionSymbol finds the function fn in the symbol table, or in the
// dynamic one when the file is stripped.
func functionSymbol(f *elf.File, fn string) (elf.Symbol, bool) {
	for _, read := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, err := read()
		if err != nil {
			continue
		}
		for _, s := range syms {
			if s.Name == fn && elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 && s.Section != elf.SHN_UNDEF {
				return s, true
			}
		}
	}
	return elf.Symbol{}, false
}

// MPICHDevice returns the device an MPICH library was configured with,
// as it names itself (MPII_Version_device: "ch3:nemesis", "ch4:ucx",
// "ch4:ofi"), found in its read-only data; "" when none is there.
func MPICHDevice(f *elf.File) (string, error) {
	sec := f.Section(".rodata")
	if sec == nil {
		return "", nil
	}
	b, err := sec.Data()
	if err != nil {
		return "", fmt.Errorf("read .rodata: %w", err)
	}
	for _, prefix := range []string{"ch3:", "ch4:"} {
		for i := 0; ; {
			j := bytes.Index(b[i:], []byte(prefix))
			if j < 0 {
				break
			}
			start := i + j
			end := start + len(prefix)
			for end < len(b) && b[end] >= 'a' && b[end] <= 'z' {
				end++
			}
			if (start == 0 || b[start-1] == 0) && end > start+len(prefix) && end < len(b) && b[end] == 0 {
				return string(b[start:end]), nil
			}
			i = start + 1
		}
	}
	return "", nil
}
