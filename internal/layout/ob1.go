package layout

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// More ways a field is found, for layouts read from code that is not an
// accessor (Open MPI's ob1 request).
const (
	// ObjectsCode: the predefined objects hold the known values there,
	// and the library's code writes it.
	ObjectsCode How = "inferred: objects+code"
	// CodeTwice: two functions of the library write it.
	CodeTwice How = "inferred: code of two functions"
	// CodeOnly: one function of the library writes it.
	CodeOnly How = "inferred: code only"
)

// The fields of ob1's request layout, and of the groups it reads a peer's
// WORLD rank from.
const (
	FieldReqComplete   = "request completion"
	FieldReqDone       = "request completed value"
	FieldReqState      = "request state"
	FieldReqActive     = "request active value"
	FieldReqObject     = "request MPI object"
	FieldReqType       = "request type"
	FieldReqRecv       = "request receive type"
	FieldReqComm       = "request communicator"
	FieldReqPeer       = "request peer"
	FieldReqTag        = "request tag"
	FieldRemoteGroup   = "remote group"
	FieldGroupProcs    = "group processes"
	FieldProcVpid      = "process vpid"
	ob1RequestRecvType = 2 // MCA_PML_REQUEST_RECV in every release's enum
	requestInactive    = 1 // OMPI_REQUEST_INACTIVE
	requestActive      = 2 // OMPI_REQUEST_ACTIVE
	requestCompleted   = 1 // REQUEST_COMPLETED, (void *)1
)

// OB1RequestBytes is how much of each predefined request is read.
const OB1RequestBytes = 256

// OB1 holds what the request layout of Open MPI's ob1 is inferred from
// when no table and no DWARF give it.
type OB1 struct {
	// Null and Empty are the bytes of ompi_request_null and
	// ompi_request_empty (OB1RequestBytes each): MPI_Init sets both up
	// with known values (a completed request, inactive in Null and
	// active in Empty, both naming MPI_COMM_WORLD), World the run-time
	// address of ompi_mpi_comm_world they point to.
	Null, Empty []byte
	World       uint64
	// Irecv and Isend are the ObjectStores of mca_pml_ob1_irecv (one
	// argument on the stack) and mca_pml_ob1_isend (two): each fills in
	// the request it allocates with its peer, tag and communicator.
	Irecv, Isend []Store
	// RemoteSize is the analysis of PMPI_Comm_remote_size, which reads
	// c_remote_group->grp_proc_count.
	RemoteSize Facts
	// WorldComm and SelfComm are the bytes of the predefined
	// communicators (OMPIObjectSize each), GroupOff and CountOff where
	// the communicator layout found the group pointer and its size.
	WorldComm, SelfComm []byte
	GroupOff, CountOff  int64
	// Name is the process's own name, job id then vpid (its WORLD rank)
	// in the high half, when its environment gives it (Open MPI 4's
	// mpirun sets OMPI_MCA_ess_base_jobid and _vpid); 0 when unknown.
	Name uint64
	// Mem reads the groups and processes the communicators point to.
	Mem procfs.Memory
}

// InferOB1 locates the fields of ob1's requests (mca_pml_base_request_t
// and the ompi_request_t it starts with) and of the groups whose
// processes turn a communicator's rank into a WORLD rank. The error names
// the request fields it could not find; the group fields are given as
// unknown when not found (a peer is then given as a rank of its
// communicator).
func InferOB1(in OB1) (Result, error) {
	var r Result
	if len(u64s(in.Null, in.Empty, requestCompleted, requestCompleted)) == 0 {
		return r, errNotReady // MPI_Init has not set them up
	}
	irecv := func(arg, bytes int) []int64 { return storedArg(in.Irecv, arg, bytes) }
	isend := func(arg, bytes int) []int64 { return storedArg(in.Isend, arg, bytes) }

	// ompi_request_t: the objects and mca_pml_ob1_irecv's
	// OMPI_REQUEST_INIT (pending, inactive) agree.
	complete := decideCode(FieldReqComplete, u64s(in.Null, in.Empty, requestCompleted, requestCompleted), storedImm(in.Irecv, 0, 8))
	r.add(complete)
	if complete.Found() {
		r.add(Field{Name: FieldReqDone, Value: requestCompleted, How: ObjectsOnly, Note: "REQUEST_COMPLETED, which both objects hold"})
	}
	state := decideCode(FieldReqState, u32s(in.Null, in.Empty, requestInactive, requestActive, ^uint32(0), 4), storedImm(in.Irecv, requestInactive, 4))
	r.add(state)
	if state.Found() {
		r.add(Field{Name: FieldReqActive, Value: requestActive, How: ObjectsOnly, Note: "OMPI_REQUEST_ACTIVE, which ompi_request_empty holds"})
	}
	obj := decideCode(FieldReqObject, u64s(in.Null, in.Empty, in.World, in.World), irecv(5, 8))
	r.add(obj)

	// mca_pml_base_request_t: irecv and isend write their peer, tag and
	// communicator into it.
	comms, sent := irecv(5, 8), isend(6, 8)
	if len(sent) > 0 {
		comms = intersect(comms, sent)
	}
	if obj.Found() {
		comms = without(comms, int64(obj.Value))
	}
	comm := Field{Name: FieldReqComm, How: Unknown}
	switch {
	case len(comms) == 1:
		comm.Value, comm.How = uint64(comms[0]), CodeOnly
		if len(sent) > 0 {
			comm.How = CodeTwice
		}
		if obj.Found() {
			comm.Note = "the communicator's place other than the request's MPI object"
		}
	case len(comms) == 0:
		comm.Note = "mca_pml_ob1_irecv writes its communicator nowhere but the request's MPI object"
	default:
		comm.Note = "mca_pml_ob1_irecv writes its communicator at " + offs(comms)
	}
	r.add(comm)
	r.add(codeField(FieldReqPeer, irecv(3, 4), isend(3, 4)))
	r.add(codeField(FieldReqTag, irecv(4, 4), isend(4, 4)))

	// req_type is the int before req_comm (mca_pml_base_request_t of
	// 4.0 to 5.0); irecv sets it to MCA_PML_REQUEST_RECV.
	typ := Field{Name: FieldReqType, How: Unknown, Note: "the communicator is not found"}
	if comm.Found() && comm.Value >= 8 {
		off := int64(comm.Value) - 8
		typ.Note = fmt.Sprintf("mca_pml_ob1_irecv writes no constant at %#x, before the communicator", off)
		var imms []int64
		var written []string
		for _, s := range in.Irecv {
			if s.Arg < 0 && s.Off == off && s.Bytes == 4 {
				imms = append(imms, s.Imm)
				written = append(written, strconv.FormatInt(s.Imm, 10))
			}
		}
		switch {
		case len(imms) == 1 && imms[0] == ob1RequestRecvType:
			typ = Field{Name: FieldReqType, Value: uint64(off), How: CodeOnly, Note: "the int before the communicator, which mca_pml_ob1_irecv sets to MCA_PML_REQUEST_RECV"}
			r.add(Field{Name: FieldReqRecv, Value: ob1RequestRecvType, How: CodeOnly, Note: "the enum every release declares: SEND 1, RECV 2, PROBE 4"})
		case len(imms) > 0:
			typ.Note = fmt.Sprintf("mca_pml_ob1_irecv writes %s there, not MCA_PML_REQUEST_RECV (2)", strings.Join(written, ", "))
		}
	}
	r.add(typ)
	if miss := r.Missing(FieldReqComplete, FieldReqState, FieldReqComm, FieldReqPeer, FieldReqTag, FieldReqType); len(miss) > 0 {
		return r, fmt.Errorf("ob1's request layout: %s", miss[0])
	}
	in.groups(&r)
	return r, nil
}

// groups finds where a communicator keeps its remote group and where a
// group and a process keep the WORLD rank.
func (in OB1) groups(r *Result) {
	ow := func(b []byte, off int64) uint64 {
		if off < 0 || int(off)+8 > len(b) {
			return 0
		}
		return binary.LittleEndian.Uint64(b[off:])
	}
	gw, gs := ow(in.WorldComm, in.GroupOff), ow(in.SelfComm, in.GroupOff)
	// c_remote_group: an intracommunicator's is its local group.
	var objs []int64
	for off := int64(0); off+8 <= int64(min(len(in.WorldComm), len(in.SelfComm))); off += 8 {
		if off != in.GroupOff && gw != 0 && ow(in.WorldComm, off) == gw && ow(in.SelfComm, off) == gs {
			objs = append(objs, off)
		}
	}
	var acc []int64
	for _, s := range in.RemoteSize.Stores {
		if s.Arg == 1 && len(s.Chain) == 2 && s.Chain[1] == in.CountOff {
			acc = append(acc, s.Chain[0])
		}
	}
	rg := decide(FieldRemoteGroup, objs, acc)
	if !rg.Found() {
		rg = Field{Name: FieldRemoteGroup, Value: uint64(in.GroupOff), How: ObjectsOnly,
			Note: "the local group, which is an intracommunicator's remote group (" + rg.Note + ")"}
	}
	r.add(rg)
	procs, vpid := in.procs(gw, gs)
	r.add(procs)
	r.add(vpid)
}

// What is read of a group and of its process objects.
const (
	maxGroupScan = 64
	maxProcScan  = 256
	maxProcsRead = 64 // processes whose names are compared
)

// procs finds grp_proc_pointers in the groups of WORLD (gw) and SELF (gs):
// SELF's only process is WORLD's entry for this process. Then the vpid in
// a process's name: the entries of WORLD hold their own index there, and
// the same job id before it (entries not yet set up are sentinels that
// hold the vpid themselves).
func (in OB1) procs(gw, gs uint64) (Field, Field) {
	procs := Field{Name: FieldGroupProcs, How: Unknown, Note: "WORLD's and SELF's groups cannot be read"}
	vpid := Field{Name: FieldProcVpid, How: Unknown, Note: "the group's processes are not found"}
	bw, bs := make([]byte, maxGroupScan), make([]byte, maxGroupScan)
	if gw == 0 || gs == 0 || in.Mem == nil || in.Mem(gw, bw) != nil || in.Mem(gs, bs) != nil || int(in.CountOff)+4 > maxGroupScan {
		return procs, vpid
	}
	size := int(int32(binary.LittleEndian.Uint32(bw[in.CountOff:])))
	if size <= 0 || size > maxMembers {
		procs.Note = fmt.Sprintf("WORLD's group holds a size of %d", size)
		return procs, vpid
	}
	type cand struct {
		off     int64
		entries []uint64
	}
	var cands []cand
	for _, pp := range pointerPairs(bw, bs) {
		off, pw, ps := pp.off, pp.a, pp.b
		var self [8]byte
		entries := make([]byte, 8*size)
		if in.Mem(ps, self[:]) != nil || in.Mem(pw, entries) != nil {
			continue
		}
		me := binary.LittleEndian.Uint64(self[:])
		if me == 0 || me&1 != 0 {
			continue
		}
		es := make([]uint64, size)
		own, fits := 0, true
		for i := range es {
			e := binary.LittleEndian.Uint64(entries[8*i:])
			switch {
			case e == me:
				own++
			case e == 0 || (e&1 != 0 && e>>32 != uint64(i)):
				fits = false // neither a process nor its sentinel
			}
			es[i] = e
		}
		if fits && own == 1 {
			cands = append(cands, cand{off, es})
		}
	}
	if len(cands) != 1 {
		procs.Note = fmt.Sprintf("%d places in the group hold WORLD's processes with SELF's among them", len(cands))
		return procs, vpid
	}
	procs.Value, procs.How = uint64(cands[0].off), ObjectsOnly
	procs.Note = "SELF's only process is one of WORLD's"
	return procs, in.vpid(cands[0].entries, vpid)
}

// vpid finds the vpid in a process's name from WORLD's processes
// (entries): the 4-byte place where each that is set up holds its own
// index, after the job id they share; with one set up (the others are
// sentinels until the process talks to them), where this process's own
// object holds its name, when known.
func (in OB1) vpid(entries []uint64, vpid Field) Field {
	var real []int
	objs := map[int][]byte{}
	for i, e := range entries {
		if e&1 != 0 {
			continue
		}
		b := make([]byte, maxProcScan)
		if in.Mem(e, b) != nil {
			vpid.Note = fmt.Sprintf("WORLD's process %d cannot be read", i)
			return vpid
		}
		real, objs[i] = append(real, i), b
		if len(real) == maxProcsRead {
			break
		}
	}
	var offs, named []int64
	for off := 4; off+4 <= maxProcScan; off += 4 {
		job := binary.LittleEndian.Uint32(objs[real[0]][off-4:])
		fits := job != 0
		for _, i := range real {
			fits = fits && binary.LittleEndian.Uint32(objs[i][off:]) == uint32(i) && binary.LittleEndian.Uint32(objs[i][off-4:]) == job
			if in.Name != 0 && uint64(i) == in.Name>>32 && binary.LittleEndian.Uint64(objs[i][off-4:]) == in.Name {
				named = append(named, int64(off))
			}
		}
		if fits {
			offs = append(offs, int64(off))
		}
	}
	switch {
	case len(real) > 1 && len(offs) == 1:
		vpid.Value, vpid.How = uint64(offs[0]), ObjectsOnly
		vpid.Note = fmt.Sprintf("%d of WORLD's processes hold their rank there after one job id", len(real))
	case len(named) == 1:
		vpid.Value, vpid.How = uint64(named[0]), ObjectsOnly
		vpid.Note = "this process holds its name from its environment there"
	default:
		vpid.Note = fmt.Sprintf("%d of WORLD's processes allow %d places", len(real), len(offs))
		if in.Name == 0 {
			vpid.Note += ", and the environment gives no name"
		}
	}
	return vpid
}

// maxMembers bounds the groups read.
const maxMembers = 1 << 16

// decideCode is decide for a field the code writes rather than reads.
func decideCode(name string, objects, code []int64) Field {
	f := decide(name, objects, code)
	switch f.How {
	case ObjectsAccessor:
		f.How = ObjectsCode
	case AccessorOnly:
		f.How = CodeOnly
	}
	return f
}

// codeField is a field mca_pml_ob1_irecv writes one argument to, which
// mca_pml_ob1_isend, when it writes that argument too, confirms.
func codeField(name string, irecv, isend []int64) Field {
	f := Field{Name: name, How: Unknown}
	switch {
	case len(irecv) != 1:
		f.Note = fmt.Sprintf("mca_pml_ob1_irecv writes the argument at %d places", len(irecv))
	case len(isend) == 0:
		f.Value, f.How = uint64(irecv[0]), CodeOnly
		f.Note = "mca_pml_ob1_isend does not write it where this analysis follows"
	case slices.Contains(isend, irecv[0]):
		f.Value, f.How = uint64(irecv[0]), CodeTwice
	default:
		f.Note = fmt.Sprintf("mca_pml_ob1_irecv writes it at %#x, mca_pml_ob1_isend at %s", irecv[0], offs(isend))
	}
	return f
}

// storedArg returns where stores write argument arg, bytes wide.
func storedArg(ss []Store, arg, bytes int) []int64 {
	var out []int64
	for _, s := range ss {
		if s.Arg == arg && s.Bytes == bytes {
			out = append(out, s.Off)
		}
	}
	return uniq(out)
}

// storedImm returns where stores write the constant imm, bytes wide.
func storedImm(ss []Store, imm int64, bytes int) []int64 {
	var out []int64
	for _, s := range ss {
		if s.Arg < 0 && s.Imm == imm && s.Bytes == bytes {
			out = append(out, s.Off)
		}
	}
	return uniq(out)
}

// u64s returns the 8-byte aligned offsets at which a holds wa and b wb.
func u64s(a, b []byte, wa, wb uint64) []int64 {
	var out []int64
	for off := 0; off+8 <= min(len(a), len(b)); off += 8 {
		if binary.LittleEndian.Uint64(a[off:]) == wa && binary.LittleEndian.Uint64(b[off:]) == wb {
			out = append(out, int64(off))
		}
	}
	return out
}

func intersect(a, b []int64) []int64 {
	var out []int64
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
