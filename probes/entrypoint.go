package probes

import (
	"bytes"
	"debug/elf"
	"os"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/x86"
)

// noEntryMoveEnv names the environment variable that, set to 1, keeps
// every probe the attachers put at a function's entry, and every return
// probe, at the entry itself, as before they moved (entryPoint); trace
// mode's entry-only probes still move past the prologue, but not past an
// endbr64, as they did then. It exists for tests and measurements, which
// compare what is recorded, and what it costs, with and without the move.
const noEntryMoveEnv = "MPIPROBE_NO_ENTRY_MOVE"

// endbr64 begins every function of a CET build.
var endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa}

// entryPoint returns how far past a function's entry (code: its code, nil
// when unknown) the attachers put its entry probe and its return probe,
// and, for an entry-only probe, how far the stack pointer has moved there
// (x86.EntryPoint): on the first instruction the kernel emulates, past an
// endbr64 or a prologue instruction it would single-step, where the
// arguments and the stack pointer are still the entry's. A return probe
// goes to the same place: the kernel replaces the return address at the
// stack pointer when the probe there is hit.
func entryPoint(code []byte, entryOnly bool) (off, frame uint64) {
	if os.Getenv(noEntryMoveEnv) == "1" && (!entryOnly || bytes.HasPrefix(code, endbr64)) {
		return 0, 0
	}
	return x86.EntryPoint(code, entryOnly)
}

// symbolCode returns the code of a function symbol of f, nil if it cannot
// be read. f must stay open while it is used.
func symbolCode(f *elf.File, s elf.Symbol) []byte {
	return textReader(f)(mpiabi.Function{Name: s.Name, Value: s.Value, Size: s.Size})
}
