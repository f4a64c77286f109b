package mpiabi

import (
	"errors"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// Comm is a communicator as read from a process: its context id, its
// size (-1 if unknown) and "WORLD" or "SELF" for the predefined ones.
type Comm struct {
	ID   uint64
	Size int
	Name string
}

// Request is what one point-to-point request in flight says: a send or a
// receive, the peer and tag, and the communicator.
type Request struct {
	// Send is set for a send; else the operation is a receive.
	Send bool
	// Peer is the peer's WORLD rank, AnySource or PeerUnknown.
	Peer int
	// CommPeer is the peer's rank in Comm when it is known there but not
	// in WORLD (Peer is then PeerUnknown); -1 otherwise.
	CommPeer int
	// Tag is the tag, AnyTag or TagUnknown.
	Tag int
	// Comm is the request's communicator, nil if unknown.
	Comm *Comm
	// Known says the peer was read from the request; otherwise it is
	// inferred from the call alone.
	Known bool
}

// The special values of Request's Peer and Tag.
const (
	PeerUnknown = -1 // the peer could not be read or inferred
	AnySource   = -2 // a receive from MPI_ANY_SOURCE
	AnyTag      = -1 // a receive with MPI_ANY_TAG
	TagUnknown  = -3 // the tag could not be read
)

// RequestReader reads the point-to-point requests a thread waits for from
// one process's memory, with the layouts of its library builds: Open
// MPI's ob1 requests (ob1.go) or MPICH's MPIR_Request and, under ch4, the
// UCX request behind it (mpich.go, ucx.go), under ch3 its match (ch3.go).
type RequestReader struct {
	Mem   procfs.Memory
	Comms CommReader
	// Open MPI: ob1's layout and load bias.
	OB1     OB1Layout
	OB1Bias uint64
	// MPICH: MPIR_Request's and UCX's request layouts; without UCX
	// (ch3), where the build keeps a request's match.
	Req MPICHReqLayout
	UCP UCPReqLayout
	CH3 *CH3Match
	// UCPLearn, for a libucp build the table does not hold, is its
	// layout learnt from the requests.
	UCPLearn *UCPLearnt
	// OK says requests can be read; else Note says why not.
	OK   bool
	Note string
}

// Kind is the library family whose requests r reads.
func (r RequestReader) Kind() CommLayoutKind { return r.Comms.Layout.Kind }

// Request reads the request at addr, if it is one in flight. comm is the
// communicator object the stack shows (0 if none), which MPICH's requests
// are matched against.
func (r RequestReader) Request(addr, comm uint64) (Request, bool) {
	switch r.Kind() {
	case LayoutOMPI:
		return r.OMPIRequest(addr)
	case LayoutMPICH:
		return r.MPICHRequest(addr, comm)
	}
	return Request{}, false
}

func (r RequestReader) u32(addr uint64) (uint32, bool) { return r.Mem.U32(addr) }

func (r RequestReader) u64(addr uint64) (uint64, bool) { return r.Mem.U64(addr) }

// MPICHWorld is MPICH's MPI_COMM_WORLD handle.
const MPICHWorld = 0x44000000

// MaxTag bounds a plausible MPI tag (both libraries' MPI_TAG_UB are below).
const MaxTag = 1 << 30

// MaxRank bounds a plausible rank.
const MaxRank = 1 << 24

// MaxMembers bounds the group read for a communicator's membership.
const MaxMembers = 1024

// Learnt is what the processes of one command learn of their MPI builds
// and share: the ob1 layouts resolved, the frame slots inferred, the
// device of each MPICH build, where each ch3 build keeps a request's
// match and the request layouts of libucp builds the table does not
// hold. The zero value is ready; it is not safe for concurrent use.
type Learnt struct {
	// ob1 holds the ob1 request layouts, by "ob1 build id/libmpi build id".
	ob1 map[string]ob1Result
	// frames holds the frame slots inferred from MPICH API functions'
	// code, by "build id/function/return address".
	frames map[string]frameResult
	// devices holds the device each MPICH build names, by build id.
	devices map[string]string
	// ch3 and ucp are by build id.
	ch3 map[string]*CH3Match
	ucp map[string]*UCPLearnt
}

type ob1Result struct {
	layout OB1Layout
	err    error
}

type frameResult struct {
	args MPICHFrameArgs
	err  error
}

// CH3For returns the shared match offset of a ch3 build.
func (l *Learnt) CH3For(build string) *CH3Match { return sharedOf(&l.ch3, build) }

// UCPFor returns what is learnt of a libucp build.
func (l *Learnt) UCPFor(build string) *UCPLearnt { return sharedOf(&l.ucp, build) }

// sharedOf returns what the processes of one build share in *m, made on
// first use.
func sharedOf[T any](m *map[string]*T, build string) *T {
	if *m == nil {
		*m = map[string]*T{}
	}
	if (*m)[build] == nil {
		(*m)[build] = new(T)
	}
	return (*m)[build]
}

// OB1Layout returns the ob1 layout of the pair of builds key names,
// resolving it once with resolve; an ErrLayoutNotReady is not kept
// (another process may be past MPI_Init).
func (l *Learnt) OB1Layout(key string, resolve func() (OB1Layout, error)) (OB1Layout, error) {
	if res, ok := l.ob1[key]; ok {
		return res.layout, res.err
	}
	ob1, err := resolve()
	if errors.Is(err, ErrLayoutNotReady) {
		return ob1, err
	}
	if l.ob1 == nil {
		l.ob1 = map[string]ob1Result{}
	}
	l.ob1[key] = ob1Result{ob1, err}
	return ob1, err
}

// FrameArgs returns the frame slots key names, inferred once with infer.
func (l *Learnt) FrameArgs(key string, infer func() (MPICHFrameArgs, error)) (MPICHFrameArgs, bool) {
	if res, ok := l.frames[key]; ok {
		return res.args, res.err == nil
	}
	var res frameResult
	res.args, res.err = infer()
	if l.frames == nil {
		l.frames = map[string]frameResult{}
	}
	l.frames[key] = res
	return res.args, res.err == nil
}

// Device returns the device of an MPICH build, read once with read.
func (l *Learnt) Device(build string, read func() string) string {
	if dev, ok := l.devices[build]; ok {
		return dev
	}
	dev := read()
	if l.devices == nil {
		l.devices = map[string]string{}
	}
	l.devices[build] = dev
	return dev
}
