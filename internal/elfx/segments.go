package elfx

import (
	"debug/elf"
	"os"
)

// Segments are the PT_LOAD program headers of an ELF file, in file order:
// the map between the file's virtual addresses, its file offsets and, for a
// mapping of the file in a process, the load bias. mpiprobe converts
// between the three only through Segments.
type Segments []elf.ProgHeader

// Loads returns the PT_LOAD segments among an ELF file's program headers.
func Loads(progs []*elf.Prog) Segments {
	var out Segments
	for _, p := range progs {
		if p.Type == elf.PT_LOAD {
			out = append(out, p.ProgHeader)
		}
	}
	return out
}

// Exec returns the executable segments.
func (s Segments) Exec() Segments {
	var out Segments
	for _, p := range s {
		if p.Flags&elf.PF_X != 0 {
			out = append(out, p)
		}
	}
	return out
}

// Offset returns the file offset of the virtual address addr and how many
// file bytes its segment holds from there on. An address in no segment's
// file bytes (past them, in a segment's zero-filled tail) has none.
// Virtual address ranges of segments do not overlap, so at most one
// segment holds addr.
func (s Segments) Offset(addr uint64) (off, n uint64, ok bool) {
	for _, p := range s {
		if addr >= p.Vaddr && addr-p.Vaddr < p.Filesz {
			d := addr - p.Vaddr
			return p.Off + d, p.Filesz - d, true
		}
	}
	return 0, 0, false
}

// Vaddr returns the virtual address of the file offset off: that of the
// segment whose file range holds off (the executable one if several do; a
// segment without file bytes holds its own offset). An offset in the
// page-alignment slack around an executable segment, which the kernel maps
// along with it, is converted with that segment.
func (s Segments) Vaddr(off uint64) (uint64, bool) {
	best := -1
	for i, p := range s {
		if off >= p.Off && off-p.Off < max(p.Filesz, 1) {
			if best < 0 || (p.Flags&elf.PF_X != 0 && s[best].Flags&elf.PF_X == 0) {
				best = i
			}
		}
	}
	if best < 0 {
		page := uint64(os.Getpagesize())
		for i, p := range s {
			lo := p.Off &^ (page - 1)
			hi := (p.Off + p.Filesz + page - 1) &^ (page - 1)
			if p.Flags&elf.PF_X != 0 && off >= lo && off < hi {
				best = i
				break
			}
		}
	}
	if best < 0 {
		return 0, false
	}
	p := s[best]
	return off - p.Off + p.Vaddr, true
}

// Bias returns the load bias of a mapping of the file at address start
// from file offset off: the runtime address of any byte of the file minus
// its virtual address.
func (s Segments) Bias(start, off uint64) (uint64, bool) {
	va, ok := s.Vaddr(off)
	if !ok {
		return 0, false
	}
	return start - va, true
}
