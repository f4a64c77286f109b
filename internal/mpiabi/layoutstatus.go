package mpiabi

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
func CommLayoutStatus(f *elf.File, fl Flavour, display string, p LiveProcess) (LayoutStatus, CommLayout) {
	st := LayoutStatus{File: display, Struct: CommLayoutStruct}
	st.BuildID, _ = elfx.BuildID(f)
	res, err := ResolveCommLayout(f, fl, st.BuildID, p)
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
// inferred from its code, else unknown. debugDirs and libmpi are as for
// ResolveFreeListLayout; root is the root directory of the file's
// processes, whose dpkg database names the debug package when the layout
// is unknown (elfx.WithPackage).
func FreeListLayoutStatus(f *elf.File, display string, debugDirs []string, libmpi, root string) LayoutStatus {
	st := LayoutStatus{File: display, Struct: FreeListStruct}
	st.BuildID, _ = elfx.BuildID(f)
	l, src, err := ResolveFreeListLayout(f, st.BuildID, debugDirs, libmpi)
	err = elfx.WithPackage(err, root, display)
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
		st.Reason = fmt.Sprintf("%s layout unknown", FreeListStruct)
	}
	return st
}

// The request layouts of MPICH in a LayoutStatus.
const (
	MPICHRequestStruct = "MPIR_Request"
	UCPRequestStruct   = "ucp request"
)

// MPICHSources is how MPIR_Request's header is known for an MPICH build
// the table does not hold: as the sources of every MPICH 4.0 to 4.2
// declare it (probes.MPICHReqHeader), an assumption rather than an
// inference.
const MPICHSources layout.How = "assumed: MPICH 4.x sources"

// MPICHRequestLayoutStatus lists where an MPICH build (libmpich, its file
// f, shown as display) keeps a request's kind and completion, for
// `mpiprobe probes`, with the source of each field.
func MPICHRequestLayoutStatus(f *elf.File, display string) LayoutStatus {
	st := LayoutStatus{File: display, Struct: MPICHRequestStruct}
	st.BuildID, _ = elfx.BuildID(f)
	l, known := MPICHReqLayoutOf(st.BuildID)
	how := layout.Verified
	if !known {
		l, how = MPICHReqHeader(), MPICHSources
	}
	for _, fld := range []namedValue{
		{"handle kind", uint64(l.HandleKind)}, {"kind", uint64(l.KindOff)}, {"kind send", uint64(l.KindSend)},
		{"kind receive", uint64(l.KindRecv)}, {"completion counter pointer", uint64(l.CCPtrOff)},
	} {
		st.Fields = append(st.Fields, LayoutField{Name: fld.name, Value: fld.v, How: how})
	}
	if dev, _ := MPICHDevice(f); strings.HasPrefix(dev, "ch3:") {
		st.Fields = append(st.Fields, LayoutField{Name: "match (ch3)", How: layout.Unknown,
			Note: "learnt by status from the first posted receive it reads"})
	} else if known && l.UCPReqOff != 0 {
		st.Fields = append(st.Fields, LayoutField{Name: "UCX request", Value: uint64(l.UCPReqOff), How: layout.Verified})
	} else {
		st.Fields = append(st.Fields, LayoutField{Name: "UCX request", How: layout.Unknown,
			Note: "found by status in each request: the pointer whose UCX request points back"})
	}
	return st
}

// UCPRequestLayoutStatus lists where a libucp build (its file f, shown as
// display) keeps a tag request's fields, for `mpiprobe probes`.
func UCPRequestLayoutStatus(f *elf.File, display string) LayoutStatus {
	st := LayoutStatus{File: display, Struct: UCPRequestStruct}
	st.BuildID, _ = elfx.BuildID(f)
	l, known := UCPReqLayoutOf(st.BuildID)
	for _, fld := range []struct {
		name string
		off  int32
	}{
		{"receive tag", l.RecvTagOff}, {"receive tag mask", l.RecvMaskOff}, {"receive user data", l.RecvUserOff},
		{"send tag", l.SendTagOff}, {"send user data", l.SendUserOff},
	} {
		lf := LayoutField{Name: fld.name, Value: uint64(int64(fld.off)), How: layout.Verified,
			Note: fmt.Sprintf("%#x from the pointer UCX hands MPICH", fld.off)}
		if !known {
			lf = LayoutField{Name: fld.name, How: layout.Unknown,
				Note: "learnt by status from the first requests it reads (a receive's tag and mask, a send's tag)"}
		}
		st.Fields = append(st.Fields, lf)
	}
	return st
}
