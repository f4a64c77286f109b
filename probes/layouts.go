package probes

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mpiprobe/mpiprobe/bpf"
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

// DefaultDebugDirs are where separate debug files are looked up by build id
// (<dir>/.build-id/ab/cdef….debug), as gdb does.
var DefaultDebugDirs = []string{"/usr/lib/debug"}

// freeListStruct is the C struct whose layout ResolveFreeListLayout reads.
const freeListStruct = "opal_free_list_t"

// ResolveFreeListLayout returns the opal_free_list_t layout of one
// libopen-pal file and where it came from: the table of verified builds,
// else the DWARF of the file itself, else that of its separate debug file
// found by build id under debugDirs. The error says what is missing and how
// to provide it.
func ResolveFreeListLayout(f *elf.File, buildID string, debugDirs []string) (FreeListLayout, string, error) {
	if l, ok := freeListLayouts[buildID]; ok {
		return l, "verified build " + buildID, nil
	}
	if l, err := FreeListLayoutFromDWARF(f); err == nil {
		return l, "the library's own DWARF", nil
	}
	for _, dir := range debugDirs {
		p := DebugFile(dir, buildID)
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			continue
		}
		df, err := elf.Open(p)
		if err != nil {
			return FreeListLayout{}, "", fmt.Errorf("read debug file %s: %w", p, err)
		}
		l, err := FreeListLayoutFromDWARF(df)
		_ = df.Close()
		if err != nil {
			return FreeListLayout{}, "", fmt.Errorf("debug file %s: %w", p, err)
		}
		return l, "debug file " + p, nil
	}
	id := buildID
	if id == "" {
		id = "none"
	}
	return FreeListLayout{}, "", fmt.Errorf("layout of %s unknown for this build (build id %s): install its debug symbols under %s/.build-id/ or pass --debug-dir", freeListStruct, id, firstOr(debugDirs, DefaultDebugDirs[0]))
}

func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}

// DebugFile returns the path of the separate debug file of a build id under
// dir, or "" when the id is too short to name one.
func DebugFile(dir, buildID string) string {
	if len(buildID) < 3 {
		return ""
	}
	return filepath.Join(dir, ".build-id", buildID[:2], buildID[2:]+".debug")
}

// errNoStruct says a DWARF holds no complete opal_free_list_t.
var errNoStruct = errors.New("no complete " + freeListStruct + " in its DWARF")

// FreeListLayoutFromDWARF reads the layout of opal_free_list_t from an ELF
// file's DWARF: the first complete definition of the struct, which must
// have all three fields.
func FreeListLayoutFromDWARF(f *elf.File) (FreeListLayout, error) {
	if f.Section(".debug_info") == nil && f.Section(".zdebug_info") == nil {
		return FreeListLayout{}, errors.New("no DWARF")
	}
	d, err := f.DWARF()
	if err != nil {
		return FreeListLayout{}, fmt.Errorf("read DWARF: %w", err)
	}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return FreeListLayout{}, fmt.Errorf("read DWARF: %w", err)
		}
		if e == nil {
			return FreeListLayout{}, errNoStruct
		}
		if e.Tag != dwarf.TagStructType {
			if e.Tag != dwarf.TagCompileUnit && e.Children {
				r.SkipChildren() // structs at file scope are all this needs
			}
			continue
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		if decl, _ := e.Val(dwarf.AttrDeclaration).(bool); name != freeListStruct || decl {
			if e.Children {
				r.SkipChildren()
			}
			continue
		}
		t, err := d.Type(e.Offset)
		if err != nil {
			return FreeListLayout{}, fmt.Errorf("read DWARF type %s: %w", freeListStruct, err)
		}
		st, ok := t.(*dwarf.StructType)
		if !ok || st.Incomplete {
			continue
		}
		return freeListFields(st)
	}
}

// freeListFields picks the three fields out of the struct's members.
func freeListFields(st *dwarf.StructType) (FreeListLayout, error) {
	want := map[string]*uint32{}
	var l FreeListLayout
	want["fl_max_to_alloc"] = &l.MaxToAlloc
	want["fl_num_allocated"] = &l.NumAllocated
	want["fl_frag_class"] = &l.FragClass
	for _, fld := range st.Field {
		p, ok := want[fld.Name]
		if !ok {
			continue
		}
		if fld.ByteOffset < 0 || fld.ByteOffset > int64(maxLayoutOffset) {
			return FreeListLayout{}, fmt.Errorf("%s.%s at offset %d: out of range", freeListStruct, fld.Name, fld.ByteOffset)
		}
		*p = uint32(fld.ByteOffset)
		delete(want, fld.Name)
	}
	for name := range want {
		return FreeListLayout{}, fmt.Errorf("%s has no field %s", freeListStruct, name)
	}
	return l, l.check()
}

// flWord is the unit of the offsets a free-list cookie carries.
const flWord = uint32(bpf.MpiprobeFreeListLayoutFL_WORD)

// maxLayoutOffset is the largest offset a layout can carry in the attach
// cookie: FL_FIELD_BITS bits of 8-byte words.
const maxLayoutOffset = (1<<bpf.MpiprobeFreeListLayoutFL_FIELD_BITS - 1) * flWord

// check says whether the layout fits the attach cookie.
func (l FreeListLayout) check() error {
	for _, o := range []uint32{l.MaxToAlloc, l.NumAllocated, l.FragClass} {
		if o%flWord != 0 || o > maxLayoutOffset {
			return fmt.Errorf("%s field offset %d: want a multiple of %d up to %d", freeListStruct, o, flWord, maxLayoutOffset)
		}
	}
	return nil
}

// operand packs the layout into the cookie's operand bits (32-63) as the
// free-list programs read it (enum free_list_layout in bpf/counters.h):
// three counts of 8-byte words.
func (l FreeListLayout) operand() (int32, error) {
	if err := l.check(); err != nil {
		return 0, err
	}
	return int32(l.MaxToAlloc/flWord<<bpf.MpiprobeFreeListLayoutFL_MAX_TO_ALLOC_SHIFT |
		l.NumAllocated/flWord<<bpf.MpiprobeFreeListLayoutFL_NUM_ALLOCATED_SHIFT |
		l.FragClass/flWord<<bpf.MpiprobeFreeListLayoutFL_FRAG_CLASS_SHIFT), nil
}
