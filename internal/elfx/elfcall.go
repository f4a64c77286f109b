package elfx

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ErrNoFunction means the named function is not defined in the file.
var ErrNoFunction = errors.New("function not defined")

// Opcodes of the two instructions that transfer control to a rel32 target.
const (
	opCall = 0xe8
	opJmp  = 0xe9
)

// Sites returns the offsets, relative to the start of function fn, of the
// call and jump instructions in fn that reach function callee, in order.
// None found is not an error: the caller decides what an absent call means.
func Sites(f *elf.File, fn, callee string) ([]uint64, error) {
	if f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("machine %s: only x86-64 is supported", f.Machine)
	}
	syms, err := symbols(f)
	if err != nil {
		return nil, err
	}
	caller, ok := syms[fn]
	if !ok || caller.Size == 0 {
		return nil, fmt.Errorf("%s: %w", fn, ErrNoFunction)
	}
	targets := map[uint64]bool{}
	if c, ok := syms[callee]; ok && c.Value != 0 {
		targets[c.Value] = true
	}
	if plt, ok, err := pltEntry(f, callee); err != nil {
		return nil, err
	} else if ok {
		targets[plt] = true
	}
	if len(targets) == 0 {
		return nil, nil
	}
	code, err := functionBytes(f, caller)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fn, err)
	}
	return scan(code, caller.Value, targets), nil
}

// scan returns the offsets in code (loaded at addr) of E8/E9 rel32
// instructions whose destination is in targets, dropping overlapping matches.
func scan(code []byte, addr uint64, targets map[uint64]bool) []uint64 {
	var out []uint64
	next := 0 // first offset a new match may start at
	for i := 0; i+5 <= len(code); i++ {
		if (code[i] != opCall && code[i] != opJmp) || i < next {
			continue
		}
		rel := int32(binary.LittleEndian.Uint32(code[i+1 : i+5]))
		dest := addr + uint64(i) + 5 + uint64(int64(rel))
		if targets[dest] {
			out = append(out, uint64(i))
			next = i + 5
		}
	}
	return out
}

// symbols returns the defined function symbols of the dynamic and the static
// symbol table (the latter wins: it is the same or more precise).
func symbols(f *elf.File) (map[string]elf.Symbol, error) {
	out := map[string]elf.Symbol{}
	found := false
	for _, read := range []func() ([]elf.Symbol, error){f.DynamicSymbols, f.Symbols} {
		syms, err := read()
		if errors.Is(err, elf.ErrNoSymbols) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read symbols: %w", err)
		}
		found = true
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Section != elf.SHN_UNDEF {
				out[s.Name] = s
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("read symbols: %w", elf.ErrNoSymbols)
	}
	return out, nil
}

// functionBytes returns the code of a function symbol.
func functionBytes(f *elf.File, s elf.Symbol) ([]byte, error) {
	if int(s.Section) >= len(f.Sections) {
		return nil, fmt.Errorf("symbol section %d out of range", s.Section)
	}
	sec := f.Sections[s.Section]
	if sec.Type != elf.SHT_PROGBITS || s.Value < sec.Addr || s.Value-sec.Addr+s.Size > sec.Size {
		return nil, fmt.Errorf("symbol at %#x+%d lies outside its section %s", s.Value, s.Size, sec.Name)
	}
	if s.Size > 1<<24 {
		return nil, fmt.Errorf("symbol size %d implausible", s.Size)
	}
	buf := make([]byte, s.Size)
	if _, err := sec.ReadAt(buf, int64(s.Value-sec.Addr)); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", sec.Name, err)
	}
	return buf, nil
}

// pltEntry returns the address of callee's PLT entry: the GOT slot of its
// R_X86_64_JUMP_SLOT relocation (.rela.plt), or of its R_X86_64_GLOB_DAT
// one (.rela.dyn) when the linker put the entry in .plt.got because the
// function's address is also taken, and the `jmp *slot(%rip)` instruction
// in .plt.sec, .plt or .plt.got that reads it.
func pltEntry(f *elf.File, callee string) (uint64, bool, error) {
	dyn, err := f.DynamicSymbols()
	if err != nil {
		return 0, false, nil
	}
	slot, found, err := gotSlot(f, dyn, ".rela.plt", elf.R_X86_64_JMP_SLOT, callee)
	if err == nil && !found {
		slot, found, err = gotSlot(f, dyn, ".rela.dyn", elf.R_X86_64_GLOB_DAT, callee)
	}
	if err != nil || !found {
		return 0, false, err
	}
	for _, name := range []string{".plt.sec", ".plt", ".plt.got"} {
		sec := f.Section(name)
		if sec == nil {
			continue
		}
		code, err := sec.Data()
		if err != nil {
			return 0, false, fmt.Errorf("read %s: %w", name, err)
		}
		// Entries are 16 bytes (8 in a .plt.got without IBT, as its
		// entry size says); the jmp may follow endbr64/bnd prefixes.
		size := uint64(16)
		if name == ".plt.got" && sec.Entsize == 8 {
			size = 8
		}
		for i := 0; i+6 <= len(code); i++ {
			if code[i] != 0xff || code[i+1] != 0x25 {
				continue
			}
			rel := int32(binary.LittleEndian.Uint32(code[i+2 : i+6]))
			if sec.Addr+uint64(i)+6+uint64(int64(rel)) == slot {
				return sec.Addr + uint64(i)/size*size, true, nil
			}
		}
	}
	return 0, false, nil
}

// gotSlot returns the GOT slot that a relocation of type typ in section
// name binds to the dynamic symbol callee.
func gotSlot(f *elf.File, dyn []elf.Symbol, name string, typ elf.R_X86_64, callee string) (uint64, bool, error) {
	rela := f.Section(name)
	if rela == nil {
		return 0, false, nil
	}
	data, err := rela.Data()
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", name, err)
	}
	for off := 0; off+24 <= len(data); off += 24 {
		r := binary.LittleEndian.Uint64(data[off:])
		info := binary.LittleEndian.Uint64(data[off+8:])
		sym, t := info>>32, uint32(info)
		if elf.R_X86_64(t) != typ || sym == 0 || int(sym) > len(dyn) {
			continue
		}
		if dyn[sym-1].Name == callee { // DynamicSymbols omits the null symbol 0
			return r, true, nil
		}
	}
	return 0, false, nil
}
