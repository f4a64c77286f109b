package agg

import (
	"strconv"
	"syscall"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/identity"
	"golang.org/x/sys/unix"
)

// Sample is one counter read from the BPF maps: how often one event happened in one process.
type Sample struct {
	// PID is the process (thread group) id.
	PID uint32
	// Event is the catalog event id, e.g. "ob1.send_pending.new".
	Event string
	// Detail names the instance the event is about when the event has
	// several, e.g. a free list's class or "MPI_ERR_RANK in MPI_Send"; it
	// is empty for events that have one instance per process.
	Detail string
	// Count is the running total since tracing began.
	Count uint64
	// Peak is the largest value the event carried, e.g. the size a free
	// list grew to; 0 when the event carries none.
	Peak uint64
	// First and Last are the wall-clock times of the first and the latest hit.
	First, Last time.Time
}

// EndKind says how a traced process ended.
type EndKind int

const (
	// Running means the process was still alive when the summary was built.
	Running EndKind = iota
	// Exited means the process called exit; End.Code holds the status.
	Exited
	// Signaled means a signal killed the process; End.Signal holds it.
	Signaled
	// Vanished means the process is gone but how it ended is unknown.
	Vanished
)

// End says how a process ended.
type End struct {
	// Kind says which of the other fields are meaningful.
	Kind EndKind
	// Code is the exit status when Kind is Exited.
	Code int
	// Signal is the number of the killing signal when Kind is Signaled.
	Signal int
	// At is when the end was observed (zero for Running).
	At time.Time
	// MPIAbort is set when the process called MPI_Abort, whatever ended
	// it then (its own exit, or the launcher's signal); AbortCode is the
	// error code it was called with.
	MPIAbort  bool
	AbortCode int
}

// String says how a process ended in a few words: "running", "exit 0",
// "killed by SIGKILL" or "exit status unknown", after
// "MPI_Abort(CODE), " when it called MPI_Abort.
func (e End) String() string {
	if e.MPIAbort {
		return "MPI_Abort(" + strconv.Itoa(e.AbortCode) + "), " + e.kind()
	}
	return e.kind()
}

// kind is String without MPI_Abort.
func (e End) kind() string {
	switch e.Kind {
	case Running:
		return "running"
	case Exited:
		return "exit " + strconv.Itoa(e.Code)
	case Signaled:
		return "killed by " + SignalName(e.Signal)
	default:
		return "exit status unknown"
	}
}

// SignalName names a signal number, e.g. "SIGKILL", or "signal 99" when the
// number has no name.
func SignalName(sig int) string {
	if n := unix.SignalName(syscall.Signal(sig)); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(sig)
}

// Proc is a traced process as the loader knows it.
type Proc struct {
	// PID is the process (thread group) id.
	PID int
	// Comm is the kernel's command name of the process.
	Comm string
	// Identity is the process's MPI host, job and rank.
	Identity identity.Identity
	// End says how the process ended, or that it still runs.
	End End
	// Startup is how long the process spent in MPI's start and end.
	Startup Startup
}

// Startup is how long a rank spent in MPI's start and end; a zero duration means not observed.
type Startup struct {
	// InitStart is when MPI_Init or MPI_Init_thread was entered (zero when unknown).
	InitStart time.Time
	// Init is the time inside MPI_Init / MPI_Init_thread.
	Init time.Duration
	// Modex is the part of Init spent exchanging addresses between ranks.
	Modex time.Duration
	// ModexVia names what bracketed Modex, e.g. "PMIx fence" (Open MPI) or "UCX address exchange" (MPICH).
	ModexVia string
	// Finalize is the time inside MPI_Finalize.
	Finalize time.Duration
}

// IsZero reports whether nothing about the start and end was observed.
func (s Startup) IsZero() bool {
	return s.InitStart.IsZero() && s.Init == 0 && s.Modex == 0 && s.ModexVia == "" && s.Finalize == 0
}

// EventInfo is what the catalog says about an event, for the summary.
type EventInfo struct {
	// Layer is the MPI software layer of the event: pml, btl, pal, ucx or errors.
	Layer string
	// Message says what the event means.
	Message string
	// Advice says what to do about it; it may be empty.
	Advice string
}
