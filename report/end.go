package report

import (
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/mpiprobe/mpiprobe/agg"
)

// EndString says how a process ended in a few words: "running", "exit 0",
// "killed by SIGKILL" or "exit status unknown".
func EndString(e agg.End) string {
	switch e.Kind {
	case agg.Running:
		return "running"
	case agg.Exited:
		return "exit " + strconv.Itoa(e.Code)
	case agg.Signaled:
		return "killed by " + signalName(e.Signal)
	default:
		return "exit status unknown"
	}
}

// signalName names a signal number, e.g. "SIGKILL", or "signal 99" when the
// number has no name.
func signalName(sig int) string {
	if n := unix.SignalName(syscall.Signal(sig)); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(sig)
}

// endState is the JSON name of an end kind.
func endState(k agg.EndKind) string {
	switch k {
	case agg.Running:
		return "running"
	case agg.Exited:
		return "exited"
	case agg.Signaled:
		return "signaled"
	case agg.Vanished:
		return "vanished"
	default:
		return "unknown"
	}
}
