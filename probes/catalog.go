package probes

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"

	"github.com/mpiprobe/mpiprobe/bpf"
)

// Library names a kind of MPI library file: a shared object whose symbols
// the catalog probes. See Classify for how a file name maps to a Library.
type Library string

// The libraries the catalog knows.
const (
	// OMPILibMPI is Open MPI's libmpi.so.40.
	OMPILibMPI Library = "libmpi"
	// OMPIPmlOb1 is Open MPI's ob1 point-to-point component, mca_pml_ob1.so.
	OMPIPmlOb1 Library = "mca_pml_ob1"
	// MPICHLib is MPICH's libmpi.so.12 (libmpich.so.12 on Debian; libmpi.so.0 built from git).
	MPICHLib Library = "libmpich"
	// OMPIPal is Open MPI's portability layer, libopen-pal.so.40 (.80 from 5.0).
	OMPIPal Library = "libopen-pal"
	// OMPIBtlVader is Open MPI's shared-memory BTL, mca_btl_vader.so.
	OMPIBtlVader Library = "mca_btl_vader"
	// OMPIBtlSm is the same BTL from Open MPI 5.0, renamed sm
	// (mca_btl_sm.so, or built into libopen-pal.so.80): its functions are
	// vader's under the new prefix, and "vader" still selects it.
	OMPIBtlSm Library = "mca_btl_sm"
	// OMPIBtlTcp is Open MPI's TCP BTL, mca_btl_tcp.so.
	OMPIBtlTcp Library = "mca_btl_tcp"
	// IBVerbs is the InfiniBand verbs library, libibverbs.so.1, which
	// Open MPI's openib BTL and UCX load.
	IBVerbs Library = "libibverbs"
)

// Flavour says which MPI C library lib is: mpiabi.NoFlavour for the
// others (components, libopen-pal, libibverbs).
func (lib Library) Flavour() mpiabi.Flavour {
	switch lib {
	case OMPILibMPI:
		return mpiabi.OpenMPI
	case MPICHLib:
		return mpiabi.MPICH
	}
	return mpiabi.NoFlavour
}

// MPI says whose processes load lib: Open MPI's (libmpi.so.40, libopen-pal,
// its mca_ components, its Fortran bindings), MPICH's (libmpich, its
// Fortran bindings), or mpiabi.NoFlavour for a library processes of
// either load (UCX's libucp, libibverbs).
func (lib Library) MPI() mpiabi.Flavour {
	switch {
	case lib == OMPILibMPI, lib == OMPIPal, lib == OMPIFortran, strings.HasPrefix(string(lib), "mca_"):
		return mpiabi.OpenMPI
	case lib == MPICHLib, lib == MPICHFortran:
		return mpiabi.MPICH
	}
	return mpiabi.NoFlavour
}

// Side says whether a probe fires on a function's entry or on its return.
type Side uint8

// The two sides of a function.
const (
	Entry Side = iota
	Return
)

func (s Side) String() string {
	if s == Return {
		return "return"
	}
	return "entry"
}

// Probe is one place whose hits count towards an Event: the entry or return
// of Symbol, or, when CallTo is set, every instruction in Symbol that calls
// (or tail-jumps to) CallTo, hit just before the call.
type Probe struct {
	Library Library
	Symbol  string
	// Renamed is the function's name in the versions that renamed it
	// (Open MPI 5.0 prefixed ob1's exported helpers with ompi_pml_ob1_),
	// tried when the file does not define Symbol.
	Renamed string
	Side    Side
	// CallTo makes the probe a call-site probe; Side must be Entry.
	CallTo string
	// OutOfLine has a call-site probe also look for the calls in the
	// local functions Symbol calls that the file names nowhere: in a
	// stripped library, the copy of an inline function the compiler kept
	// out of line (Open MPI 5.0's ob1 send path, shared by
	// mca_pml_ob1_isend and _send), found by its frame in .eh_frame.
	OutOfLine bool
	// Cond filters hits; the zero value counts every hit. At a call site
	// the arguments are the callee's, already in their registers.
	Cond Condition
	// Program is the BPF program that runs; the zero value counts hits.
	Program Program
	// Param is the program's parameter (cookie bits 24-31): for Count the
	// argument (1-5) whose pointee, a u32, is the hit's peak value, 0 for
	// none; for Stash and AsyncEventRet the stash slot
	// (0-3); for GateOpen and GateCount the gate (0-63); for MPIError the
	// library's layout (ErrorsOMPI, ErrorsMPICH).
	Param uint8
}

// Program names the BPF program a Probe runs.
type Program uint8

// The programs of bpf/mpiprobe.bpf.c that probes run.
const (
	// Count counts hits that meet the condition (count_event).
	Count Program = iota
	// Stash keeps argument Cond.Src of the entry for a return program of
	// the same function, in slot Param; it counts nothing (stash_arg).
	Stash
	// FreeListGrow counts growth of an Open MPI free list that was
	// allocated before, per item class, with the new size as peak.
	FreeListGrow
	// FreeListAtMax counts calls of opal_free_list_grow_st on a list at or
	// past its maximum, which it refuses, per item class, with the maximum
	// as peak.
	FreeListAtMax
	// MPIError counts MPI errors returned to the application, per error
	// class and API name.
	MPIError
	// AsyncEventRet counts successful returns of ibv_get_async_event
	// whose event type is Cond.Value; the event comes from a Stash.
	AsyncEventRet
	// GateOpen opens the thread's gate Param; it counts nothing.
	GateOpen
	// GateCount counts once per opening of gate Param and closes it.
	GateCount
	// GateClose closes gate Param without counting.
	GateClose
)

// The layouts of MPIError's arguments (enum err_layout in bpf/counters.h).
const (
	// errorsOMPI is ompi_errhandler_invoke(eh, obj, type, err_code, message).
	errorsOMPI = uint8(bpf.MpiprobeErrLayoutERR_OMPI)
	// errorsMPICH is MPIR_Err_return_comm(comm, fcname, errcode).
	errorsMPICH = uint8(bpf.MpiprobeErrLayoutERR_MPICH)
)

// How many stash slots and gates a thread has: the widths of their cookie
// fields (enum cookie_layout in bpf/counters.h).
const (
	stashSlots = 1 << bpf.MpiprobeCookieLayoutCOOKIE_SLOT_BITS
	gates      = 1 << bpf.MpiprobeCookieLayoutCOOKIE_GATE_BITS
)

func (p Program) String() string {
	names := [...]string{"count_event", "stash_arg", "free_list_grow", "free_list_at_max",
		"mpi_error", "async_event_ret", "gate_open", "gate_count", "gate_close"}
	if int(p) < len(names) {
		return names[p]
	}
	return fmt.Sprintf("program(%d)", uint8(p))
}

// readsFreeList reports whether the program reads opal_free_list_t fields,
// whose offsets the attacher resolves per library file (freeListLayout)
// and passes in the cookie's operand bits.
func (p Program) readsFreeList() bool { return p == FreeListGrow || p == FreeListAtMax }

func (p Probe) String() string {
	if p.CallTo != "" {
		return p.Symbol + "→" + p.CallTo
	}
	return p.Symbol + " (" + p.Side.String() + ")"
}

// Level groups events by their cost. The default level holds only probes on
// cold paths; other levels are enabled by name.
type Level string

// The levels of the catalog.
const (
	// Default events fire only when the unusual thing happens.
	Default Level = "default"
	// Retries count every retry of a queued operation, or sit on a
	// function that the retry loop calls: they fire in a loop while the
	// trouble lasts, and cost a probe hit per retry.
	Retries Level = "retries"
	// Messages need a probe on a path every message takes (a BTL's send,
	// the match callback): they cost a probe hit per message.
	Messages Level = "messages"
)

// Event is one kind of unusual MPI event: what is probed, what it means,
// how often it may be reported, and what to tune.
type Event struct {
	// ID is the stable name used in output, overrides and JSON.
	ID string
	// Layer is the MPI software layer the event belongs to (pml, btl, ...).
	Layer string
	// Level says when the event is enabled.
	Level Level
	// Probes all count towards the event.
	Probes []Probe
	// Message says what happened, for a person.
	Message string
	// Advice says which parameter to tune.
	Advice string
	// Detail, when set, names an instance of the event from the BPF
	// side's detail value and the name read with it (see Probe.Program);
	// events without it have one instance per process.
	Detail func(detail uint64, name string) string
	// Suggest, when set, turns the detail and peak of one total into a
	// suggested setting that completes Advice, e.g. "try
	// --mca btl_vader_free_list_max 1024"; it returns "" when it has none.
	Suggest func(detail string, peak uint64) string
	// C and T are the default count threshold and time delay of the C/T rule.
	C uint64
	T time.Duration
	// Only, when set, is the MPI whose processes alone produce the event
	// although its probes sit in a library both load: openib's events are
	// libibverbs calls that only Open MPI's openib BTL makes so.
	Only mpiabi.Flavour
}

// ProducedBy reports whether a process of MPI fl can produce the event:
// one of its probes sits in a library such a process loads (fl's own, or
// one that both load), and the event is not the other MPI's alone (Only).
// With fl mpiabi.NoFlavour (the process's MPI is not known) every event
// can be.
func (e Event) ProducedBy(fl mpiabi.Flavour) bool {
	if fl == mpiabi.NoFlavour {
		return true
	}
	if e.Only != mpiabi.NoFlavour && e.Only != fl {
		return false
	}
	return slices.ContainsFunc(e.Probes, func(p Probe) bool { m := p.Library.MPI(); return m == fl || m == mpiabi.NoFlavour })
}

// Catalog is the set of events mpiprobe knows. An event's index in Events
// is the id the BPF side counts it under.
type Catalog struct {
	Events []Event
}

// Full returns every event mpiprobe knows, at every level. Facts behind
// each entry (symbols, conditions, triggers) are in
// ../shared/docs/mpi-internals.md; the README's "Events" table lists them.
func Full() Catalog {
	const freeListAdvice = "raise the BTL's send free list: --mca btl_vader_free_list_max (default 512) " +
		"or --mca btl_tcp_free_list_max; lasting queueing also means a slow receiver"
	// mca_pml_ob1_enable_progress(1) follows every append to ob1's
	// send_pending list. The calls from the send entry points are new
	// queueings; the calls from the two loops that re-run the list are
	// retries, and happen on every progress pass while sends are queued.
	enable := func(fn string) Probe {
		return Probe{Library: OMPIPmlOb1, Symbol: fn, CallTo: "mca_pml_ob1_enable_progress",
			Cond: Condition{Src: Arg(1), Cmp: Gt, Value: 0}, OutOfLine: true}
	}
	ob1 := func(fn string) Probe { return Probe{Library: OMPIPmlOb1, Symbol: fn} }
	// The receive posted after its message arrived: mca_pml_ob1_recv_req_start
	// found the fragment among the unexpected ones and progresses it at once.
	late := func(callee string) Probe {
		return Probe{Library: OMPIPmlOb1, Symbol: "mca_pml_ob1_recv_req_start", CallTo: callee}
	}
	ucxLate := func(callee string) Probe {
		return Probe{Library: UCXLib, Symbol: "ucp_tag_recv_nbx", CallTo: callee}
	}
	uret := func(lib Library, fn string, c Condition) Probe {
		return Probe{Library: lib, Symbol: fn, Side: Return, Cond: c}
	}
	minus2 := Condition{Src: RetVal, Cmp: Eq, Value: -2} // OMPI_ERR_OUT_OF_RESOURCE
	// tcpOpen counts the false returns of a TCP BTL fragment function
	// (a C bool) that did not close the connection on the way, with the
	// thread's gate gate.
	tcpOpen := func(fn string, gate uint8) []Probe {
		return []Probe{
			{Library: OMPIBtlTcp, Symbol: fn, Program: GateOpen, Param: gate},
			{Library: OMPIBtlTcp, Symbol: fn, CallTo: "mca_btl_tcp_endpoint_close", Program: GateClose, Param: gate},
			{Library: OMPIBtlTcp, Symbol: fn, Side: Return, Program: GateCount, Param: gate,
				Cond: Condition{Src: RetVal, Cmp: Eq8, Value: 0}},
		}
	}
	return Catalog{Events: []Event{
		{
			ID:    "ob1.send_pending.new",
			Layer: "pml",
			Level: Default,
			Probes: []Probe{
				enable("mca_pml_ob1_isend"),
				enable("mca_pml_ob1_send"),
				enable("mca_pml_ob1_start"),
			},
			Message: "send request queued as pending: no BTL send fragment was free",
			Advice:  freeListAdvice,
			C:       1000,
			T:       10 * time.Second,
		},
		{
			// MCA_PML_OB1_PROGRESS_PENDING calls it only when send_pending is non-empty.
			ID:      "ob1.send_pending.drain",
			Layer:   "pml",
			Level:   Default,
			Probes:  []Probe{ob1("mca_pml_ob1_send_request_process_pending")},
			Message: "pass over the pending-send queue after a BTL returned fragments",
			Advice:  freeListAdvice,
			C:       10000,
			T:       30 * time.Second,
		},
		{
			ID:    "ob1.send_pending.retry",
			Layer: "pml",
			Level: Retries,
			Probes: []Probe{
				enable("mca_pml_ob1_progress"),
				enable("mca_pml_ob1_send_request_process_pending"),
			},
			Message: "pending send retried and queued again: still no BTL send fragment free",
			Advice:  freeListAdvice,
			C:       100000,
			T:       30 * time.Second,
		},
		{
			// The send side queues the request through add_request_to_send_pending,
			// which ends in mca_pml_ob1_enable_progress; the receive side
			// returns OMPI_ERR_OUT_OF_RESOURCE and is queued on recv_pending.
			// Both run once per pipeline chunk of a large message, not per message.
			ID:    "ob1.rndv.stall",
			Layer: "pml",
			Level: Default,
			Probes: []Probe{
				enable("mca_pml_ob1_send_request_schedule_once"),
				uret(OMPIPmlOb1, "mca_pml_ob1_recv_request_schedule_once", minus2),
			},
			Message: "rendezvous pipeline stalled: no BTL fragment for the next chunk of a large message, which waits in a pending queue",
			Advice: "raise the BTL's free list (--mca btl_vader_free_list_max, btl_tcp_free_list_max) " +
				"or lower the chunks in flight per message (--mca pml_ob1_send_pipeline_depth, pml_ob1_recv_pipeline_depth)",
			C: 100,
			T: 10 * time.Second,
		},
		{
			// MCA_PML_OB1_PROGRESS_PENDING calls each only when its list is non-empty.
			ID:      "ob1.pckt_pending.drain",
			Layer:   "pml",
			Level:   Default,
			Probes:  []Probe{ob1("mca_pml_ob1_process_pending_packets")},
			Message: "pass over the pending control-packet queue (ACKs, FINs): a BTL had no fragment for them",
			Advice:  "raise the BTL's free list (--mca btl_vader_free_list_max, btl_tcp_free_list_max)",
			C:       1000,
			T:       30 * time.Second,
		},
		{
			ID:      "ob1.recv_pending.drain",
			Layer:   "pml",
			Level:   Default,
			Probes:  []Probe{ob1("mca_pml_ob1_recv_request_process_pending")},
			Message: "pass over the pending-receive queue: a large receive waits for fragments to schedule its next chunk",
			Advice:  "raise the BTL's free list (--mca btl_vader_free_list_max, btl_tcp_free_list_max) or lower --mca pml_ob1_recv_pipeline_depth",
			C:       1000,
			T:       30 * time.Second,
		},
		{
			ID:      "ob1.rdma_pending.drain",
			Layer:   "pml",
			Level:   Default,
			Probes:  []Probe{ob1("mca_pml_ob1_process_pending_rdma")},
			Message: "pass over the pending RDMA queue: an RDMA transfer waits for BTL resources",
			Advice:  "raise the BTL's RDMA resources (e.g. --mca btl_openib_free_list_max) or lower --mca pml_ob1_rdma_pipeline_depth",
			C:       1000,
			T:       30 * time.Second,
		},
		{
			// Called only for a fragment whose sequence number is ahead of
			// the next expected one from that peer.
			ID:    "ob1.out_of_sequence",
			Layer: "pml",
			Level: Default,
			Probes: []Probe{{Library: OMPIPmlOb1, Symbol: "append_frag_to_ordered_list",
				Renamed: "ompi_pml_ob1_append_frag_to_ordered_list"}},
			Message: "fragment arrived out of sequence and was held back: traffic to one peer is split over several BTLs",
			Advice: "let one BTL carry each peer's traffic: check --mca btl, and give the fastest BTL the highest " +
				"exclusivity (e.g. leave btl_vader_exclusivity above btl_tcp_exclusivity)",
			C: 1000,
			T: 30 * time.Second,
		},
		{
			// Fires once per message received after it arrived, which in
			// many programs is most eager messages: even in a tight 8 B
			// allreduce loop at 2 ranks it fired 6,000 times per rank in
			// 2M calls (at ~0.6 µs per hit, ~0.75% of the loop's time),
			// past the default set's 1% budget. So it is a per-message
			// level, though much cheaper than ob1.unexpected.arrival.
			ID:    "ob1.unexpected.late_recv",
			Layer: "pml",
			Level: Messages,
			Probes: []Probe{
				late("mca_pml_ob1_recv_request_progress_match"),
				late("mca_pml_ob1_recv_request_progress_rndv"),
				late("mca_pml_ob1_recv_request_progress_rget"),
			},
			Message: "receive posted after its message had arrived: the message waited as unexpected (eager data copied twice)",
			Advice:  "post receives earlier (MPI_Irecv before the matching send starts); for large messages lower --mca btl_vader_eager_limit so they wait as small headers",
			C:       10000,
			T:       30 * time.Second,
		},
		{
			// Fires on every arriving eager message: the gate opens at each
			// match callback, closes where a matched message is unpacked
			// into its receive buffer, and what returns with the gate open
			// went to the unexpected queue.
			ID:    "ob1.unexpected.arrival",
			Layer: "pml",
			Level: Messages,
			Probes: []Probe{
				{Library: OMPIPmlOb1, Symbol: "mca_pml_ob1_recv_frag_callback_match", Program: GateOpen, Param: 0},
				{Library: OMPIPmlOb1, Symbol: "mca_pml_ob1_recv_frag_callback_match", CallTo: "opal_convertor_unpack", Program: GateClose, Param: 0},
				{Library: OMPIPmlOb1, Symbol: "mca_pml_ob1_recv_frag_callback_match", Side: Return, Program: GateCount, Param: 0},
			},
			Message: "message arrived before its receive was posted and was copied to the unexpected queue",
			Advice:  "post receives earlier (MPI_Irecv before the matching send starts)",
			C:       10000,
			T:       30 * time.Second,
		},
		{
			ID:    "vader.sendi_refused",
			Layer: "btl",
			Level: Messages,
			Probes: []Probe{
				uret(OMPIBtlVader, "mca_btl_vader_sendi", minus2),
				uret(OMPIBtlSm, "mca_btl_sm_sendi", minus2),
			},
			Message: "shared-memory fast path refused a small message: the peer's fast box is full or sends are pending",
			Advice:  "raise --mca btl_vader_fbox_size and btl_vader_fbox_max (btl_sm_ from Open MPI 5.0); lasting refusals mean a slow receiver",
			C:       10000,
			T:       30 * time.Second,
		},
		{
			ID:    "vader.alloc_failed",
			Layer: "btl",
			Level: Messages,
			Probes: []Probe{
				uret(OMPIBtlVader, "mca_btl_vader_alloc", Condition{Src: RetVal, Cmp: Eq, Value: 0}),
				uret(OMPIBtlSm, "mca_btl_sm_alloc", Condition{Src: RetVal, Cmp: Eq, Value: 0}),
			},
			Message: "shared-memory BTL out of fragments: a send had to wait",
			Advice:  "raise --mca btl_vader_free_list_max (btl_sm_free_list_max from Open MPI 5.0; default 512)",
			C:       1000,
			T:       10 * time.Second,
		},
		{
			// frag_send and frag_recv also return false after closing the
			// connection: on a read of 0 bytes (the peer closed its end: a
			// rank that died, or one that finalized while this one still
			// progressed) or on an error. Each call opens a gate, the
			// close closes it, and only a false return with the gate open
			// counts.
			ID:      "tcp.partial_io",
			Layer:   "btl",
			Level:   Messages,
			Probes:  append(tcpOpen("mca_btl_tcp_frag_send", 1), tcpOpen("mca_btl_tcp_frag_recv", 2)...),
			Message: "TCP fragment written or read only in part: the socket buffer was full (or empty)",
			Advice:  "raise --mca btl_tcp_sndbuf and btl_tcp_rcvbuf (and the kernel's net.core.wmem_max / rmem_max)",
			C:       10000,
			T:       30 * time.Second,
		},
		{
			ID:      "tcp.send_queued",
			Layer:   "btl",
			Level:   Messages,
			Probes:  []Probe{uret(OMPIBtlTcp, "mca_btl_tcp_endpoint_send", Condition{Src: RetVal, Cmp: Eq, Value: 0})},
			Message: "TCP send queued behind a busy socket",
			Advice:  "raise --mca btl_tcp_sndbuf and btl_tcp_rcvbuf; add links with --mca btl_tcp_links",
			C:       10000,
			T:       30 * time.Second,
		},
		{
			// The handler, btl_openib_async_srq_limit_event, is static: the
			// event is seen where the async thread fetches it.
			ID:    "openib.srq_limit",
			Layer: "btl",
			Level: Default,
			Probes: []Probe{
				{Library: IBVerbs, Symbol: "ibv_get_async_event", Program: Stash, Cond: Condition{Src: Arg(2)}},
				{Library: IBVerbs, Symbol: "ibv_get_async_event", Side: Return, Program: AsyncEventRet,
					Cond: Condition{Src: RetVal, Cmp: Eq, Value: ibvEventSRQLimitReached}},
			},
			Message: "shared receive queue limit reached: receive buffers ran low and Open MPI grows the SRQ",
			Advice:  "raise the SRQ's rd_num / rd_init in --mca btl_openib_receive_queues (e.g. S,12288,1024,...)",
			C:       10,
			T:       60 * time.Second,
			Only:    mpiabi.OpenMPI,
		},
		{
			ID:    "openib.srq_grown",
			Layer: "btl",
			Level: Default,
			Probes: []Probe{
				{Library: IBVerbs, Symbol: "ibv_modify_srq", Cond: Condition{Src: Arg(3), Cmp: Eq, Value: ibvSRQLimit}, Param: 2},
			},
			Message: "shared receive queue re-armed after growing",
			Advice:  "raise the SRQ's rd_num / rd_init in --mca btl_openib_receive_queues",
			Suggest: func(_ string, peak uint64) string {
				if peak == 0 {
					return ""
				}
				return fmt.Sprintf("the SRQ reached max_wr %d: start it there (rd_init)", peak)
			},
			C:    10,
			T:    60 * time.Second,
			Only: mpiabi.OpenMPI,
		},
		{
			// opal_free_list_grow_st is also called on every retry of a
			// queued send while a list is at its maximum (90,000 times in
			// the 2000-message flood with a list of 64), so both free-list
			// events cost a probe hit per retry: they are not default.
			ID:      "pal.free_list.grow",
			Layer:   "pal",
			Level:   Retries,
			Probes:  []Probe{{Library: OMPIPal, Symbol: "opal_free_list_grow_st", Program: FreeListGrow}},
			Detail:  className,
			Message: "free list grew beyond its first allocation",
			Advice:  "growth is normal while a job warms up; lasting growth costs allocations on the critical path: start the list larger",
			Suggest: func(class string, peak uint64) string {
				if p := freeListParam(class); p != "" && peak > 0 {
					return fmt.Sprintf("the list reached %d items; try --mca %s %d", peak, strings.Replace(p, "_max", "_num", 1), peak)
				}
				return ""
			},
			C: 100,
			T: 60 * time.Second,
		},
		{
			ID:      "pal.free_list.at_max",
			Layer:   "pal",
			Level:   Retries,
			Probes:  []Probe{{Library: OMPIPal, Symbol: "opal_free_list_grow_st", Program: FreeListAtMax}},
			Detail:  className,
			Message: "free list at its maximum: an item was wanted and none could be allocated",
			Advice:  "raise the list's *_free_list_max",
			Suggest: func(class string, peak uint64) string {
				if p := freeListParam(class); p != "" && peak > 0 {
					return fmt.Sprintf("try --mca %s %d (twice the %d it hit)", p, 2*peak, peak)
				}
				return ""
			},
			C: 100,
			T: 10 * time.Second,
		},
		{
			ID:      "ucx.pending_add",
			Layer:   "ucx",
			Level:   Default,
			Probes:  []Probe{{Library: UCXLib, Symbol: "ucp_request_pending_add"}},
			Message: "UCX transport out of resources: the request was queued as pending (MPICH ch4:ucx or Open MPI pml/ucx)",
			Advice: "a slow receiver, or a short transport queue: raise UCX_RC_TX_QUEUE_LEN / UCX_DC_TX_QUEUE_LEN " +
				"(InfiniBand) or UCX_MM_FIFO_SIZE (shared memory)",
			C: 1000,
			T: 10 * time.Second,
		},
		{
			// Where ucp_tag_recv_nbx finds its message already arrived: it
			// unpacks eager data there (memcpy, or the iov and memory-type
			// variants) or matches a waiting rendezvous request; a receive
			// posted in time is completed later, by the arrival handler.
			// Both MPICH ch4:ucx and Open MPI pml/ucx receive through it.
			// (The arrival side is inlined in UCX 1.13 except with a
			// wildcard receive posted: ucp_tag_exp_search_all saw MPICH's
			// arrivals but none of Open MPI's.)
			ID:    "ucx.unexpected.late_recv",
			Layer: "ucx",
			Level: Messages,
			Probes: []Probe{
				ucxLate("memcpy"),
				ucxLate("ucp_dt_iov_scatter"),
				ucxLate("ucp_mem_type_unpack"),
				ucxLate("ucp_tag_rndv_matched"),
			},
			Message: "receive posted after its message had arrived: the message waited in UCX's unexpected queue",
			Advice:  "post receives earlier (MPI_Irecv before the matching send starts)",
			C:       10000,
			T:       30 * time.Second,
		},
		{
			ID:    "mpi.error",
			Layer: "errors",
			Level: Default,
			Probes: []Probe{
				{Library: OMPILibMPI, Symbol: "ompi_errhandler_invoke", Program: MPIError, Param: errorsOMPI},
				{Library: MPICHLib, Symbol: "MPIR_Err_return_comm", Program: MPIError, Param: errorsMPICH},
			},
			Detail:  errorDetail,
			Message: "MPI call returned an error to the application",
			Advice:  "check the application's error handling: with MPI_ERRORS_RETURN it must test every return code",
			C:       1,
			T:       10 * time.Second,
		},
	}}
}

// className names a free list by its item class, read by the BPF side.
func className(_ uint64, name string) string {
	if name == "" {
		return "unknown class"
	}
	return name
}

// DetailOf names the instance of event id (its index) from the BPF side's
// detail and name; "" for events with one instance.
func (c Catalog) DetailOf(id int, detail uint64, name string) string {
	if id < 0 || id >= len(c.Events) || c.Events[id].Detail == nil {
		return ""
	}
	return c.Events[id].Detail(detail, name)
}

// Values of libibverbs' ABI the openib entries test.
const (
	ibvEventSRQLimitReached = 15 // enum ibv_event_type IBV_EVENT_SRQ_LIMIT_REACHED
	ibvSRQLimit             = 2  // enum ibv_srq_attr_mask IBV_SRQ_LIMIT
)

// DefaultCatalog returns the catalog of the default level: cold-path probes only.
func DefaultCatalog() Catalog { return Full().Select(Default) }

// Select returns the events of the given levels, in catalog order.
func (c Catalog) Select(levels ...Level) Catalog {
	var out Catalog
	for _, e := range c.Events {
		if slices.Contains(levels, e.Level) {
			out.Events = append(out.Events, e)
		}
	}
	return out
}

// Levels returns the levels that occur in the catalog, in first-use order.
func (c Catalog) Levels() []Level {
	var out []Level
	for _, e := range c.Events {
		if !slices.Contains(out, e.Level) {
			out = append(out, e.Level)
		}
	}
	return out
}

var eventIDPattern = regexp.MustCompile(`^[a-z0-9_]+(\.[a-z0-9_]+)+$`)

// Validate checks the catalog's internal consistency: unique ids, conditions
// the BPF side can evaluate, each gate used by one event, and at most
// maxEvents events.
func (c Catalog) Validate() error {
	if len(c.Events) > maxEvents {
		return fmt.Errorf("catalog has %d events, at most %d fit in a cookie", len(c.Events), maxEvents)
	}
	seen := map[string]bool{}
	gateOf := map[uint8]string{} // gate → the event that uses it
	for _, e := range c.Events {
		if !eventIDPattern.MatchString(e.ID) {
			return fmt.Errorf("event id %q: want dotted lowercase words", e.ID)
		}
		if seen[e.ID] {
			return fmt.Errorf("event %q defined twice", e.ID)
		}
		seen[e.ID] = true
		if e.Message == "" || len(e.Probes) == 0 || e.Level == "" {
			return fmt.Errorf("event %q needs a message, a level and at least one probe", e.ID)
		}
		for _, p := range e.Probes {
			if p.Side == Return && p.Cond.Cmp != Always && p.Cond.Src != RetVal {
				return fmt.Errorf("event %q: %s: arguments are gone on return", e.ID, p)
			}
			if p.Side == Entry && p.Cond.Cmp != Always && p.Cond.Src == RetVal {
				return fmt.Errorf("event %q: %s: no return value on entry", e.ID, p)
			}
			if p.CallTo != "" && p.Side != Entry {
				return fmt.Errorf("event %q: %s: a call site has no return side", e.ID, p)
			}
			if err := p.checkProgram(); err != nil {
				return fmt.Errorf("event %q: %s: %w", e.ID, p, err)
			}
			if p.Program == GateOpen || p.Program == GateCount || p.Program == GateClose {
				// A thread has one of each gate: two events on one gate
				// would open and close each other's.
				if other, ok := gateOf[p.Param]; ok && other != e.ID {
					return fmt.Errorf("event %q: %s: gate %d is event %q's", e.ID, p, p.Param, other)
				}
				gateOf[p.Param] = e.ID
			}
		}
	}
	return nil
}

// Lookup returns the event with the given id and its index (the id the BPF side counts under).
func (c Catalog) Lookup(id string) (Event, int, bool) {
	for i, e := range c.Events {
		if e.ID == id {
			return e, i, true
		}
	}
	return Event{}, -1, false
}

// Libraries returns the libraries the catalog probes, in first-use order.
func (c Catalog) Libraries() []Library {
	var out []Library
	for _, e := range c.Events {
		for _, p := range e.Probes {
			if !slices.Contains(out, p.Library) {
				out = append(out, p.Library)
			}
		}
	}
	return out
}

// Describe says what the catalog knows about an event for the summary: its
// message, layer and advice, the advice completed by the event's Suggest
// from the detail and peak of one total. It reports false for an id the
// catalog does not hold.
func (c Catalog) Describe(id, detail string, peak uint64) (Description, bool) {
	e, _, ok := c.Lookup(id)
	if !ok {
		return Description{}, false
	}
	advice := e.Advice
	if e.Suggest != nil {
		if s := e.Suggest(detail, peak); s != "" {
			advice = strings.TrimSuffix(advice, ".") + "; " + s
		}
	}
	return Description{Message: e.Message, Advice: advice, Layer: e.Layer}, true
}

// Description is what the catalog says about an event for a summary.
type Description struct {
	// Layer is the MPI software layer of the event: pml, btl, pal, ucx or errors.
	Layer string
	// Message says what the event means.
	Message string
	// Advice says what to do about it; it may be empty.
	Advice string
}

// checkProgram checks that the probe's program runs on the side it reads
// and that its parameter is in range.
func (p Probe) checkProgram() error {
	returns := p.Program == AsyncEventRet
	entries := p.Program == Stash || p.Program == FreeListGrow || p.Program == FreeListAtMax || p.Program == MPIError || p.Program == GateOpen
	switch {
	case p.Program > GateClose:
		return fmt.Errorf("unknown program %d", p.Program)
	case returns && p.Side != Return:
		return fmt.Errorf("%s runs on a return", p.Program)
	case entries && p.Side != Entry:
		return fmt.Errorf("%s runs on an entry", p.Program)
	case p.Program == Count && p.Param > uint8(maxSource):
		return fmt.Errorf("peak source %d: want 0 or an argument 1-%d", p.Param, maxSource)
	case (p.Program == Stash || returns) && p.Param >= stashSlots:
		return fmt.Errorf("stash slot %d: want 0-%d", p.Param, stashSlots-1)
	case (p.Program == GateOpen || p.Program == GateCount || p.Program == GateClose) && int(p.Param) >= gates:
		return fmt.Errorf("gate %d: want 0-%d", p.Param, gates-1)
	case p.Program == MPIError && p.Param != errorsOMPI && p.Param != errorsMPICH:
		return fmt.Errorf("error layout %d: want ErrorsOMPI or ErrorsMPICH", p.Param)
	case p.Program == Stash && (p.Cond.Cmp != Always || p.Cond.Src < Arg(1)):
		return fmt.Errorf("a stash keeps an argument (Cond.Src 1-5) and has no comparison")
	case p.Program.readsFreeList() && p.Cond != (Condition{}):
		return fmt.Errorf("%s has no condition: its operand bits carry the library's free-list layout", p.Program)
	}
	return nil
}
