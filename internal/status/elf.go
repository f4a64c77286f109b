package status

import (
	"debug/elf"
	"fmt"

	"github.com/mpiprobe/mpiprobe/probes"
)

// mpiFunctionNames returns the symbols of a library's MPI C functions.
func mpiFunctionNames(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fns, err := probes.MPIFunctions(f)
	if err != nil {
		return nil, err
	}
	if len(fns) == 0 {
		return nil, fmt.Errorf("no MPI_ function: not an MPI library")
	}
	names := make([]string, len(fns))
	for i, fn := range fns {
		names[i] = fn.Name
	}
	return names, nil
}

// loadBias returns the runtime address minus the file address for a file
// mapped at start from file offset off: the PT_LOAD segment holding off
// gives the file address.
func loadBias(progs []*elf.Prog, start, off uint64) (uint64, bool) {
	for _, p := range progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		if off >= p.Off && off < p.Off+max(p.Filesz, 1) {
			return start - off - (p.Vaddr - p.Off), true
		}
	}
	return 0, false
}
