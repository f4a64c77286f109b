package mpiabi

import "github.com/mpiprobe/mpiprobe/bpf"

// CommLayoutKind says how a library represents MPI_Comm.
type CommLayoutKind uint32

// The communicator representations (enum comm_layout_kind in
// bpf/collectives.h).
const (
	// LayoutUnknown: the build is not in the table; communicators are
	// keyed by their rank-local handle and flagged as such.
	LayoutUnknown = CommLayoutKind(bpf.MpiprobeCommLayoutKindLAYOUT_UNKNOWN)
	// LayoutOMPI: MPI_Comm is an ompi_communicator_t pointer.
	LayoutOMPI = CommLayoutKind(bpf.MpiprobeCommLayoutKindLAYOUT_OMPI)
	// LayoutMPICH: MPI_Comm is an int handle into MPICH's object tables.
	LayoutMPICH = CommLayoutKind(bpf.MpiprobeCommLayoutKindLAYOUT_MPICH)
)

// CommLayout says where one library build keeps a communicator's
// identity. Offsets are in bytes; addresses are the file's virtual
// addresses. It mirrors struct coll_layout in bpf/collectives.h.
type CommLayout struct {
	Kind CommLayoutKind
	// CIDOff is the context id's offset in the communicator object, read
	// as 32 bits and masked with CIDMask.
	CIDOff, CIDMask uint32
	// RankOff is the offset of the caller's rank in the communicator.
	RankOff uint32
	// SizeOff is the offset of the group size: in the group object that
	// GroupOff points to (Open MPI), or in the communicator (MPICH).
	SizeOff, GroupOff uint32
	// NameOff and NameLen locate the communicator's name (MPI_Comm_set_name);
	// with NamePtr, NameOff holds a pointer to it (Open MPI 5.0).
	NameOff, NameLen uint32
	NamePtr          bool
	// ClassAddr (Open MPI) is the address of ompi_communicator_t_class,
	// which every communicator object holds at ClassOff (0, or 8 in a
	// debug build, whose objects start with a magic number).
	ClassAddr uint64
	ClassOff  uint32
	// MPICH: MPIR_Comm_builtin, MPIR_Comm_direct and MPIR_Comm_mem, the
	// size of an MPIR_Comm, and how indirect handles are decoded: the
	// block array pointer at IndBlocksOff in MPIR_Comm_mem, block =
	// (handle >> IndShift) & IndBlockMask, index = handle & IndIndexMask.
	Builtin, Direct, Mem                 uint64
	ObjSize, DirectCount, IndBlocksOff   uint32
	IndShift, IndBlockMask, IndIndexMask uint32
	// MapOff (MPICH ch4) is the offset of the communicator's rank map
	// (dev.ch4.map, an MPIDI_rank_map_t), which turns its ranks into
	// WORLD's; 0 when unknown.
	MapOff uint32
	// VCRTOff (MPICH ch3) is the offset of the communicator's connection
	// table pointer (dev.vcrt); in the table, VCRTSizeOff is its size and
	// VCRTEntriesOff its first MPIDI_VC_t pointer; VCRankOff is the
	// connection's rank in its process group (WORLD's rank for the job's
	// own processes). 0 when unknown.
	VCRTOff, VCRTSizeOff, VCRTEntriesOff, VCRankOff uint32
}

// commLayouts holds the library builds whose communicator layout was
// checked, by GNU build id. See ../shared/docs/mpi-internals.md and
// probes/collectives_test.go.
// debianMPICH is the GNU build id of Debian 12's libmpich.so.12.2.2
// (libmpich12 4.0.2-3), whose layouts the tables hold.
const debianMPICH = "15ff29242f0f6336eb8096d953e03de259b65bb4"

var commLayouts = map[string]CommLayout{
	// Debian 12 Open MPI 4.1.4 (libopenmpi3 4.1.4-3+b1), libmpi.so.40.30.4.
	"2a2f4d8c4f8dc5dcc63f6789a50f3ab49f61e168": {
		Kind: LayoutOMPI, CIDOff: 224, CIDMask: 0xffffffff, RankOff: 228,
		GroupOff: 248, SizeOff: 16, NameOff: 160, NameLen: 64,
		ClassAddr: 0x11d220,
	},
	// Debian 12 MPICH 4.0.2 (libmpich12 4.0.2-3), libmpich.so.12.2.2:
	// MPIR_Comm_builtin[3], MPIR_Comm_direct[8] and MPIR_Comm_mem found
	// through PMPI_Comm_rank's code; MPIR_Comm is 0x368 bytes with the
	// u16 context_id at 0x40, rank at 0x48, local_size at 0x58, name at
	// 0x74. Checked on 2,884 live communicators, direct and indirect.
	// The ch4 rank map (dev.ch4.map) at 0x310: PMPI_Probe tests its mode
	// against MPIDI_RANK_MAP_NONE (cmpl $0xb,0x310(%r15) at 0x15ce90).
	debianMPICH: {
		Kind: LayoutMPICH, CIDOff: 0x40, CIDMask: 0xffff, RankOff: 0x48, SizeOff: 0x58,
		NameOff: 0x74, NameLen: 128, MapOff: 0x310,
		Builtin: 0x27a48c0, Direct: 0x27a2d80, Mem: 0x279ffc0,
		ObjSize: 0x368, DirectCount: 8, IndBlocksOff: 0x10,
		IndShift: 12, IndBlockMask: 0x3fff, IndIndexMask: 0xfff,
	},
}

// CommLayoutOf returns the communicator layout of a library build from the
// table of verified builds; none when the table is turned off (see
// NoVerifiedLayoutsEnv). ResolveCommLayout also infers unknown builds.
func CommLayoutOf(buildID string) (CommLayout, bool) {
	if !verifiedLayoutsOn() {
		return CommLayout{}, false
	}
	l, ok := commLayouts[buildID]
	return l, ok
}
