package report

import (
	"github.com/mpiprobe/mpiprobe/agg"
)

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
