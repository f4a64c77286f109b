package agg

import (
	"strconv"

	"github.com/mpiprobe/mpiprobe/internal/text"
)

// Comm identifies a communicator the same way on every rank.
//
// Two Comm values denote the same communicator on two ranks when they are
// equal, with these exceptions (see the package documentation): a Comm
// named "WORLD" is MPI_COMM_WORLD whatever its ID and Size; a Comm named
// "SELF", and any Comm of Size 1, is private to the rank that names it; a
// Local Comm cannot be matched across ranks at all; and equal values may
// still be different communicators when a split made halves of equal size.
type Comm struct {
	ID    uint64 `json:"id"`              // context id shared by all members
	Size  int    `json:"size"`            // group size (two halves of a split share an ID; Size tells them apart only if sizes differ)
	Name  string `json:"name,omitempty"`  // "WORLD", "SELF", or "" for others
	Local bool   `json:"local,omitempty"` // ID is only the rank-local handle (unknown library build): it cannot be matched across ranks
}

// String names the communicator for people: "WORLD (size 8)" for a named
// one, "comm 3 (size 4)" for a context id, "comm 0x7f12 (size 4, local
// handle)" for a rank-local handle. A Size of 0 or less prints as
// "size unknown".
func (c Comm) String() string {
	size := "size unknown"
	if c.Size > 0 {
		size = "size " + strconv.Itoa(c.Size)
	}
	switch {
	case c.Name != "":
		return text.Line(c.Name) + " (" + size + ")"
	case c.Local:
		return "comm 0x" + strconv.FormatUint(c.ID, 16) + " (" + size + ", local handle)"
	default:
		return "comm " + strconv.FormatUint(c.ID, 10) + " (" + size + ")"
	}
}

// Short names the communicator in counts: "WORLD" for a named one, the full
// String otherwise (two halves of a split may share the ID).
func (c Comm) Short() string {
	if c.Name != "" {
		return text.Line(c.Name)
	}
	return c.String()
}
