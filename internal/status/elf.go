package status

import (
	"debug/elf"
	"fmt"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
)

// mpiFunctionNames returns the symbols of a library's MPI C functions.
func mpiFunctionNames(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fns, err := mpiabi.MPIFunctions(f)
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
