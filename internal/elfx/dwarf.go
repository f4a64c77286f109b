package elfx

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
)

// StructFields returns the byte offsets of fields in the C struct name as
// f's DWARF defines it, in the order of fields: the first complete
// definition at file scope, which must have every field. The error names
// what is missing ("no DWARF", "no complete opal_free_list_t in its
// DWARF", "opal_free_list_t has no field fl_max").
func StructFields(f *elf.File, name string, fields ...string) ([]int64, error) {
	if f.Section(".debug_info") == nil && f.Section(".zdebug_info") == nil {
		return nil, errors.New("no DWARF")
	}
	d, err := f.DWARF()
	if err != nil {
		return nil, fmt.Errorf("read DWARF: %w", err)
	}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("read DWARF: %w", err)
		}
		if e == nil {
			return nil, fmt.Errorf("no complete %s in its DWARF", name)
		}
		if e.Tag != dwarf.TagStructType {
			if e.Tag != dwarf.TagCompileUnit && e.Children {
				r.SkipChildren() // structs at file scope are all this needs
			}
			continue
		}
		n, _ := e.Val(dwarf.AttrName).(string)
		if decl, _ := e.Val(dwarf.AttrDeclaration).(bool); n != name || decl {
			if e.Children {
				r.SkipChildren()
			}
			continue
		}
		t, err := d.Type(e.Offset)
		if err != nil {
			return nil, fmt.Errorf("read DWARF type %s: %w", name, err)
		}
		st, ok := t.(*dwarf.StructType)
		if !ok || st.Incomplete {
			continue
		}
		return fieldOffsets(st, fields)
	}
}

// fieldOffsets picks the fields out of the struct's members.
func fieldOffsets(st *dwarf.StructType, fields []string) ([]int64, error) {
	out := make([]int64, len(fields))
	for i, name := range fields {
		found := false
		for _, fld := range st.Field {
			if fld.Name == name {
				out[i], found = fld.ByteOffset, true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%s has no field %s", st.StructName, name)
		}
	}
	return out, nil
}

// EnumValues returns the values of C enumerators (OMPI_REQUEST_ACTIVE, ...)
// as f's DWARF defines them, in the order of names. The error names the
// first one missing.
func EnumValues(f *elf.File, names ...string) ([]int64, error) {
	if f.Section(".debug_info") == nil && f.Section(".zdebug_info") == nil {
		return nil, errors.New("no DWARF")
	}
	d, err := f.DWARF()
	if err != nil {
		return nil, fmt.Errorf("read DWARF: %w", err)
	}
	want := map[string]int{}
	for i, n := range names {
		want[n] = i
	}
	out := make([]int64, len(names))
	found := make([]bool, len(names))
	left := len(names)
	r := d.Reader()
	for left > 0 {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("read DWARF: %w", err)
		}
		if e == nil {
			break
		}
		switch e.Tag {
		case dwarf.TagCompileUnit, dwarf.TagEnumerationType:
			continue // enumerators are their children
		case dwarf.TagEnumerator:
			n, _ := e.Val(dwarf.AttrName).(string)
			if i, ok := want[n]; ok && !found[i] {
				switch v := e.Val(dwarf.AttrConstValue).(type) {
				case int64:
					out[i], found[i] = v, true
					left--
				case uint64:
					out[i], found[i] = int64(v), true
					left--
				}
			}
			continue
		}
		if e.Children {
			r.SkipChildren()
		}
	}
	for i, ok := range found {
		if !ok {
			return nil, fmt.Errorf("no enumerator %s in its DWARF", names[i])
		}
	}
	return out, nil
}
