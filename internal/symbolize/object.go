package symbolize

import (
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"errors"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/mpiprobe/mpiprobe/internal/elfx"
)

// object is one parsed ELF file. Its symbol and line tables are built on
// first use; sites caches the finished answers by virtual address.
type object struct {
	f     *os.File
	ef    *elf.File
	err   error         // why the file could not be parsed
	loads elfx.Segments // the PT_LOAD program headers

	symsBuilt bool
	syms      symtab

	linesBuilt bool
	lines      linetab

	sites map[uint64]Site
}

// newObject parses the ELF headers of f. A parse failure is recorded in
// the object's err, and f is closed.
func newObject(f *os.File) *object {
	o := &object{f: f, sites: make(map[uint64]Site)}
	ef, err := elf.NewFile(f)
	if err != nil {
		f.Close()
		o.f, o.err = nil, err
		return o
	}
	o.ef = ef
	o.loads = elfx.Loads(ef.Progs)
	if len(o.loads) == 0 {
		f.Close()
		o.f, o.ef, o.err = nil, nil, errors.New("ELF file has no PT_LOAD segment")
	}
	return o
}

// close closes the object's file.
func (o *object) close() error {
	if o.f == nil {
		return nil
	}
	err := o.f.Close()
	o.f, o.ef = nil, nil
	return err
}

// site symbolizes the virtual address va. Function and line are looked up
// for va-1, the last byte of the call instruction va returns to.
func (o *object) site(va uint64) Site {
	s := Site{Offset: va}
	if va == 0 || o.ef == nil {
		return s
	}
	pc := va - 1
	if !o.symsBuilt {
		o.syms = buildSymtab(o.ef)
		o.symsBuilt = true
	}
	sym, named := o.syms.lookup(pc)
	if named {
		s.Function = sym.name
		s.FuncOffset = va - sym.value
	}
	if !o.linesBuilt {
		o.lines = buildLinetab(o.ef)
		o.linesBuilt = true
	}
	if file, line, ok := o.lines.row(pc); ok {
		s.File, s.Line = o.lines.files[file], int(line)
		if named {
			s.AlsoLines = o.mergedLines(sym, pc, file, line)
		}
	}
	return s
}

// symbol is a function symbol.
type symbol struct {
	value, size uint64
	name        string
	section     elf.SectionIndex
	bind        elf.SymBind
}

// symtab is a function symbol table sorted by value, with one symbol per
// value, and the sections that symbols may fall back into.
type symtab struct {
	syms []symbol
	// maxEnd[i] is the largest value+size among syms[:i+1]; it bounds the
	// backward walk for symbols that contain nested ones.
	maxEnd []uint64
	// secs are the allocated sections, to check that a size-0 symbol and
	// the address it is asked to cover are in the same section.
	secs []secRange
}

// secRange is the address range of an allocated section.
type secRange struct {
	addr, end uint64
	index     elf.SectionIndex
}

// buildSymtab collects the FUNC symbols of .symtab, or of .dynsym if
// .symtab has none. Errors (no such table) leave the table empty.
func buildSymtab(ef *elf.File) symtab {
	all, _ := ef.Symbols()
	funcs := funcSymbols(all)
	if len(funcs) == 0 {
		dyn, _ := ef.DynamicSymbols()
		funcs = funcSymbols(dyn)
	}
	var secs []secRange
	for i, sec := range ef.Sections {
		if sec.Flags&elf.SHF_ALLOC != 0 && sec.Type != elf.SHT_NOBITS && sec.Size > 0 {
			secs = append(secs, secRange{addr: sec.Addr, end: sec.Addr + sec.Size, index: elf.SectionIndex(i)})
		}
	}
	return makeSymtab(funcs, secs)
}

// makeSymtab builds the lookup table from function symbols in any order
// (funcs is reordered) and the allocated sections.
func makeSymtab(funcs []symbol, secs []secRange) symtab {
	// Sort by value, the preferred name of each value first, then keep
	// that one.
	slices.SortFunc(funcs, func(a, b symbol) int {
		if c := cmp.Compare(a.value, b.value); c != 0 {
			return c
		}
		return preferSymbol(a, b)
	})
	funcs = slices.CompactFunc(funcs, func(a, b symbol) bool { return a.value == b.value })
	t := symtab{syms: slices.Clip(funcs), maxEnd: make([]uint64, len(funcs)), secs: secs}
	var end uint64
	for i, s := range funcs {
		end = max(end, s.value+s.size)
		t.maxEnd[i] = end
	}
	return t
}

// funcSymbols returns the defined FUNC symbols among syms.
func funcSymbols(syms []elf.Symbol) []symbol {
	var out []symbol
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section == elf.SHN_UNDEF || s.Name == "" {
			continue
		}
		out = append(out, symbol{
			value:   s.Value,
			size:    s.Size,
			name:    s.Name,
			section: s.Section,
			bind:    elf.ST_BIND(s.Info),
		})
	}
	return out
}

// preferSymbol orders aliases (symbols of the same value), best first:
// one with a size, then the name with fewer leading underscores (read
// before __read and __libc_read), then global before weak before local
// binding, then the shorter name, then alphabetically.
func preferSymbol(a, b symbol) int {
	if c := cmp.Compare(boolRank(a.size == 0), boolRank(b.size == 0)); c != 0 {
		return c
	}
	if c := cmp.Compare(leadingUnderscores(a.name), leadingUnderscores(b.name)); c != 0 {
		return c
	}
	if c := cmp.Compare(bindRank(a.bind), bindRank(b.bind)); c != 0 {
		return c
	}
	if c := cmp.Compare(len(a.name), len(b.name)); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func leadingUnderscores(s string) int {
	return len(s) - len(strings.TrimLeft(s, "_"))
}

func bindRank(b elf.SymBind) int {
	switch b {
	case elf.STB_GLOBAL:
		return 0
	case elf.STB_WEAK:
		return 1
	case elf.STB_LOCAL:
		return 2
	}
	return 3
}

// lookup returns the symbol covering pc: the innermost one whose
// [value, value+size) contains it, or else the nearest symbol below pc if
// that one has size 0 and lies in the same section as pc.
func (t *symtab) lookup(pc uint64) (symbol, bool) {
	i := sort.Search(len(t.syms), func(i int) bool { return t.syms[i].value > pc }) - 1
	if i < 0 {
		return symbol{}, false
	}
	for j := i; j >= 0 && t.maxEnd[j] > pc; j-- {
		if s := t.syms[j]; s.size > 0 && pc-s.value < s.size {
			return s, true
		}
	}
	if s := t.syms[i]; s.size == 0 {
		if sec, ok := t.section(pc); ok && sec == s.section {
			return s, true
		}
	}
	return symbol{}, false
}

// section returns the index of the allocated section containing pc.
func (t *symtab) section(pc uint64) (elf.SectionIndex, bool) {
	for _, s := range t.secs {
		if pc >= s.addr && pc < s.end {
			return s.index, true
		}
	}
	return 0, false
}

// lineRow is one row of the merged DWARF line table: from addr up to the
// next row's address, code belongs to files[file]:line, unless end is set
// (the row ends a sequence, and the addresses after it have no line).
type lineRow struct {
	addr uint64
	line int32
	file uint32
	end  bool
}

// linetab is the line table of a whole object, sorted by address.
type linetab struct {
	rows  []lineRow
	files []string
}

// buildLinetab reads the line programs of all compilation units of ef.
// An object without DWARF gives an empty table. A unit whose line program
// is corrupt contributes the sequences read before the damage.
func buildLinetab(ef *elf.File) linetab {
	var t linetab
	d, err := ef.DWARF()
	if err != nil {
		return t
	}
	fileIndex := make(map[string]uint32)
	intern := func(f *dwarf.LineFile) uint32 {
		name := ""
		if f != nil {
			name = f.Name
		}
		if i, ok := fileIndex[name]; ok {
			return i
		}
		i := uint32(len(t.files))
		t.files = append(t.files, name)
		fileIndex[name] = i
		return i
	}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagCompileUnit && e.Tag != dwarf.TagPartialUnit {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(e)
		r.SkipChildren()
		if err != nil || lr == nil {
			continue
		}
		complete := len(t.rows) // rows up to here form whole sequences
		var le dwarf.LineEntry
		for {
			err := lr.Next(&le)
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.rows = t.rows[:complete]
				}
				break
			}
			t.rows = append(t.rows, lineRow{
				addr: le.Address,
				line: int32(min(max(le.Line, 0), 1<<31-1)),
				file: intern(le.File),
				end:  le.EndSequence,
			})
			if le.EndSequence {
				complete = len(t.rows)
			}
		}
		t.rows = t.rows[:complete]
	}
	t.rows = mergeRows(t.rows)
	return t
}

// mergeRows sorts the rows of all sequences by address and keeps one row
// per address. Within a sequence rows are in address order; a stable sort
// keeps that order among rows of one address, and the row that covers
// code is the last of them that does not end a sequence (an end row
// shares its address with the start of the next sequence).
func mergeRows(rows []lineRow) []lineRow {
	slices.SortStableFunc(rows, func(a, b lineRow) int { return cmp.Compare(a.addr, b.addr) })
	out := rows[:0]
	for i := 0; i < len(rows); {
		j, pick := i, i
		for ; j < len(rows) && rows[j].addr == rows[i].addr; j++ {
			if !rows[j].end || rows[pick].end {
				pick = j
			}
		}
		out = append(out, rows[pick])
		i = j
	}
	return slices.Clip(out)
}

// row returns the file (an index into files) and line of the code at pc.
func (t *linetab) row(pc uint64) (file uint32, line int32, ok bool) {
	i := sort.Search(len(t.rows), func(i int) bool { return t.rows[i].addr > pc }) - 1
	if i < 0 || t.rows[i].end {
		return 0, 0, false
	}
	return t.rows[i].file, t.rows[i].line, true
}

// only reports whether every row of file:line within [start, end) lies
// in one of the spans: the line has no code elsewhere in that function.
func (t *linetab) only(file uint32, line int32, start, end uint64, in ...span) bool {
	i := sort.Search(len(t.rows), func(i int) bool { return t.rows[i].addr >= start })
rows:
	for ; i < len(t.rows) && t.rows[i].addr < end; i++ {
		r := t.rows[i]
		if r.end || r.file != file || r.line != line {
			continue
		}
		for _, s := range in {
			if r.addr >= s.from && r.addr < s.to {
				continue rows
			}
		}
		return false
	}
	return true
}
