package mpiabi

import (
	"debug/elf"
	"errors"
	"fmt"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/layout"
)

// FreeListLayout says where one libopen-pal build keeps the opal_free_list_t
// fields the free-list programs read, as byte offsets from the list.
type FreeListLayout struct {
	MaxToAlloc   uint32 // size_t fl_max_to_alloc (0: unlimited)
	NumAllocated uint32 // size_t fl_num_allocated
	FragClass    uint32 // opal_class_t *fl_frag_class; the class's first field is its name
}

// freeListLayouts holds the libopen-pal builds whose opal_free_list_t layout
// was verified, by GNU build id. The layout changes with Open MPI's version
// and with its configuration (a debug build adds fields to every object), so
// a version number alone does not identify it.
var freeListLayouts = map[string]FreeListLayout{
	// Debian 12, libopenmpi3 4.1.4-3+b1: libopen-pal.so.40.30.2. Checked
	// three ways: offsetof() against the installed opal headers, their
	// DWARF, and the e2e test in which the list's maximum reads back as
	// btl_vader_free_list_max.
	"85e46cc75b438761041c473c7aab15698809b6f5": {MaxToAlloc: 80, NumAllocated: 88, FragClass: 144},
}

// FreeListStruct is the C struct whose layout ResolveFreeListLayout reads.
const FreeListStruct = "opal_free_list_t"

// LibMPIName is the name under which Open MPI installs libmpi.so beside
// libopen-pal.so.
const LibMPIName = "libmpi.so.40"

// ResolveFreeListLayout returns the opal_free_list_t layout of one
// libopen-pal file and where it came from: the table of verified builds,
// else the DWARF of the file itself, else that of its separate debug file
// found by build id under debugDirs, else that of libmpi (the libmpi.so of
// the same installation, "" for none): Open MPI compiles its debugger
// support into libmpi.so with -g whatever the configure line says, and
// that DWARF describes opal_free_list_t as libopen-pal was built with it;
// else inferred from the machine code of opal_free_list_grow_st
// (layout.InferFreeList). The error says what is missing and how to
// provide it.
func ResolveFreeListLayout(f *elf.File, buildID string, debugDirs []string, libmpi string) (FreeListLayout, string, error) {
	if l, ok := freeListLayouts[buildID]; ok && verifiedLayoutsOn() {
		return l, "verified build " + buildID, nil
	}
	if l, err := freeListLayoutFromDWARF(f); err == nil {
		return l, "the library's own DWARF", nil
	}
	df, p, err := elfx.OpenDebugFile(buildID, debugDirs)
	if err != nil {
		return FreeListLayout{}, "", err
	}
	if df != nil {
		l, err := freeListLayoutFromDWARF(df)
		_ = df.Close()
		if err != nil {
			return FreeListLayout{}, "", fmt.Errorf("debug file %s: %w", p, err)
		}
		return l, "debug file " + p, nil
	}
	if libmpi != "" {
		if mf, err := elf.Open(libmpi); err == nil {
			l, err := freeListLayoutFromDWARF(mf)
			_ = mf.Close()
			if err == nil {
				return l, "the DWARF of " + libmpi, nil
			}
		}
	}
	l, seen, codeErr := freeListLayoutFromCode(f)
	if codeErr == nil {
		how := "fl_frag_class by declaration order"
		if seen {
			how = "fl_frag_class by declaration order, loaded there too"
		}
		return l, "the code of opal_free_list_grow_st (" + how + ")", nil
	}
	dir := elfx.DefaultDebugDir
	if len(debugDirs) > 0 {
		dir = debugDirs[0]
	}
	return FreeListLayout{}, "", &elfx.MissingDebugError{What: "layout of " + FreeListStruct, BuildID: buildID, Dir: dir,
		Cause: "in no table, no DWARF, and its code did not decide it: " + codeErr.Error()}
}

// freeListLayoutFromDWARF reads the layout of opal_free_list_t from an ELF
// file's DWARF (see elfx.StructFields) and checks that it fits the cookie.
func freeListLayoutFromDWARF(f *elf.File) (FreeListLayout, error) {
	var l FreeListLayout
	fields := []struct {
		name string
		off  *uint32
	}{
		{"fl_max_to_alloc", &l.MaxToAlloc},
		{"fl_num_allocated", &l.NumAllocated},
		{"fl_frag_class", &l.FragClass},
	}
	names := make([]string, len(fields))
	for i, fld := range fields {
		names[i] = fld.name
	}
	offs, err := elfx.StructFields(f, FreeListStruct, names...)
	if err != nil {
		return FreeListLayout{}, err
	}
	for i, fld := range fields {
		if offs[i] < 0 || offs[i] > int64(MaxFreeListOffset) {
			return FreeListLayout{}, fmt.Errorf("%s.%s at offset %d: out of range", FreeListStruct, fld.name, offs[i])
		}
		*fld.off = uint32(offs[i])
	}
	return l, l.check()
}

// freeListLayoutFromCode infers the layout from the machine code of
// opal_free_list_grow_st (layout.InferFreeList), for a build without any
// DWARF; seen says the code also loads fl_frag_class where it is placed.
func freeListLayoutFromCode(f *elf.File) (FreeListLayout, bool, error) {
	syms, err := elfx.Defined(f)
	if err != nil {
		return FreeListLayout{}, false, err
	}
	s, ok := syms["opal_free_list_grow_st"]
	if !ok || elf.ST_TYPE(s.Info) != elf.STT_FUNC {
		return FreeListLayout{}, false, errors.New("no opal_free_list_grow_st")
	}
	code, err := textCode(f)
	if err != nil {
		return FreeListLayout{}, false, err
	}
	fl, err := layout.InferFreeList(code, s.Value, int(s.Size))
	if err != nil {
		return FreeListLayout{}, false, err
	}
	l := FreeListLayout{MaxToAlloc: uint32(fl.MaxToAlloc), NumAllocated: uint32(fl.NumAllocated), FragClass: uint32(fl.FragClass)}
	return l, fl.ClassSeen, l.check()
}

// FreeListWord is the unit of the offsets a free-list cookie carries.
const FreeListWord = uint32(bpf.MpiprobeFreeListLayoutFL_WORD)

// MaxFreeListOffset is the largest offset a layout can carry in the attach
// cookie: FL_FIELD_BITS bits of 8-byte words.
const MaxFreeListOffset = (1<<bpf.MpiprobeFreeListLayoutFL_FIELD_BITS - 1) * FreeListWord

// check says whether the layout fits the attach cookie.
func (l FreeListLayout) check() error {
	for _, o := range []uint32{l.MaxToAlloc, l.NumAllocated, l.FragClass} {
		if o%FreeListWord != 0 || o > MaxFreeListOffset {
			return fmt.Errorf("%s field offset %d: want a multiple of %d up to %d", FreeListStruct, o, FreeListWord, MaxFreeListOffset)
		}
	}
	return nil
}

// Operand packs the layout into the cookie's operand bits (32-63) as the
// free-list programs read it (enum free_list_layout in bpf/counters.h):
// three counts of 8-byte words.
func (l FreeListLayout) Operand() (int32, error) {
	if err := l.check(); err != nil {
		return 0, err
	}
	return int32(l.MaxToAlloc/FreeListWord<<bpf.MpiprobeFreeListLayoutFL_MAX_TO_ALLOC_SHIFT |
		l.NumAllocated/FreeListWord<<bpf.MpiprobeFreeListLayoutFL_NUM_ALLOCATED_SHIFT |
		l.FragClass/FreeListWord<<bpf.MpiprobeFreeListLayoutFL_FRAG_CLASS_SHIFT), nil
}
