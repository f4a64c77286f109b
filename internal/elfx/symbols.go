package elfx

import (
	"debug/elf"
	"fmt"
)

// Symbols holds an ELF file's defined dynamic functions by name, read once
// per file: every probe of the file looks its symbol up in it.
type Symbols struct {
	text Segments // the executable segments, where functions lie
	defs map[string][]elf.Symbol
}

// ReadSymbols reads the defined dynamic functions of f.
func ReadSymbols(f *elf.File) (Symbols, error) {
	syms, err := f.DynamicSymbols()
	if err != nil {
		return Symbols{}, fmt.Errorf("dynamic symbols: %w", err)
	}
	defs := map[string][]elf.Symbol{}
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			defs[s.Name] = append(defs[s.Name], s)
		}
	}
	return Symbols{text: Loads(f.Progs).Exec(), defs: defs}, nil
}

// Offset returns the file offset of the definition of a dynamic function
// that a uprobe must use, and whether the file defines it. When the file
// defines the name in several versions (libibverbs'
// ibv_modify_srq@IBVERBS_1.0 and ibv_modify_srq@@IBVERBS_1.1) it is the
// default version's, the one the dynamic linker binds new callers to; with
// a single definition it is that one's. versioned says whether there was a
// choice: only then must the caller attach by address, since a lookup by
// name may pick an older version.
func (st Symbols) Offset(name string) (off uint64, found, versioned bool, err error) {
	_, off, found, versioned, err = st.Definition(name)
	return off, found, versioned, err
}

// Definition is Offset with the symbol it picked, whose value and size
// say where the function's code is.
func (st Symbols) Definition(name string) (sym elf.Symbol, off uint64, found, versioned bool, err error) {
	defs := st.defs[name]
	if len(defs) == 0 {
		return elf.Symbol{}, 0, false, false, nil
	}
	pick := defs[0]
	if len(defs) > 1 {
		n := 0
		for _, s := range defs {
			if !s.HasVersion || !s.VersionIndex.IsHidden() {
				pick = s
				n++
			}
		}
		if n != 1 {
			return elf.Symbol{}, 0, false, true, fmt.Errorf("symbol %s: %d definitions, %d of them default: cannot tell which one callers use", name, len(defs), n)
		}
	}
	off, _, ok := st.text.Offset(pick.Value)
	if !ok {
		return elf.Symbol{}, 0, false, false, fmt.Errorf("symbol %s: address %#x is in no executable segment", name, pick.Value)
	}
	return pick, off, true, len(defs) > 1, nil
}

// Defined returns the dynamic symbols f defines (not undefined, not at
// address 0), by name; of a name defined more than once (symbol versions),
// the first.
func Defined(f *elf.File) (map[string]elf.Symbol, error) {
	syms, err := f.DynamicSymbols()
	if err != nil {
		return nil, fmt.Errorf("dynamic symbols: %w", err)
	}
	out := make(map[string]elf.Symbol, len(syms))
	for _, s := range syms {
		if s.Section == elf.SHN_UNDEF || s.Value == 0 {
			continue
		}
		if _, seen := out[s.Name]; !seen {
			out[s.Name] = s
		}
	}
	return out, nil
}
