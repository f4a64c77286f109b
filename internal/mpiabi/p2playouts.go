package mpiabi

import (
	"debug/elf"
	"errors"
	"fmt"

	"github.com/mpiprobe/mpiprobe/internal/elfx"
)

// OB1Layout says where one build of Open MPI's ob1 point-to-point layer
// (mca_pml_ob1.so) keeps what a request waits for. Offsets are in bytes
// from the request object; class addresses are the file's virtual
// addresses.
type OB1Layout struct {
	// RecvClass and SendClass are mca_pml_ob1_{recv,send}_request_t_class:
	// the first word of every receive and send request.
	RecvClass, SendClass uint64
	// StateOff is ompi_request_t.req_state (an int; StateActive while the
	// request is in flight); CompleteOff is req_complete (a pointer-sized
	// word, CompleteDone once completed).
	StateOff, StateActive, CompleteOff uint32
	CompleteDone                       uint64
	// TypeOff is mca_pml_base_request_t.req_type (TypeSend, TypeRecv);
	// CommOff its req_comm pointer; PeerOff and TagOff the int32 req_peer
	// (a rank of req_comm, AnySource for MPI_ANY_SOURCE) and req_tag.
	TypeOff, TypeSend, TypeRecv uint32
	// TypeProbe is req_type of the receive request MPI_Probe posts
	// (MCA_PML_REQUEST_PROBE), TypeMProbe the one MPI_Mprobe posts
	// (MCA_PML_REQUEST_MPROBE): they wait for a send as a receive does.
	TypeProbe, TypeMProbe    uint32
	CommOff, PeerOff, TagOff uint32
	// AnySource and AnyTag are the library's MPI_ANY_SOURCE and MPI_ANY_TAG.
	AnySource, AnyTag int32
	// RemoteGroupOff is ompi_communicator_t.c_remote_group; in the group,
	// CountOff is grp_proc_count and ProcsOff grp_proc_pointers, whose
	// entries are ompi_proc_t pointers (VpidOff: the WORLD rank in the
	// process name) or, with the low bit set, sentinels holding the vpid
	// in their upper 32 bits.
	RemoteGroupOff, CountOff, ProcsOff, VpidOff uint32
}

// ob1Layouts holds the mca_pml_ob1.so builds whose request layout was
// checked, by GNU build id.
var ob1Layouts = map[string]OB1Layout{
	// Debian 12 Open MPI 4.1.4 (libopenmpi3 4.1.4-3+b1): class symbols from
	// nm -D; offsets from offsetof() against the installed headers
	// (ompi/mca/pml/base/pml_base_request.h, ompi/group/group.h,
	// ompi/proc/proc.h; TestOB1LayoutFromDWARF reads them from
	// testdata/ob1_layout.c's DWARF) and checked on live blocked MPI_Recv,
	// MPI_Send and MPI_Waitall requests.
	"cc5a7ec5e99993dcc0c52e06d8a1f2b4699cac25": {
		RecvClass: 0x23ee0, SendClass: 0x23f20,
		StateOff: 96, StateActive: 2, CompleteOff: 88, CompleteDone: 1,
		TypeOff: 168, TypeSend: 1, TypeRecv: 2, TypeProbe: 4, TypeMProbe: 6,
		CommOff: 176, PeerOff: 472, TagOff: 476,
		AnySource: -1, AnyTag: -1,
		RemoteGroupOff: 256, CountOff: 16, ProcsOff: 32, VpidOff: 44,
	},
}

// OB1LayoutOf returns the request layout of an mca_pml_ob1.so build (none
// with the tables off: NoVerifiedLayoutsEnv).
func OB1LayoutOf(buildID string) (OB1Layout, bool) {
	if !verifiedLayoutsOn() {
		return OB1Layout{}, false
	}
	l, ok := ob1Layouts[buildID]
	return l, ok
}

// MPICHReqLayout says where one libmpich build keeps a request's state
// (MPIR_Request) and, for the ch4:ucx device, its UCX request.
type MPICHReqLayout struct {
	// HandleKind is the object kind of request handles (bits 26-29).
	HandleKind uint32
	// KindOff is MPIR_Request.kind (KindSend, KindRecv); CCPtrOff its
	// cc_ptr, which points to the completion counter (0: complete).
	KindOff, KindSend, KindRecv, CCPtrOff uint32
	// UCPReqOff is the pointer to the UCX request (dev.ch4 netmod part).
	UCPReqOff uint32
	// AnySource and AnyTag are the library's MPI_ANY_SOURCE and MPI_ANY_TAG.
	AnySource, AnyTag int32
	// The UCX tag MPICH builds: context id in bits 63..48, the source
	// rank in bits 47..32 (a receive's wanted source; a send's own rank),
	// the tag in the low 32 bits, of which TagBits are the MPI tag.
	TagBits uint32
}

// mpichReqLayouts holds the libmpich builds whose request layout was
// checked, by GNU build id.
var mpichReqLayouts = map[string]MPICHReqLayout{
	// Debian 12 MPICH 4.0.2 (libmpich12 4.0.2-3), ch4:ucx: measured on
	// live blocked MPI_Recv, MPI_Send and MPI_Waitall requests (handle
	// 0xac000000 = direct request 0, kind 1 send / 2 receive, cc_ptr at 0x10
	// pointing to cc at 0x18, the UCX request at 0xb0).
	debianMPICH: {
		HandleKind: 0xb, KindOff: 8, KindSend: 1, KindRecv: 2, CCPtrOff: 0x10,
		UCPReqOff: 0xb0, AnySource: -2, AnyTag: -1, TagBits: 29,
	},
}

// MPICHReqHeader returns the request layout every MPICH from 4.0 to 4.2
// with ch4:ucx shares, as their sources declare it (mpir_request.h:
// handle, ref_count, kind, cc_ptr first; request handles of kind 0xb;
// mpir_tags.h and ucx_types.h: the UCX tag's 16-bit context id and rank
// and 29-bit MPI tag; MPI_ANY_SOURCE -2, MPI_ANY_TAG -1), for builds the
// table does not hold. Where the UCX request pointer lies depends on the
// build's configuration: UCPReqOff is 0, and a reader finds it in each
// request by the pointer back to the request that UCX's request holds.
func MPICHReqHeader() MPICHReqLayout {
	l := mpichReqLayouts[debianMPICH]
	l.UCPReqOff = 0
	return l
}

// MPICHReqLayoutOf returns the request layout of a libmpich build.
func MPICHReqLayoutOf(buildID string) (MPICHReqLayout, bool) {
	if !verifiedLayoutsOn() {
		return MPICHReqLayout{}, false
	}
	l, ok := mpichReqLayouts[buildID]
	return l, ok
}

// UCPReqLayout says where one libucp build keeps, relative to the request
// pointer it hands to MPICH, what a tag request waits for. Offsets are
// signed: UCX's own request precedes the user's part.
type UCPReqLayout struct {
	// RecvTagOff and RecvMaskOff are an expected receive's tag and tag
	// mask; RecvUserOff holds the user data (MPICH's MPIR_Request).
	RecvTagOff, RecvMaskOff, RecvUserOff int32
	// SendTagOff is a send's tag; SendUserOff holds MPICH's MPIR_Request
	// (the first word of the user's part).
	SendTagOff, SendUserOff int32
}

// ucpReqLayouts holds the libucp builds whose request layout was checked,
// by GNU build id.
var ucpReqLayouts = map[string]UCPReqLayout{
	// Debian 12 UCX 1.13 (libucx0 1.13.1-1), libucp.so.0: measured under
	// MPICH 4.0.2 on live blocked receives (tag and mask at -0x50, -0x48,
	// user data at -0x100) and rendezvous sends (tag at -0x60).
	"22f8d37b580aa9aa63c01be332aaaed689ae0529": {
		RecvTagOff: -0x50, RecvMaskOff: -0x48, RecvUserOff: -0x100,
		SendTagOff: -0x60, SendUserOff: 0,
	},
}

// UCPReqLayoutOf returns the request layout of a libucp build.
func UCPReqLayoutOf(buildID string) (UCPReqLayout, bool) {
	if !verifiedLayoutsOn() {
		return UCPReqLayout{}, false
	}
	l, ok := ucpReqLayouts[buildID]
	return l, ok
}

// FrameSlot is where an MPI API function keeps a value while it waits: a
// callee-saved register (Reg, its DWARF number, read where the callees'
// call-frame information says they saved it) or, with Reg < 0, the int32
// at Off bytes above the function's stack pointer.
type FrameSlot struct {
	Reg int
	Off uint32
}

// MPICHFrameArgs says where one libmpich build's API function keeps,
// while it waits in one of its calls, the arguments its requests do not
// hold (a send's destination lives with UCX's endpoint; a probe has no
// request).
type MPICHFrameArgs struct {
	// RetPCs are the return addresses (file addresses) of the calls the
	// function waits in: the slots hold only there.
	RetPCs []uint64
	// Peer is the destination or source rank (of the communicator),
	// Tag the tag.
	Peer, Tag FrameSlot
	// ReqOff, if not 0, is the frame slot of the MPIR_Request pointer
	// (a 64-bit word), which must be the request read.
	ReqOff uint32
	// CommOff and HandleOff, if not 0, are the frame slots of the
	// MPIR_Comm pointer and of the handle it must carry.
	CommOff, HandleOff uint32
	// Handle, when HasHandle, is where the call's communicator handle
	// argument is: the object it names must be the communicator of the
	// request read (a send), or is the probe's.
	Handle    FrameSlot
	HasHandle bool
	// NoTag says the tag's home is not known (Tag means nothing).
	NoTag bool
	// Inferred says the slots come from decoding the function's code
	// (InferMPICHFrameArgs), not from the table of checked builds.
	Inferred bool
	// PeerMaybe says the inferred peer's place holds it on some paths to
	// the return address only (layout.Home.Maybe): a peer read there is
	// given as inferred, not as read from the library.
	PeerMaybe bool
}

// mpichFrameArgs holds, by libmpich build id and MPI call, the frames
// checked (objdump -d of the functions, then live blocked calls).
var mpichFrameArgs = map[string]map[string]MPICHFrameArgs{
	// Debian 12 MPICH 4.0.2 (libmpich12 4.0.2-3).
	debianMPICH: {
		// PMPI_Ssend (0x16bd70) keeps dest in r12 (from ecx) and tag at
		// 0x8(%rsp) (from r8d); it waits for the request at 0x18(%rsp)
		// in the call at 0x16c2f0.
		"MPI_Ssend": {
			RetPCs: []uint64{0x16c2f5},
			Peer:   FrameSlot{Reg: 12}, Tag: FrameSlot{Reg: -1, Off: 0x8}, ReqOff: 0x18,
		},
		// PMPI_Probe (0x15cd30) loops over ucp_tag_probe_nb and progress
		// (returns 0x15cf40, 0x15cfca, 0x15cfe4) with the source at
		// 0x14(%rsp), the MPIR_Comm at 0x8(%rsp), the comm handle at
		// 0x20(%rsp) and the tag in r14.
		"MPI_Probe": {
			RetPCs: []uint64{0x15cf40, 0x15cfca, 0x15cfe4},
			Peer:   FrameSlot{Reg: -1, Off: 0x14}, Tag: FrameSlot{Reg: 14},
			CommOff: 0x8, HandleOff: 0x20,
		},
	},
}

// MPICHFrameArgsOf returns where a libmpich build's call keeps its
// arguments while it waits.
func MPICHFrameArgsOf(buildID, call string) (MPICHFrameArgs, bool) {
	if !verifiedLayoutsOn() {
		return MPICHFrameArgs{}, false
	}
	a, ok := mpichFrameArgs[buildID][call]
	return a, ok
}

// OB1LayoutFromDWARF reads the request layout of an Open MPI build from the
// DWARF of its libmpi.so (libmpi) and the class symbols of its
// mca_pml_ob1.so (ob1), for builds the table does not hold. Open MPI
// compiles its debugger support (ompi/debuggers/ompi_debuggers.c) with -g
// whatever the configure line says, so an unstripped libmpi.so describes
// ompi_request_t, mca_pml_base_request_t, ompi_communicator_t, ompi_group_t
// and opal_proc_t, and the enums of request states and types. What no
// DWARF holds is taken from the MPI standard's constants as every Open MPI
// release defines them: REQUEST_COMPLETED is (void *)1, MPI_ANY_SOURCE and
// MPI_ANY_TAG are -1, and the vpid is the second 32-bit word of
// opal_process_name_t. The error names the first thing missing.
func OB1LayoutFromDWARF(libmpi, ob1 *elf.File) (OB1Layout, error) {
	var l OB1Layout
	syms, err := elfx.Defined(ob1)
	if err != nil {
		return l, fmt.Errorf("mca_pml_ob1.so: %w", err)
	}
	l.RecvClass = syms["mca_pml_ob1_recv_request_t_class"].Value
	l.SendClass = syms["mca_pml_ob1_send_request_t_class"].Value
	if l.RecvClass == 0 || l.SendClass == 0 {
		return l, errors.New("mca_pml_ob1.so defines no mca_pml_ob1_{recv,send}_request_t_class")
	}
	type want struct {
		strct  string
		fields []string
		into   []*uint32
	}
	var procName uint32
	for _, w := range []want{
		{"ompi_request_t", []string{"req_complete", "req_state"}, []*uint32{&l.CompleteOff, &l.StateOff}},
		{"mca_pml_base_request_t", []string{"req_type", "req_comm", "req_peer", "req_tag"}, []*uint32{&l.TypeOff, &l.CommOff, &l.PeerOff, &l.TagOff}},
		{"ompi_communicator_t", []string{"c_remote_group"}, []*uint32{&l.RemoteGroupOff}},
		{"ompi_group_t", []string{"grp_proc_count", "grp_proc_pointers"}, []*uint32{&l.CountOff, &l.ProcsOff}},
		{"opal_proc_t", []string{"proc_name"}, []*uint32{&procName}},
	} {
		offs, err := elfx.StructFields(libmpi, w.strct, w.fields...)
		if err != nil {
			return OB1Layout{}, fmt.Errorf("libmpi.so: %w", err)
		}
		for i, o := range offs {
			*w.into[i] = uint32(o)
		}
	}
	l.VpidOff = procName + 4
	vals, err := elfx.EnumValues(libmpi, "OMPI_REQUEST_ACTIVE", "MCA_PML_REQUEST_SEND", "MCA_PML_REQUEST_RECV", "MCA_PML_REQUEST_PROBE", "MCA_PML_REQUEST_MPROBE")
	if err != nil {
		return OB1Layout{}, fmt.Errorf("libmpi.so: %w", err)
	}
	l.StateActive, l.TypeSend, l.TypeRecv, l.TypeProbe, l.TypeMProbe = uint32(vals[0]), uint32(vals[1]), uint32(vals[2]), uint32(vals[3]), uint32(vals[4])
	l.CompleteDone = 1
	l.AnySource, l.AnyTag = -1, -1
	return l, nil
}
