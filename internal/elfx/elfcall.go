package elfx

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/arch/x86/x86asm"

	"github.com/mpiprobe/mpiprobe/internal/x86"
)

// ErrNoFunction means the named function is not defined in the file.
var ErrNoFunction = errors.New("function not defined")

// ErrUnreliable means a function's call sites to a callee cannot all be
// found: its bytes do not decode, from its start to its end, as a sequence
// of x86-64 instructions, or it reaches the callee by a conditional jump,
// where no probe can tell a jump from a fall-through.
var ErrUnreliable = errors.New("call sites cannot be found reliably")

// Sites returns the offsets, relative to the start of function fn, of the
// call and jump instructions in fn that reach function callee, in order.
// None found is not an error: the caller decides what an absent call means.
// When they cannot all be found (ErrUnreliable) it returns none, even those
// found before the problem, and an error naming fn and the offset.
func Sites(f *elf.File, fn, callee string) ([]uint64, error) {
	c, err := ReadCalls(f)
	if err != nil {
		return nil, err
	}
	caller, targets, err := c.targets(fn, callee)
	if err != nil || len(targets) == 0 {
		return nil, err
	}
	code, err := functionBytes(f, caller)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fn, err)
	}
	sites, err := scan(code, caller.Value, targets)
	if err != nil {
		return nil, fmt.Errorf("%s%w", fn, err)
	}
	return sites, nil
}

// Calls is what finding call sites in one file needs from its symbol
// tables, read once: its functions by name, and the pieces the compiler
// moved out of them (cold parts by their function's name, clones by
// address; none in a stripped file).
type Calls struct {
	f      *elf.File
	syms   map[string]elf.Symbol
	cold   map[string]elf.Symbol
	clones map[uint64]elf.Symbol
	// starts holds the address of every named function; frame, when set
	// (WithFrames), gives the extent of code at an address no name starts.
	starts map[uint64]bool
	frame  func(pc uint64) (start, end uint64, ok bool)
}

// WithFrames returns a Calls whose Sites also follow direct calls to
// local functions the file names nowhere (a stripped file's static
// functions, such as the copy of an inline function GCC kept out of
// line) as it follows named clones: frame returns the extent [start, end)
// of the code holding pc, as the file's call-frame information
// (.eh_frame) describes it. Only a call to the first address of such an
// extent is followed. c itself is unchanged.
func (c *Calls) WithFrames(frame func(pc uint64) (start, end uint64, ok bool)) *Calls {
	d := *c
	d.frame = frame
	return &d
}

// unnamed returns a symbol for the unnamed local function that starts at
// addr, if the call-frame information has one there and no symbol
// starts at addr.
func (c *Calls) unnamed(addr uint64) (elf.Symbol, bool) {
	if c.frame == nil || c.starts[addr] {
		return elf.Symbol{}, false
	}
	start, end, ok := c.frame(addr)
	if !ok || start != addr || end <= start {
		return elf.Symbol{}, false
	}
	for i, sec := range c.f.Sections {
		if sec.Type == elf.SHT_PROGBITS && sec.Flags&elf.SHF_EXECINSTR != 0 && start >= sec.Addr && end <= sec.Addr+sec.Size {
			return elf.Symbol{Name: fmt.Sprintf("local function at %#x", start), Value: start, Size: end - start,
				Section: elf.SectionIndex(i), Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_FUNC)}, true
		}
	}
	return elf.Symbol{}, false
}

// ReadCalls reads f's symbol tables for CallSites.
func ReadCalls(f *elf.File) (*Calls, error) {
	if f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("machine %s: only x86-64 is supported", f.Machine)
	}
	c := &Calls{f: f, syms: map[string]elf.Symbol{}, cold: map[string]elf.Symbol{}, clones: map[uint64]elf.Symbol{},
		starts: map[uint64]bool{}}
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
			if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section == elf.SHN_UNDEF {
				continue
			}
			// The static table wins: it is the same or more precise.
			c.syms[s.Name] = s
			c.starts[s.Value] = true
			if elf.ST_BIND(s.Info) != elf.STB_LOCAL {
				continue
			}
			if base, ok := strings.CutSuffix(s.Name, ".cold"); ok {
				c.cold[base] = s
			} else if cloneName.MatchString(s.Name) {
				c.clones[s.Value] = s
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("read symbols: %w", elf.ErrNoSymbols)
	}
	return c, nil
}

// targets returns function fn and the addresses that reach callee: its
// definition in the file and its PLT entry. None is not an error.
func (c *Calls) targets(fn, callee string) (elf.Symbol, map[uint64]bool, error) {
	caller, ok := c.syms[fn]
	if !ok || caller.Size == 0 {
		return elf.Symbol{}, nil, fmt.Errorf("%s: %w", fn, ErrNoFunction)
	}
	targets := map[uint64]bool{}
	if s, ok := c.syms[callee]; ok && s.Value != 0 {
		targets[s.Value] = true
	}
	if plt, ok, err := pltEntry(c.f, callee); err != nil {
		return elf.Symbol{}, nil, err
	} else if ok {
		targets[plt] = true
	}
	return caller, targets, nil
}

// Sites returns the virtual addresses of the call and jump
// instructions that reach function callee from fn and from the pieces of
// fn the compiler moved out of it: its cold part (fn.cold, reached by
// jumps) and the local clones it calls directly (name.constprop.N,
// name.isra.N, name.part.N: an inline function the compiler kept out of
// line, as GCC does with ob1's send path in Open MPI 5.0's libmpi.so), and
// theirs in turn; with WithFrames, also the unnamed local functions it calls
// (the same clones in a stripped file, as Debian ships it). Such a clone may also be called from other functions:
// the caller decides what a site found from two functions means. Errors
// are those of the package function Sites.
func (c *Calls) Sites(fn, callee string) ([]uint64, error) {
	caller, targets, err := c.targets(fn, callee)
	if err != nil || len(targets) == 0 {
		return nil, err
	}
	var out []uint64
	seen := map[uint64]bool{}
	var visit func(s elf.Symbol, depth int) error
	visit = func(s elf.Symbol, depth int) error {
		if seen[s.Value] || s.Size == 0 {
			return nil
		}
		seen[s.Value] = true
		code, err := functionBytes(c.f, s)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		sites, calls, err := scanCalls(code, s.Value, targets)
		if err != nil {
			return fmt.Errorf("%s%w", s.Name, err)
		}
		for _, off := range sites {
			out = append(out, s.Value+off)
		}
		if cold, ok := c.cold[s.Name]; ok {
			if err := visit(cold, depth); err != nil {
				return err
			}
		}
		if depth == 0 {
			return nil
		}
		for _, dest := range calls {
			clone, ok := c.clones[dest]
			if !ok {
				clone, ok = c.unnamed(dest)
			}
			if ok {
				if err := visit(clone, depth-1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	// Three levels of clones: GCC clones a clone's callee in turn.
	if err := visit(caller, 3); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// cloneName matches the names GCC gives the copies of a function it
// specialises or splits: f.constprop.0, f.isra.0, f.part.0, and chains of them.
var cloneName = regexp.MustCompile(`^[^.]+(\.(constprop|isra|part)\.[0-9]+)+$`)

// scanCalls is scan, also returning the destinations of the direct calls
// in code (to any function).
func scanCalls(code []byte, addr uint64, targets map[uint64]bool) (sites, calls []uint64, err error) {
	err = walk(code, func(off int, in x86asm.Inst) error {
		dest, ok := x86.BranchTarget(in, addr+uint64(off))
		if !ok || in.PCRel == 0 {
			return nil
		}
		switch {
		case !targets[dest]:
			if in.Op == x86asm.CALL {
				calls = append(calls, dest)
			}
		case in.Op == x86asm.CALL || in.Op == x86asm.JMP:
			sites = append(sites, uint64(off))
		default:
			return fmt.Errorf("+%#x: conditional jump %s to the callee: %w", off, in.Op, ErrUnreliable)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return sites, calls, nil
}

// scan decodes code (loaded at addr) and returns the offsets of the calls
// and unconditional jumps whose destination is in targets. A conditional
// jump to a target is an error: a probe on it would fire whether or not
// it jumps, and leaving it out would miss calls.
func scan(code []byte, addr uint64, targets map[uint64]bool) ([]uint64, error) {
	sites, _, err := scanCalls(code, addr, targets)
	return sites, err
}

// walk decodes code as consecutive 64-bit instructions from its first
// byte and calls visit with each one and its offset. It fails at the first
// bytes that are not a whole instruction (unknown, or cut short by the end
// of code), unless every byte from there on is fill (int3, nop, zero).
func walk(code []byte, visit func(off int, in x86asm.Inst) error) error {
	for off := 0; off < len(code); {
		in, err := x86.Decode(code[off:])
		if err != nil {
			if isFill(code[off:]) {
				return nil
			}
			return fmt.Errorf("+%#x: %w (bytes % x): %w", off, err, code[off:min(off+8, len(code))], ErrUnreliable)
		}
		if err := visit(off, in); err != nil {
			return err
		}
		off += in.Len
	}
	return nil
}

// isFill reports whether b is all int3, nop or zero bytes: padding after
// the last instruction, not code.
func isFill(b []byte) bool {
	for _, c := range b {
		if c != 0xcc && c != 0x90 && c != 0 {
			return false
		}
	}
	return true
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

// DataSlot returns the GOT slot through which the file's code reaches the
// data symbol name: the address its R_X86_64_GLOB_DAT relocation fills in
// at load time. A live process holds the symbol's final address there,
// which is not the file's own copy when the executable copy-relocated it.
func DataSlot(f *elf.File, name string) (uint64, bool, error) {
	dyn, err := f.DynamicSymbols()
	if err != nil {
		return 0, false, fmt.Errorf("read dynamic symbols: %w", err)
	}
	return gotSlot(f, dyn, ".rela.dyn", elf.R_X86_64_GLOB_DAT, name)
}
