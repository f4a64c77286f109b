package probes

import (
	"debug/elf"
	"fmt"
	"strings"

	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/layout"
)

// LayoutStatus is the struct layout one library file's probes read, field
// by field with where each came from, as `mpiprobe probes` lists it.
type LayoutStatus struct {
	// File is the library's path as the process sees it.
	File    string `json:"file"`
	BuildID string `json:"build_id,omitempty"`
	// Struct names the layout: "communicator", "ob1 request" or
	// "opal_free_list_t".
	Struct string        `json:"struct,omitempty"`
	Fields []LayoutField `json:"fields,omitempty"`
	// TookSeconds is how long the inference took.
	TookSeconds float64 `json:"took_seconds,omitempty"`
	// Reason says why there is no layout at all.
	Reason string `json:"reason,omitempty"`
}

// CommLayoutStruct names the communicator layout in a LayoutStatus.
const CommLayoutStruct = "communicator"

// CommLayoutStatus resolves the communicator layout of an MPI C library
// file for a live process, as collective tracking and `mpiprobe status`
// do: the verified table, else inference. Fields inference could not find
// are listed as unknown with why.
// It also returns the layout, whose Kind is LayoutUnknown when none.
func CommLayoutStatus(f *elf.File, t Target, p LiveProcess) (LayoutStatus, CommLayout) {
	st := LayoutStatus{File: t.Display, Struct: CommLayoutStruct}
	st.BuildID, _ = elfx.BuildID(f)
	res, err := ResolveCommLayout(f, t.Library, st.BuildID, p)
	st.Fields = res.Fields
	st.TookSeconds = res.Took.Seconds()
	if err != nil {
		st.Reason = err.Error()
		res.Layout = CommLayout{}
	}
	return st, res.Layout
}

// FreeListLayoutStatus resolves the opal_free_list_t layout of a
// libopen-pal file as the attacher does: the verified table, else DWARF
// (the file's own, its debug file, or the libmpi.so beside it), else
// inferred from its code, else unknown.
func FreeListLayoutStatus(f *elf.File, t Target, debugDirs []string) LayoutStatus {
	st := LayoutStatus{File: t.Display, Struct: freeListStruct}
	st.BuildID, _ = elfx.BuildID(f)
	l, src, err := resolveFreeListLayout(f, st.BuildID, t.debugDirs(debugDirs), t.sibling(libmpiName))
	how, note := layout.DebugInfo, src
	switch {
	case err != nil:
		how, note = layout.Unknown, err.Error()
	case strings.HasPrefix(src, "verified build"):
		how, note = layout.Verified, ""
	case strings.HasPrefix(src, "the code of"):
		how = layout.AccessorOnly
	}
	for _, fld := range []struct {
		name string
		off  uint32
	}{{"fl_max_to_alloc", l.MaxToAlloc}, {"fl_num_allocated", l.NumAllocated}, {"fl_frag_class", l.FragClass}} {
		st.Fields = append(st.Fields, LayoutField{Name: fld.name, Value: uint64(fld.off), How: how, Note: note})
	}
	if err != nil {
		st.Reason = fmt.Sprintf("%s layout unknown", freeListStruct)
	}
	return st
}
