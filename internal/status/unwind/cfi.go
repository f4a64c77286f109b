package unwind

import (
	"errors"
	"fmt"
	"sort"
)

// Table holds the call-frame information of one ELF file, indexed by the
// file's virtual addresses.
//
// A Table is immutable once Load returns it and may be used by any number
// of goroutines at once. It keeps a copy of the file's .eh_frame (and
// .eh_frame_hdr) and no reference to the file itself.
type Table struct {
	eh    []byte   // contents of .eh_frame
	bases ptrBases // addr is the virtual address of .eh_frame

	// The binary search table of .eh_frame_hdr, used when hdrN > 0.
	hdr      []byte   // contents of .eh_frame_hdr
	hdrBases ptrBases // addr is the virtual address of .eh_frame_hdr
	hdrEnc   byte     // encoding of the table's entries
	hdrTab   int      // offset of the table in hdr
	hdrN     int      // number of entries
	hdrEnt   int      // size of one entry

	// The index built by scanning .eh_frame, used without a usable
	// .eh_frame_hdr: FDE offsets sorted by the first address they cover.
	idx []fdeRef
}

type fdeRef struct {
	pc  uint64 // first address the FDE covers
	off uint64 // offset of the FDE in .eh_frame
}

// Limits that keep hostile input from costing unbounded time or memory.
const (
	maxAugmentation = 32      // bytes of a CIE augmentation string
	maxInsns        = 1 << 16 // call frame instructions run for one lookup
	maxStateStack   = 64      // nesting of DW_CFA_remember_state
)

// cie is a parsed Common Information Entry.
type cie struct {
	off     uint64 // offset in .eh_frame, for messages
	caf     uint64 // code alignment factor
	daf     int64  // data alignment factor
	ra      uint64 // return address column
	fdeEnc  byte   // encoding of the FDE's addresses (augmentation 'R')
	hasAug  bool   // augmentation 'z': FDEs have augmentation data
	signal  bool   // augmentation 'S': FDEs of signal trampolines
	insns   []byte // initial instructions
	insnOff uint64 // offset of insns in .eh_frame
}

// fde is a parsed Frame Description Entry.
type fde struct {
	off        uint64 // offset in .eh_frame
	cie        *cie
	start, end uint64 // the addresses covered: [start, end)
	insns      []byte
	insnOff    uint64 // offset of insns in .eh_frame
}

// entry is the header of one .eh_frame record.
type entry struct {
	off  uint64 // offset of the record
	body uint64 // offset just past the length field(s): where the id is
	end  uint64 // offset just past the record
	id   uint32 // 0 for a CIE, else the distance back to the CIE
	zero bool   // a zero terminator
}

// entryAt reads the header of the record at off.
func (t *Table) entryAt(off uint64) (entry, error) {
	if off >= uint64(len(t.eh)) {
		return entry{}, fmt.Errorf("entry at %#x: outside .eh_frame (%#x bytes)", off, len(t.eh))
	}
	r := reader{b: t.eh, off: int(off)}
	length := uint64(r.u32())
	if length == 0xffffffff {
		length = r.u64()
	}
	if r.err != nil {
		return entry{}, fmt.Errorf("entry at %#x: %w", off, r.err)
	}
	e := entry{off: off, body: uint64(r.off)}
	if length == 0 {
		e.zero = true
		e.end = e.body
		return e, nil
	}
	if length < 4 || length > uint64(r.left()) {
		return entry{}, fmt.Errorf("entry at %#x: length %#x exceeds .eh_frame", off, length)
	}
	e.end = e.body + length
	e.id = r.u32()
	return e, nil
}

// cieAt parses the CIE at off.
func (t *Table) cieAt(off uint64) (*cie, error) {
	e, err := t.entryAt(off)
	if err != nil {
		return nil, err
	}
	if e.zero || e.id != 0 {
		return nil, fmt.Errorf("entry at %#x: not a CIE", off)
	}
	r := reader{b: t.eh[:e.end], off: int(e.body) + 4}
	c := &cie{off: off}
	version := r.u8()
	if version != 1 && version != 3 && version != 4 {
		return nil, fmt.Errorf("cie at %#x: unsupported version %d", off, version)
	}
	aug, err := r.cstring(maxAugmentation)
	if err != nil {
		return nil, fmt.Errorf("cie at %#x: augmentation: %w", off, err)
	}
	if len(aug) >= 2 && aug[:2] == "eh" {
		r.u64() // GCC 2's exception table pointer
		aug = aug[2:]
	}
	if version == 4 {
		if as := r.u8(); as != 8 && r.err == nil {
			return nil, fmt.Errorf("cie at %#x: address size %d", off, as)
		}
		if ss := r.u8(); ss != 0 && r.err == nil {
			return nil, fmt.Errorf("cie at %#x: segment selector size %d", off, ss)
		}
	}
	c.caf = r.uleb()
	c.daf = r.sleb()
	if version == 1 {
		c.ra = uint64(r.u8())
	} else {
		c.ra = r.uleb()
	}
	if aug != "" {
		if aug[0] != 'z' {
			return nil, fmt.Errorf("cie at %#x: unsupported augmentation %q", off, aug)
		}
		c.hasAug = true
		n := r.uleb()
		data := r.bytes(n)
		if r.err != nil {
			return nil, fmt.Errorf("cie at %#x: augmentation data: %w", off, r.err)
		}
		dataOff := uint64(r.off) - n
		ar := reader{b: data}
		ab := t.bases
		ab.addr += dataOff
	augLoop:
		for _, ch := range []byte(aug[1:]) {
			switch ch {
			case 'L':
				ar.u8() // LSDA encoding: only FDE augmentation data uses it
			case 'P':
				enc := ar.u8()
				if ar.err == nil {
					if _, _, err := ar.readPtr(enc, &ab); err != nil {
						return nil, fmt.Errorf("cie at %#x: personality: %w", off, err)
					}
				}
			case 'R':
				c.fdeEnc = ar.u8()
			case 'S':
				c.signal = true
			case 'B', 'G':
				// AArch64 pointer authentication and memory tagging.
			default:
				// The augmentation data's length lets us skip the rest.
				break augLoop
			}
		}
		if ar.err != nil {
			return nil, fmt.Errorf("cie at %#x: augmentation data: %w", off, ar.err)
		}
	}
	if r.err != nil {
		return nil, fmt.Errorf("cie at %#x: %w", off, r.err)
	}
	if c.caf == 0 {
		return nil, fmt.Errorf("cie at %#x: code alignment factor 0", off)
	}
	c.insnOff = uint64(r.off)
	c.insns = t.eh[r.off:e.end]
	return c, nil
}

// fdeAt parses the FDE at off. cies, if not nil, caches parsed CIEs by
// offset.
func (t *Table) fdeAt(off uint64, cies map[uint64]*cie) (*fde, error) {
	e, err := t.entryAt(off)
	if err != nil {
		return nil, err
	}
	if e.zero || e.id == 0 {
		return nil, fmt.Errorf("entry at %#x: not an FDE", off)
	}
	if uint64(e.id) > e.body {
		return nil, fmt.Errorf("fde at %#x: cie pointer %#x points before .eh_frame", off, e.id)
	}
	cieOff := e.body - uint64(e.id)
	c := cies[cieOff]
	if c == nil {
		c, err = t.cieAt(cieOff)
		if err != nil {
			return nil, fmt.Errorf("fde at %#x: %w", off, err)
		}
		if cies != nil {
			cies[cieOff] = c
		}
	}
	r := reader{b: t.eh[:e.end], off: int(e.body) + 4}
	start, ind, err := r.readPtr(c.fdeEnc, &t.bases)
	if err != nil {
		return nil, fmt.Errorf("fde at %#x: initial location: %w", off, err)
	}
	if ind {
		return nil, fmt.Errorf("fde at %#x: indirect initial location", off)
	}
	size, _, err := r.readPtr(c.fdeEnc&0x0f, &t.bases)
	if err != nil {
		return nil, fmt.Errorf("fde at %#x: address range: %w", off, err)
	}
	if c.hasAug {
		r.bytes(r.uleb())
	}
	if r.err != nil {
		return nil, fmt.Errorf("fde at %#x: %w", off, r.err)
	}
	end := start + size
	if end < start {
		end = ^uint64(0)
	}
	return &fde{
		off:     off,
		cie:     c,
		start:   start,
		end:     end,
		insns:   t.eh[r.off:e.end],
		insnOff: uint64(r.off),
	}, nil
}

// errNoFDE is wrapped by find when no FDE covers an address.
var errNoFDE = errors.New("no fde covers the address")

// find returns the FDE that covers the virtual address pc.
func (t *Table) find(pc uint64) (*fde, error) {
	var off uint64
	if t.hdrN > 0 {
		// Last entry whose initial location is <= pc.
		i := sort.Search(t.hdrN, func(i int) bool {
			loc, _, _ := t.hdrEntry(i)
			return loc > pc
		})
		if i == 0 {
			return nil, fmt.Errorf("%#x: %w", pc, errNoFDE)
		}
		_, addr, err := t.hdrEntry(i - 1)
		if err != nil {
			return nil, fmt.Errorf("eh_frame_hdr entry %d: %w", i-1, err)
		}
		off = addr - t.bases.addr
	} else {
		i := sort.Search(len(t.idx), func(i int) bool { return t.idx[i].pc > pc })
		if i == 0 {
			return nil, fmt.Errorf("%#x: %w", pc, errNoFDE)
		}
		off = t.idx[i-1].off
	}
	f, err := t.fdeAt(off, nil)
	if err != nil {
		return nil, err
	}
	if pc < f.start || pc >= f.end {
		return nil, fmt.Errorf("%#x: %w", pc, errNoFDE)
	}
	return f, nil
}

// Function returns the addresses [start, end) that the FDE covering pc
// describes: in code a compiler wrote, the function (or the part of one it
// moved out of line) holding pc. ok is false when no FDE covers pc.
func (t *Table) Function(pc uint64) (start, end uint64, ok bool) {
	f, err := t.find(pc)
	if err != nil {
		return 0, 0, false
	}
	return f.start, f.end, true
}

// hdrEntry decodes entry i of the .eh_frame_hdr search table: the first
// address an FDE covers and the FDE's address.
func (t *Table) hdrEntry(i int) (loc, fdeAddr uint64, err error) {
	r := reader{b: t.hdr, off: t.hdrTab + i*t.hdrEnt}
	loc, _, err = r.readPtr(t.hdrEnc, &t.hdrBases)
	if err != nil {
		return 0, 0, err
	}
	fdeAddr, _, err = r.readPtr(t.hdrEnc, &t.hdrBases)
	return loc, fdeAddr, err
}

// useHdr sets up the .eh_frame_hdr search table when it is well formed:
// version 1, fixed-size entries that fit in the section, sorted, and
// pointing into .eh_frame. It reports whether it did.
func (t *Table) useHdr() bool {
	r := reader{b: t.hdr}
	version := r.u8()
	ptrEnc := r.u8()
	countEnc := r.u8()
	tabEnc := r.u8()
	if r.err != nil || version != 1 || ptrEnc == peOmit || countEnc == peOmit || tabEnc == peOmit {
		return false
	}
	ehAddr, ind, err := r.readPtr(ptrEnc, &t.hdrBases)
	if err != nil || ind || ehAddr != t.bases.addr {
		return false
	}
	count, ind, err := r.readPtr(countEnc, &t.hdrBases)
	if err != nil || ind {
		return false
	}
	size := ptrSize(tabEnc)
	if size == 0 || tabEnc&peIndirect != 0 || count == 0 || count > uint64(r.left()/(2*size)) {
		return false
	}
	t.hdrEnc, t.hdrTab, t.hdrEnt, t.hdrN = tabEnc, r.off, 2*size, int(count)
	prev := uint64(0)
	for i := range t.hdrN {
		loc, addr, err := t.hdrEntry(i)
		if err != nil || loc < prev || addr < t.bases.addr || addr-t.bases.addr >= uint64(len(t.eh)) {
			t.hdrN = 0
			return false
		}
		prev = loc
	}
	return true
}

// scan builds the FDE index from the records of .eh_frame. It skips FDEs
// it cannot parse and stops at a zero terminator or a record whose length
// is malformed. The error is the first problem met, or nil.
func (t *Table) scan() error {
	var first error
	cies := make(map[uint64]*cie)
	for off := uint64(0); off < uint64(len(t.eh)); {
		e, err := t.entryAt(off)
		if err != nil {
			if first == nil {
				first = err
			}
			break
		}
		if e.zero {
			break
		}
		if e.id != 0 {
			f, err := t.fdeAt(off, cies)
			switch {
			case err != nil:
				if first == nil {
					first = err
				}
			case f.end > f.start:
				t.idx = append(t.idx, fdeRef{pc: f.start, off: off})
			}
		}
		off = e.end
	}
	sort.SliceStable(t.idx, func(i, j int) bool { return t.idx[i].pc < t.idx[j].pc })
	return first
}
