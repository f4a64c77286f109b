package unwind

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"

	"github.com/mpiprobe/mpiprobe/internal/elfx"
)

// maxSection caps how many bytes Load reads for .eh_frame or .eh_frame_hdr
// found through program headers only, where a hostile header could claim
// any size.
const maxSection = 1 << 30

// Load parses the .eh_frame (and .eh_frame_hdr if present) of an x86-64 ELF file.
// Errors are lowercase, wrapped, and name what is wrong ("unwind: no .eh_frame section").
//
// The sections are found by name; a file without section headers is
// handled through its PT_GNU_EH_FRAME program header, which locates
// .eh_frame_hdr and, through it, .eh_frame. When .eh_frame_hdr is absent or
// malformed, Load indexes the FDEs of .eh_frame itself. Load reads all it
// needs before it returns: r is not used afterwards.
func Load(r io.ReaderAt) (*Table, error) {
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("unwind: parse elf: %w", err)
	}
	return load(f, r)
}

// LoadFile is Load for a file already open: its sections must be there,
// as a file without section headers is read through its program headers.
func LoadFile(f *elf.File) (*Table, error) {
	return load(f, nil)
}

// load is Load on f, read through r when it has no section headers (r nil:
// such a file is an error).
func load(f *elf.File, r io.ReaderAt) (*Table, error) {
	var err error
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("unwind: not an x86-64 elf file (%v, %v)", f.Class, f.Machine)
	}

	t := &Table{}
	if text := f.Section(".text"); text != nil {
		t.bases.text, t.bases.hasText = text.Addr, true
	}
	if sec := f.Section(".eh_frame_hdr"); sec != nil && sec.Type != elf.SHT_NOBITS {
		if t.hdr, err = sec.Data(); err != nil {
			return nil, fmt.Errorf("unwind: read .eh_frame_hdr: %w", err)
		}
		t.hdrBases = ptrBases{addr: sec.Addr, data: sec.Addr, hasData: true}
	}
	if sec := f.Section(".eh_frame"); sec != nil {
		if sec.Type == elf.SHT_NOBITS {
			return nil, errors.New("unwind: .eh_frame section has no data (SHT_NOBITS)")
		}
		if t.eh, err = sec.Data(); err != nil {
			return nil, fmt.Errorf("unwind: read .eh_frame: %w", err)
		}
		t.bases.addr = sec.Addr
	} else if r == nil {
		return nil, errors.New("unwind: no .eh_frame section")
	} else if err := t.fromProgs(f, r); err != nil {
		return nil, err
	}
	t.bases.data, t.bases.hasData = t.hdrBases.addr, t.hdr != nil
	t.hdrBases.text, t.hdrBases.hasText = t.bases.text, t.bases.hasText

	if t.hdr != nil && t.useHdr() {
		return t, nil
	}
	if err := t.scan(); err != nil && len(t.idx) == 0 {
		return nil, fmt.Errorf("unwind: .eh_frame: %w", err)
	}
	return t, nil
}

// fromProgs finds .eh_frame_hdr through the PT_GNU_EH_FRAME program header
// and .eh_frame through the pointer at its start, for files without
// section headers. .eh_frame is taken to extend to the end of the PT_LOAD
// segment holding it.
func (t *Table) fromProgs(f *elf.File, r io.ReaderAt) error {
	var ph *elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_GNU_EH_FRAME {
			ph = p
			break
		}
	}
	if ph == nil {
		return errors.New("unwind: no .eh_frame section")
	}
	hdr, err := readAt(r, ph.Off, ph.Filesz)
	if err != nil {
		return fmt.Errorf("unwind: read PT_GNU_EH_FRAME: %w", err)
	}
	t.hdr = hdr
	t.hdrBases = ptrBases{addr: ph.Vaddr, data: ph.Vaddr, hasData: true}
	hr := reader{b: hdr}
	hr.u8()
	enc := hr.u8()
	hr.off = 4
	ehAddr, ind, err := hr.readPtr(enc, &t.hdrBases)
	if err != nil || ind {
		return errors.New("unwind: no .eh_frame section (and no usable eh_frame_ptr in PT_GNU_EH_FRAME)")
	}
	off, n, ok := elfx.Loads(f.Progs).Offset(ehAddr)
	if !ok {
		return fmt.Errorf("unwind: no .eh_frame section (eh_frame_ptr %#x is in no PT_LOAD segment)", ehAddr)
	}
	if t.eh, err = readAt(r, off, n); err != nil {
		return fmt.Errorf("unwind: read .eh_frame at %#x: %w", ehAddr, err)
	}
	t.bases.addr = ehAddr
	return nil
}

// readAt reads n bytes at off, growing its buffer as data arrives, so that a
// bogus size costs no more memory than the file holds.
func readAt(r io.ReaderAt, off, n uint64) ([]byte, error) {
	if n > maxSection || off > 1<<62 {
		return nil, fmt.Errorf("size %#x at offset %#x out of range", n, off)
	}
	b, err := io.ReadAll(io.NewSectionReader(r, int64(off), int64(n)))
	if err != nil {
		return nil, err
	}
	if uint64(len(b)) != n {
		return nil, io.ErrUnexpectedEOF
	}
	return b, nil
}
