package mpiabi

import (
	"debug/elf"
	"fmt"
	"sort"
	"strings"

	"github.com/mpiprobe/mpiprobe/internal/x86"
	"golang.org/x/arch/x86/x86asm"
)

// Function is one function of a library file, named once however many
// aliases share its address.
type Function struct {
	// Name is the symbol trace mode attaches to.
	Name string
	// Call is the MPI name reported for it, e.g. "MPI_Send".
	Call string
	// Value is the symbol's address in the file.
	Value uint64
	// Size is the symbol's size in bytes (0 if the symbol does not say).
	Size uint64
}

// MPIFunctions returns the MPI C API functions a library defines: MPI_X and
// its weak alias PMPI_X share one address and are returned once, named by
// the MPI_ symbol. Probing one address catches calls through either name.
func MPIFunctions(f *elf.File) ([]Function, error) {
	return functions(f, mpiCName, func(old, new string) bool {
		// Prefer the MPI_ name; among equals, the first in sort order.
		return (strings.HasPrefix(old, "PMPI_") && strings.HasPrefix(new, "MPI_")) ||
			(old[0] == new[0] && new < old)
	})
}

// mpiCName returns the MPI_ name of an MPI or PMPI C API symbol.
func mpiCName(sym string) (string, bool) {
	name := strings.TrimPrefix(sym, "P")
	if !strings.HasPrefix(name, "MPI_") || len(name) < 5 {
		return "", false
	}
	// C API functions are MPI_Xxx with a capital after the prefix; Fortran
	// aliases are all upper case (MPI_SEND) or end in _f / _f08.
	rest := name[4:]
	if rest[0] < 'A' || rest[0] > 'Z' || rest == strings.ToUpper(rest) ||
		strings.HasSuffix(rest, "_f") || strings.HasSuffix(rest, "_f08") {
		return "", false
	}
	return name, true
}

// APIName returns the MPI C API name ("MPI_Barrier") of a C or Fortran
// binding symbol: MPI_Barrier, PMPI_Barrier, mpi_barrier_, pmpi_barrier_.
func APIName(sym string) (string, bool) {
	if n, ok := mpiCName(sym); ok {
		return n, true
	}
	return fortranCName(sym)
}

// FortranBindings returns the Fortran binding functions of a Fortran MPI
// library: mpi_send_ and its aliases share one address and are returned
// once, with Call the C API name it implements ("MPI_Send").
func FortranBindings(f *elf.File) ([]Function, error) {
	return functions(f, fortranCName, func(old, new string) bool { return new < old })
}

// fortranCName returns the C API name a Fortran binding symbol implements:
// mpi_comm_rank_ and pmpi_comm_rank_ give MPI_Comm_rank. Other name
// manglings (no or two underscores) and the mpi_f08 bindings are skipped.
func fortranCName(sym string) (string, bool) {
	n := strings.TrimPrefix(sym, "p")
	if !strings.HasPrefix(n, "mpi_") || !strings.HasSuffix(n, "_") || strings.HasSuffix(n, "__") ||
		strings.Contains(n, "_f08") {
		return "", false
	}
	base := strings.TrimSuffix(strings.TrimPrefix(n, "mpi_"), "_")
	if base == "" {
		return "", false
	}
	return "MPI_" + strings.ToUpper(base[:1]) + base[1:], true
}

// functions returns the defined functions whose names call accepts, one per
// address; prefer says whether a new alias names the address better than
// the one kept so far.
func functions(f *elf.File, call func(sym string) (string, bool), prefer func(old, new string) bool) ([]Function, error) {
	syms, err := f.DynamicSymbols()
	if err != nil {
		return nil, fmt.Errorf("read dynamic symbols: %w", err)
	}
	byAddr := map[uint64]Function{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section == elf.SHN_UNDEF || s.Value == 0 {
			continue
		}
		c, ok := call(s.Name)
		if !ok {
			continue
		}
		if old, seen := byAddr[s.Value]; !seen || prefer(old.Name, s.Name) {
			byAddr[s.Value] = Function{Name: s.Name, Call: c, Value: s.Value, Size: s.Size}
		}
	}
	return sortedFunctions(byAddr), nil
}

func sortedFunctions(byAddr map[uint64]Function) []Function {
	out := make([]Function, 0, len(byAddr))
	for _, fn := range byAddr {
		out = append(out, fn)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	return out
}

// JumpAliases maps the entry of each function that an MPI C API symbol
// only jumps to onto that symbol's MPI_ name. Some builds make MPI_X a
// five-byte `jmp` into a body that has no symbol of its own (Debian 12's
// MPICH 4.0.2: MPI_Waitany, MPI_Waitsome, MPI_Testany, MPI_Testsome,
// MPI_Startall): a thread blocked there has no frame any symbol names,
// and is in that call. An entry two symbols jump to (a shared body) is
// left out: which call it is cannot be told.
func JumpAliases(f *elf.File) (map[uint64]string, error) {
	fns, err := MPIFunctions(f)
	if err != nil {
		return nil, err
	}
	out := map[uint64]string{}
	shared := map[uint64]bool{}
	for _, fn := range fns {
		var code [16]byte
		if !readCode(f, fn.Value, code[:]) {
			continue
		}
		pc, b := fn.Value, code[:]
		in, err := x86.Decode(b)
		if err == nil && in.Op == x86asm.NOP && in.Len == 4 { // endbr64
			pc, b = pc+4, b[4:]
			in, err = x86.Decode(b)
		}
		if err != nil || in.Op != x86asm.JMP {
			continue
		}
		to, ok := x86.BranchTarget(in, pc)
		if !ok {
			continue
		}
		if _, seen := out[to]; seen {
			shared[to] = true
		}
		out[to] = fn.Name
	}
	for to := range shared {
		delete(out, to)
	}
	return out, nil
}

// readCode reads len(b) bytes at virtual address addr of an executable
// section of f.
func readCode(f *elf.File, addr uint64, b []byte) bool {
	for _, sec := range f.Sections {
		if sec.Type != elf.SHT_PROGBITS || sec.Flags&elf.SHF_EXECINSTR == 0 || addr < sec.Addr || addr+uint64(len(b)) > sec.Addr+sec.Size {
			continue
		}
		_, err := sec.ReadAt(b, int64(addr-sec.Addr))
		return err == nil
	}
	return false
}
