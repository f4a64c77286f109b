package layout

import (
	"errors"
	"fmt"
	"slices"

	"golang.org/x/arch/x86/x86asm"

	"github.com/mpiprobe/mpiprobe/internal/x86"
)

// FreeList is opal_free_list_t's layout as the free-list events read it:
// the offsets of fl_max_to_alloc, fl_num_allocated and fl_frag_class.
type FreeList struct {
	MaxToAlloc, NumAllocated, FragClass int64
	// ClassSeen says the code also loads fl_frag_class where the
	// declaration order puts it.
	ClassSeen bool
}

// The declaration of opal_free_list_t, the same from Open MPI 2.0 to 5.0:
// fl_max_to_alloc and fl_num_allocated are adjacent size_t fields, and
// fl_frag_class follows fl_max_to_alloc after eight of them (num_allocated,
// num_per_alloc, num_waiting, frag_size, frag_alignment,
// payload_buffer_size, payload_buffer_alignment).
const (
	flNumAfterMax   = 8
	flClassAfterMax = 8 * 8
)

// InferFreeList reads the layout of opal_free_list_t from the machine code
// of opal_free_list_grow_st(flist, num_elements, item_out), entry..entry+size,
// for a libopen-pal without debug info. The function begins
//
//	if (flist->fl_max_to_alloc &&
//	    flist->fl_num_allocated + num_elements > flist->fl_max_to_alloc)
//
// so its first load through flist that is tested against zero is
// fl_max_to_alloc, and the next load through flist, which must be the
// adjacent field, is fl_num_allocated. fl_frag_class is placed by the
// declaration order; ClassSeen says whether the code loads that field too.
// The code is decoded linearly from the entry to its end (golang.org/x/arch);
// the two loads are looked for before the first call, flist is followed
// through register copies, and the class load anywhere. It never panics on
// bad bytes: what it cannot decode is an error.
func InferFreeList(code Code, entry uint64, size int) (FreeList, error) {
	if size <= 0 || size > 1<<16 {
		return FreeList{}, fmt.Errorf("function size %d", size)
	}
	b := code(entry, size)
	if len(b) < size {
		return FreeList{}, errors.New("code not readable")
	}
	flist := map[x86asm.Reg]bool{x86asm.RDI: true}
	var loads, tested []int64 // through the list before the first call, in order
	var last x86asm.Reg       // the register the last such load wrote, while it holds it
	var lastOff int64
	var l FreeList
	called := false
	for off := 0; off < len(b); {
		in, err := x86.Decode(b[off:])
		if err == nil && in.Op == 0 {
			err = errors.New("a prefix without an instruction")
		}
		if err != nil {
			return FreeList{}, fmt.Errorf("decode at %#x: %v", entry+uint64(off), err)
		}
		off += in.Len
		if in.Op == x86asm.CALL {
			called = true
			for _, r := range []x86asm.Reg{x86asm.RAX, x86asm.RCX, x86asm.RDX, x86asm.RSI, x86asm.RDI, x86asm.R8, x86asm.R9, x86asm.R10, x86asm.R11} {
				delete(flist, r) // caller-saved: gone after the call
			}
			continue
		}
		if m, ok := in.Args[1].(x86asm.Mem); ok && in.Op == x86asm.MOV && flist[m.Base] && m.Index == 0 {
			if r, ok := in.Args[0].(x86asm.Reg); ok && x86.Is64(r) {
				if !called {
					loads = append(loads, m.Disp)
					last, lastOff = r, m.Disp
				}
				if len(tested) > 0 && m.Disp == tested[0]+flClassAfterMax {
					l.ClassSeen = true
				}
				delete(flist, r)
				continue
			}
		}
		if !called && last != 0 && testsZero(in, last) {
			tested = append(tested, lastOff)
		}
		if w, ok := in.Args[0].(x86asm.Reg); ok && fullReg(w) == last && in.Op != x86asm.TEST && in.Op != x86asm.CMP {
			last = 0
		}
		updateAliases(flist, in)
	}
	if len(tested) == 0 {
		return FreeList{}, errors.New("no load through the list tested against zero before the first call: not opal_free_list_grow_st's known shape")
	}
	l.MaxToAlloc = tested[0]
	i := slices.Index(loads, l.MaxToAlloc)
	for _, d := range loads[i+1:] {
		if d != l.MaxToAlloc {
			l.NumAllocated = d
			break
		}
	}
	switch {
	case l.NumAllocated == 0:
		return FreeList{}, fmt.Errorf("fl_max_to_alloc at %d, but no second load through the list before the first call", l.MaxToAlloc)
	case l.NumAllocated != l.MaxToAlloc+flNumAfterMax:
		return FreeList{}, fmt.Errorf("fl_max_to_alloc at %d and fl_num_allocated at %d are not adjacent, as every Open MPI declares them", l.MaxToAlloc, l.NumAllocated)
	case l.MaxToAlloc < 0 || l.MaxToAlloc > 1<<12:
		return FreeList{}, fmt.Errorf("fl_max_to_alloc at %d: out of range", l.MaxToAlloc)
	}
	l.FragClass = l.MaxToAlloc + flClassAfterMax
	return l, nil
}

// testsZero reports whether in compares r with zero: test r,r or cmp r,0.
func testsZero(in x86asm.Inst, r x86asm.Reg) bool {
	switch in.Op {
	case x86asm.TEST:
		a, ok1 := in.Args[0].(x86asm.Reg)
		b, ok2 := in.Args[1].(x86asm.Reg)
		return ok1 && ok2 && a == r && b == r
	case x86asm.CMP:
		a, ok1 := in.Args[0].(x86asm.Reg)
		imm, ok2 := in.Args[1].(x86asm.Imm)
		return ok1 && ok2 && a == r && imm == 0
	}
	return false
}

// updateAliases follows the registers holding the list pointer: a 64-bit
// register copy of one adds the destination; any other write to a register
// drops it.
func updateAliases(flist map[x86asm.Reg]bool, in x86asm.Inst) {
	dst, ok := in.Args[0].(x86asm.Reg)
	if !ok || in.Op == x86asm.TEST || in.Op == x86asm.CMP || in.Op == x86asm.PUSH {
		return
	}
	full := fullReg(dst)
	if in.Op == x86asm.MOV {
		if src, ok := in.Args[1].(x86asm.Reg); ok && x86.Is64(src) && x86.Is64(dst) {
			flist[dst] = flist[src]
			return
		}
	}
	delete(flist, full)
}

// fullReg maps a 32-bit register to its 64-bit one; others are returned as is.
func fullReg(r x86asm.Reg) x86asm.Reg {
	if r >= x86asm.EAX && r <= x86asm.R15L {
		return x86asm.RAX + (r - x86asm.EAX)
	}
	return r
}
