package unwind

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"sort"
	"testing"
)

// This file builds the inputs of the hand-written tests: .eh_frame
// records, .eh_frame_hdr search tables and minimal ELF files around them.

func uleb(v uint64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			c |= 0x80
		}
		b = append(b, c)
		if v == 0 {
			return b
		}
	}
}

func sleb(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		done := (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0)
		if !done {
			c |= 0x80
		}
		b = append(b, c)
		if done {
			return b
		}
	}
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// Call frame instructions.
func cfaDefCFA(reg, off uint64) []byte     { return cat([]byte{0x0c}, uleb(reg), uleb(off)) }
func cfaDefCFAOffset(off uint64) []byte    { return cat([]byte{0x0e}, uleb(off)) }
func cfaDefCFARegister(reg uint64) []byte  { return cat([]byte{0x0d}, uleb(reg)) }
func cfaOffset(reg uint8, n uint64) []byte { return cat([]byte{0x80 | reg}, uleb(n)) }
func cfaAdvance(d uint8) []byte            { return []byte{0x40 | d} }
func cfaDefCFAExpr(e []byte) []byte        { return cat([]byte{0x0f}, uleb(uint64(len(e))), e) }

// The CFA expression glibc's and binutils' PLT entries use: rsp+8, plus 8
// more once the entry has pushed its relocation index (from byte 11 of
// each 16-byte entry on).
var pltExpr = []byte{0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22}

// ehBuilder appends .eh_frame records for a section at address addr.
type ehBuilder struct {
	addr   uint64
	b      []byte
	long   bool // use the 64-bit length form
	starts []fdeRef
}

func (e *ehBuilder) record(body func(idOff uint64) []byte) uint64 {
	off := uint64(len(e.b))
	hdr := 4
	if e.long {
		hdr = 12
	}
	content := body(off + uint64(hdr))
	if e.long {
		e.b = append(e.b, u32(0xffffffff)...)
		e.b = append(e.b, u64(uint64(len(content)))...)
	} else {
		e.b = append(e.b, u32(uint32(len(content)))...)
	}
	e.b = append(e.b, content...)
	return off
}

// cie appends a CIE with augmentation "zR" (pcrel|sdata4 addresses), code
// alignment 1, data alignment -8, return address column 16, and the
// given extra augmentation letters and initial instructions.
func (e *ehBuilder) cie(extraAug string, insns []byte) uint64 {
	return e.record(func(uint64) []byte {
		return cat(u32(0), []byte{1}, []byte("zR"+extraAug), []byte{0},
			uleb(1), sleb(-8), []byte{16},
			uleb(1), []byte{pePcrel | peSdata4},
			insns)
	})
}

// stdCIE is the CIE GCC emits on x86-64: CFA = rsp+8, return address at
// CFA-8.
func (e *ehBuilder) stdCIE() uint64 {
	return e.cie("", cat(cfaDefCFA(regRSP, 8), cfaOffset(regRA, 1)))
}

// fde appends an FDE of the CIE at cieOff (which must use "zR" with
// pcrel|sdata4) covering [start, start+size).
func (e *ehBuilder) fde(cieOff, start, size uint64, insns []byte) uint64 {
	off := e.record(func(idOff uint64) []byte {
		field := e.addr + idOff + 4
		return cat(u32(uint32(idOff-cieOff)),
			u32(uint32(int32(int64(start-field)))), u32(uint32(size)),
			uleb(0), insns)
	})
	e.starts = append(e.starts, fdeRef{pc: start, off: off})
	return off
}

// hdr builds an .eh_frame_hdr at hdrAddr for the FDEs appended so far,
// with the encodings GNU ld uses.
func (e *ehBuilder) hdr(hdrAddr uint64) []byte {
	refs := append([]fdeRef(nil), e.starts...)
	sort.Slice(refs, func(i, j int) bool { return refs[i].pc < refs[j].pc })
	b := []byte{1, pePcrel | peSdata4, peUdata4, peDatarel | peSdata4}
	b = append(b, u32(uint32(int32(int64(e.addr-(hdrAddr+4)))))...)
	b = append(b, u32(uint32(len(refs)))...)
	for _, r := range refs {
		b = append(b, u32(uint32(int32(int64(r.pc-hdrAddr))))...)
		b = append(b, u32(uint32(int32(int64(e.addr+r.off-hdrAddr))))...)
	}
	return b
}

// section is one section of a synthetic ELF file.
type section struct {
	name string
	typ  elf.SectionType
	addr uint64
	data []byte
}

// makeELF builds an x86-64 ELF shared object with no program headers and
// the given sections (plus the null section and .shstrtab).
func makeELF(machine elf.Machine, secs ...section) []byte {
	shstr := []byte{0}
	names := make([]uint32, len(secs))
	for i, s := range secs {
		names[i] = uint32(len(shstr))
		shstr = append(shstr, s.name...)
		shstr = append(shstr, 0)
	}
	shstrName := uint32(len(shstr))
	shstr = append(shstr, ".shstrtab\x00"...)

	var data bytes.Buffer
	offs := make([]uint64, len(secs))
	base := uint64(64)
	for i, s := range secs {
		for (base+uint64(data.Len()))%8 != 0 {
			data.WriteByte(0)
		}
		offs[i] = base + uint64(data.Len())
		if s.typ != elf.SHT_NOBITS {
			data.Write(s.data)
		}
	}
	shstrOff := base + uint64(data.Len())
	data.Write(shstr)
	for (base+uint64(data.Len()))%8 != 0 {
		data.WriteByte(0)
	}
	shoff := base + uint64(data.Len())

	le := binary.LittleEndian
	var out bytes.Buffer
	ident := [16]byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)}
	out.Write(ident[:])
	binary.Write(&out, le, uint16(elf.ET_DYN))
	binary.Write(&out, le, uint16(machine))
	binary.Write(&out, le, uint32(elf.EV_CURRENT))
	binary.Write(&out, le, uint64(0))  // entry
	binary.Write(&out, le, uint64(0))  // phoff
	binary.Write(&out, le, shoff)      // shoff
	binary.Write(&out, le, uint32(0))  // flags
	binary.Write(&out, le, uint16(64)) // ehsize
	binary.Write(&out, le, uint16(56)) // phentsize
	binary.Write(&out, le, uint16(0))  // phnum
	binary.Write(&out, le, uint16(64)) // shentsize
	binary.Write(&out, le, uint16(len(secs)+2))
	binary.Write(&out, le, uint16(len(secs)+1)) // shstrndx
	out.Write(data.Bytes())

	sh := func(name uint32, typ elf.SectionType, flags uint64, addr, off, size uint64) {
		binary.Write(&out, le, name)
		binary.Write(&out, le, uint32(typ))
		binary.Write(&out, le, flags)
		binary.Write(&out, le, addr)
		binary.Write(&out, le, off)
		binary.Write(&out, le, size)
		binary.Write(&out, le, uint32(0)) // link
		binary.Write(&out, le, uint32(0)) // info
		binary.Write(&out, le, uint64(8)) // addralign
		binary.Write(&out, le, uint64(0)) // entsize
	}
	sh(0, elf.SHT_NULL, 0, 0, 0, 0)
	for i, s := range secs {
		sh(names[i], s.typ, uint64(elf.SHF_ALLOC), s.addr, offs[i], uint64(len(s.data)))
	}
	sh(shstrName, elf.SHT_STRTAB, 0, 0, shstrOff, uint64(len(shstr)))
	return out.Bytes()
}

// Addresses of the synthetic files' sections.
const (
	testEhAddr  = 0x10000
	testHdrAddr = 0x20000
)

// loadEh wraps eh (and hdr, if not nil) in an ELF file and loads it.
func loadEh(t testing.TB, eh, hdr []byte) (*Table, error) {
	t.Helper()
	secs := []section{{".eh_frame", elf.SHT_PROGBITS, testEhAddr, eh}}
	if hdr != nil {
		secs = append(secs, section{".eh_frame_hdr", elf.SHT_PROGBITS, testHdrAddr, hdr})
	}
	return Load(bytes.NewReader(makeELF(elf.EM_X86_64, secs...)))
}

func mustLoadEh(t testing.TB, eh, hdr []byte) *Table {
	t.Helper()
	tab, err := loadEh(t, eh, hdr)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return tab
}
