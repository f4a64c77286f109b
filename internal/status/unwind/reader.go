package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// errTruncated is returned when a read runs past the end of its data.
var errTruncated = errors.New("truncated data")

// reader reads little-endian values from b starting at off. The first read
// past the end of b sets err; later reads return zero and keep that error,
// so a caller can read a whole record and check err once.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) left() int {
	if r.off >= len(r.b) {
		return 0
	}
	return len(r.b) - r.off
}

func (r *reader) done() bool { return r.err != nil || r.off >= len(r.b) }

func (r *reader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(r.left()) {
		r.err = errTruncated
		r.off = len(r.b)
		return nil
	}
	p := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return p
}

func (r *reader) u8() uint8 {
	p := r.bytes(1)
	if p == nil {
		return 0
	}
	return p[0]
}

func (r *reader) u16() uint16 {
	p := r.bytes(2)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(p)
}

func (r *reader) u32() uint32 {
	p := r.bytes(4)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(p)
}

func (r *reader) u64() uint64 {
	p := r.bytes(8)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

// uleb reads an unsigned LEB128 number. Bits beyond the 64th are dropped;
// an encoding longer than the data sets err.
func (r *reader) uleb() uint64 { return r.leb(false) }

// sleb reads a signed LEB128 number.
func (r *reader) sleb() int64 { return int64(r.leb(true)) }

// leb reads a LEB128 number for uleb and sleb: the low 64 bits of its
// value, sign-extended if signed. If the data ends first it sets err and
// returns 0.
func (r *reader) leb(signed bool) uint64 {
	var v uint64
	var shift uint
	for {
		c := r.u8()
		if r.err != nil {
			return 0
		}
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			if signed && shift < 64 && c&0x40 != 0 {
				v |= ^uint64(0) << shift
			}
			return v
		}
	}
}

// cstring reads a NUL-terminated string of at most max bytes.
func (r *reader) cstring(max int) (string, error) {
	if r.err != nil {
		return "", r.err
	}
	for i := r.off; i < len(r.b) && i-r.off <= max; i++ {
		if r.b[i] == 0 {
			s := string(r.b[r.off:i])
			r.off = i + 1
			return s, nil
		}
	}
	return "", errors.New("unterminated or overlong string")
}

// Pointer encodings (DW_EH_PE_*) of .eh_frame and .eh_frame_hdr, as the
// Linux Standard Base defines them.
const (
	peAbsptr  = 0x00
	peUleb128 = 0x01
	peUdata2  = 0x02
	peUdata4  = 0x03
	peUdata8  = 0x04
	peSleb128 = 0x09
	peSdata2  = 0x0a
	peSdata4  = 0x0b
	peSdata8  = 0x0c

	pePcrel   = 0x10
	peTextrel = 0x20
	peDatarel = 0x30
	peFuncrel = 0x40
	peAligned = 0x50

	peIndirect = 0x80
	peOmit     = 0xff
)

// ptrSize returns the size of a fixed-size pointer encoding, or 0 for the
// variable-size (LEB128) and unknown ones.
func ptrSize(enc byte) int {
	switch enc & 0x0f {
	case peAbsptr, peUdata8, peSdata8:
		return 8
	case peUdata2, peSdata2:
		return 2
	case peUdata4, peSdata4:
		return 4
	}
	return 0
}

// ptrBases holds the base addresses the relative pointer encodings add.
// addr is the virtual address of r.b[0], so that the field at r.off is at
// addr+r.off (the DW_EH_PE_pcrel base).
type ptrBases struct {
	addr    uint64
	data    uint64 // DW_EH_PE_datarel: the address of .eh_frame_hdr
	hasData bool
	text    uint64 // DW_EH_PE_textrel: the address of .text
	hasText bool
}

// readPtr reads a pointer in encoding enc. It returns the value and
// whether it is indirect (the address of the pointer, not the pointer).
func (r *reader) readPtr(enc byte, b *ptrBases) (v uint64, indirect bool, err error) {
	if enc == peOmit {
		return 0, false, errors.New("omitted pointer")
	}
	if enc&0x70 == peAligned {
		if rem := (b.addr + uint64(r.off)) % 8; rem != 0 {
			r.bytes(8 - rem)
		}
		enc = enc&^0x7f | peAbsptr
	}
	field := b.addr + uint64(r.off)
	switch enc & 0x0f {
	case peAbsptr, peUdata8, peSdata8:
		v = r.u64()
	case peUleb128:
		v = r.uleb()
	case peUdata2:
		v = uint64(r.u16())
	case peSdata2:
		v = uint64(int64(int16(r.u16())))
	case peUdata4:
		v = uint64(r.u32())
	case peSdata4:
		v = uint64(int64(int32(r.u32())))
	case peSleb128:
		v = uint64(r.sleb())
	default:
		return 0, false, fmt.Errorf("unknown pointer format %#x", enc)
	}
	if r.err != nil {
		return 0, false, r.err
	}
	switch enc & 0x70 {
	case peAbsptr:
	case pePcrel:
		v += field
	case peDatarel:
		if !b.hasData {
			return 0, false, errors.New("datarel pointer without .eh_frame_hdr")
		}
		v += b.data
	case peTextrel:
		if !b.hasText {
			return 0, false, errors.New("textrel pointer without .text")
		}
		v += b.text
	default:
		return 0, false, fmt.Errorf("unsupported pointer application %#x", enc&0x70)
	}
	return v, enc&peIndirect != 0, nil
}
