package mpiabi

import (
	"debug/elf"
	"errors"
	"fmt"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/layout"
)

// OB1LayoutResult is an ob1 request layout with the source of each field.
type OB1LayoutResult struct {
	Layout OB1Layout
	Fields []LayoutField
	Took   time.Duration
}

// InferOB1Layout infers the request layout of an Open MPI build that
// neither the table nor DWARF describes (a stripped libmpi.so), from a
// live process p past MPI_Init that maps libmpi (p.Bias is its load bias)
// and from ob1's code (ob1 is mca_pml_ob1.so, or libmpi itself from Open
// MPI 5.0, which builds its components in):
//
//   - ompi_request_null and ompi_request_empty, which MPI_Init sets up
//     with known values, and mca_pml_ob1_irecv's initialisation of a new
//     request place the completion word, the state and the MPI object;
//   - mca_pml_ob1_irecv and mca_pml_ob1_isend write their peer, tag and
//     communicator into the request they allocate (layout.ObjectStores);
//   - WORLD's and SELF's groups (comm is the communicator layout) place
//     the group's processes and a process's WORLD rank (its vpid, where
//     the processes set up hold their own, or p.OMPIName), and
//     PMPI_Comm_remote_size the remote group.
//
// The classes come from ob1's dynamic symbols. MPI_ANY_SOURCE and
// MPI_ANY_TAG are -1, ABI constants of every release's mpi.h. The error
// names the first request field not found; the error wraps
// ErrLayoutNotReady before MPI_Init.
func InferOB1Layout(libmpi, ob1 *elf.File, p LiveProcess, comm CommLayout) (OB1LayoutResult, error) {
	start := time.Now()
	res, err := inferOB1(libmpi, ob1, p, comm)
	res.Took = time.Since(start)
	return res, err
}

func inferOB1(libmpi, ob1 *elf.File, p LiveProcess, comm CommLayout) (OB1LayoutResult, error) {
	var out OB1LayoutResult
	if comm.Kind != LayoutOMPI {
		return out, errors.New("the communicator layout is not known")
	}
	ob1Syms, err := elfx.Defined(ob1)
	if err != nil {
		return out, fmt.Errorf("ob1: %w", err)
	}
	l := OB1Layout{
		RecvClass: ob1Syms["mca_pml_ob1_recv_request_t_class"].Value,
		SendClass: ob1Syms["mca_pml_ob1_send_request_t_class"].Value,
		AnySource: -1, AnyTag: -1,
	}
	if l.RecvClass == 0 || l.SendClass == 0 {
		return out, errors.New("ob1 defines no mca_pml_ob1_{recv,send}_request_t_class")
	}
	ob1Code, err := textCode(ob1)
	if err != nil {
		return out, fmt.Errorf("ob1: %w", err)
	}
	in := layout.OB1{GroupOff: int64(comm.GroupOff), CountOff: int64(comm.SizeOff), Mem: p.Mem, Name: p.OMPIName}
	for _, fn := range []struct {
		name  string
		stack int
		dst   *[]layout.Store
	}{{"mca_pml_ob1_irecv", 1, &in.Irecv}, {"mca_pml_ob1_isend", 2, &in.Isend}} {
		s, ok := ob1Syms[fn.name]
		if !ok || elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 {
			return out, fmt.Errorf("ob1 defines no function %s", fn.name)
		}
		if *fn.dst, err = layout.ObjectStores(ob1Code, s.Value, int(s.Size), fn.stack); err != nil {
			return out, fmt.Errorf("%s: %w", fn.name, err)
		}
	}
	libSyms, libCode := ob1Syms, ob1Code // Open MPI 5.0: ob1 is in libmpi.so
	if libmpi != ob1 {
		if libSyms, err = elfx.Defined(libmpi); err != nil {
			return out, fmt.Errorf("libmpi.so: %w", err)
		}
		libCode, err = textCode(libmpi)
	}
	if s, ok := libSyms["PMPI_Comm_remote_size"]; ok && elf.ST_TYPE(s.Info) == elf.STT_FUNC && err == nil {
		in.RemoteSize = layout.Analyze(libCode, s.Value, 0)
	}
	for _, o := range []struct {
		name string
		n    int
		dst  *[]byte
		addr *uint64
	}{
		{"ompi_request_null", layout.OB1RequestBytes, &in.Null, nil},
		{"ompi_request_empty", layout.OB1RequestBytes, &in.Empty, nil},
		{"ompi_mpi_comm_world", layout.OMPIObjectSize, &in.WorldComm, &in.World},
		{"ompi_mpi_comm_self", layout.OMPIObjectSize, &in.SelfComm, nil},
	} {
		slot, _, err := elfx.DataSlot(libmpi, o.name)
		if err != nil {
			return out, fmt.Errorf("libmpi.so: %w", err)
		}
		if slot == 0 && libSyms[o.name].Value == 0 {
			return out, fmt.Errorf("libmpi.so defines no %s", o.name)
		}
		addr, err := objectAddr(slot, libSyms[o.name].Value, p)
		if err != nil {
			return out, fmt.Errorf("%s: %w", o.name, err)
		}
		b := make([]byte, o.n)
		if err := p.Mem(addr, b); err != nil {
			return out, fmt.Errorf("read %s at %#x: %w", o.name, addr, err)
		}
		*o.dst = b
		if o.addr != nil {
			*o.addr = addr
		}
	}
	r, err := layout.InferOB1(in)
	out.Fields = r.Fields
	if layout.ErrNotReady(err) {
		return out, ErrLayoutNotReady
	}
	if err != nil {
		return out, err
	}
	u32 := func(name string) uint32 { return uint32(r.Get(name).Value) }
	l.CompleteOff, l.CompleteDone = u32(layout.FieldReqComplete), r.Get(layout.FieldReqDone).Value
	l.StateOff, l.StateActive = u32(layout.FieldReqState), u32(layout.FieldReqActive)
	l.TypeOff, l.CommOff, l.PeerOff, l.TagOff = u32(layout.FieldReqType), u32(layout.FieldReqComm), u32(layout.FieldReqPeer), u32(layout.FieldReqTag)
	// MCA_PML_REQUEST_SEND, _RECV, _PROBE and _MPROBE of the enum every
	// release declares, which irecv's constant confirmed.
	recv := u32(layout.FieldReqRecv)
	l.TypeSend, l.TypeRecv, l.TypeProbe, l.TypeMProbe = recv-1, recv, recv+2, recv+4
	l.CountOff = comm.SizeOff
	l.RemoteGroupOff = u32(layout.FieldRemoteGroup)
	if r.Get(layout.FieldGroupProcs).Found() && r.Get(layout.FieldProcVpid).Found() {
		l.ProcsOff, l.VpidOff = u32(layout.FieldGroupProcs), u32(layout.FieldProcVpid)
	}
	out.Layout = l
	return out, nil
}

// OB1LayoutStruct names ob1's request layout in a LayoutStatus.
const OB1LayoutStruct = "ob1 request"

// ResolveOB1Layout returns the request layout of ob1 (mca_pml_ob1.so, or
// libmpi itself from Open MPI 5.0) as a live process p that maps libmpi
// uses it: the table of verified builds, else the DWARF of libmpi.so,
// else inferred (InferOB1Layout; comm is the process's communicator
// layout).
func ResolveOB1Layout(libmpi, ob1 *elf.File, p LiveProcess, comm CommLayout) (OB1LayoutResult, error) {
	id, _ := elfx.BuildID(ob1)
	if l, ok := OB1LayoutOf(id); ok {
		return OB1LayoutResult{Layout: l, Fields: ob1Fields(l, layout.Verified)}, nil
	}
	l, derr := OB1LayoutFromDWARF(libmpi, ob1)
	if derr == nil {
		return OB1LayoutResult{Layout: l, Fields: ob1Fields(l, layout.DebugInfo)}, nil
	}
	res, err := InferOB1Layout(libmpi, ob1, p, comm)
	if err != nil && !errors.Is(err, ErrLayoutNotReady) {
		err = fmt.Errorf("no DWARF (%v), and inferred: %w", derr, err)
	}
	return res, err
}

// ob1Fields lists a layout from the table or DWARF, all found by how.
func ob1Fields(l OB1Layout, how layout.How) []LayoutField {
	var out []LayoutField
	for _, f := range []namedValue{
		{layout.FieldReqComplete, uint64(l.CompleteOff)}, {layout.FieldReqDone, l.CompleteDone},
		{layout.FieldReqState, uint64(l.StateOff)}, {layout.FieldReqActive, uint64(l.StateActive)},
		{layout.FieldReqType, uint64(l.TypeOff)}, {layout.FieldReqRecv, uint64(l.TypeRecv)},
		{layout.FieldReqComm, uint64(l.CommOff)}, {layout.FieldReqPeer, uint64(l.PeerOff)}, {layout.FieldReqTag, uint64(l.TagOff)},
		{layout.FieldRemoteGroup, uint64(l.RemoteGroupOff)}, {layout.FieldGroupProcs, uint64(l.ProcsOff)}, {layout.FieldProcVpid, uint64(l.VpidOff)},
	} {
		out = append(out, LayoutField{Name: f.name, Value: f.v, How: how})
	}
	return out
}

// OB1LayoutStatus resolves ob1's request layout for a live process as
// `mpiprobe status` does (ResolveOB1Layout), for `mpiprobe probes`;
// display names ob1's file.
func OB1LayoutStatus(libmpi, ob1 *elf.File, display string, p LiveProcess, comm CommLayout) LayoutStatus {
	st := LayoutStatus{File: display, Struct: OB1LayoutStruct}
	st.BuildID, _ = elfx.BuildID(ob1)
	res, err := ResolveOB1Layout(libmpi, ob1, p, comm)
	st.Fields, st.TookSeconds = res.Fields, res.Took.Seconds()
	if err != nil {
		st.Reason = err.Error()
	}
	return st
}
