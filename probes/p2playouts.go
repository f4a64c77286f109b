package probes

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
	CommOff, PeerOff, TagOff    uint32
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
	// ompi/proc/proc.h; see testdata/p2p_layout.c) and checked on live
	// blocked MPI_Recv, MPI_Send and MPI_Waitall requests.
	"cc5a7ec5e99993dcc0c52e06d8a1f2b4699cac25": {
		RecvClass: 0x23ee0, SendClass: 0x23f20,
		StateOff: 96, StateActive: 2, CompleteOff: 88, CompleteDone: 1,
		TypeOff: 168, TypeSend: 1, TypeRecv: 2,
		CommOff: 176, PeerOff: 472, TagOff: 476,
		AnySource: -1, AnyTag: -1,
		RemoteGroupOff: 256, CountOff: 16, ProcsOff: 32, VpidOff: 44,
	},
}

// OB1LayoutOf returns the request layout of an mca_pml_ob1.so build.
func OB1LayoutOf(buildID string) (OB1Layout, bool) {
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
	"15ff29242f0f6336eb8096d953e03de259b65bb4": {
		HandleKind: 0xb, KindOff: 8, KindSend: 1, KindRecv: 2, CCPtrOff: 0x10,
		UCPReqOff: 0xb0, AnySource: -2, AnyTag: -1, TagBits: 29,
	},
}

// MPICHReqLayoutOf returns the request layout of a libmpich build.
func MPICHReqLayoutOf(buildID string) (MPICHReqLayout, bool) {
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
	l, ok := ucpReqLayouts[buildID]
	return l, ok
}
