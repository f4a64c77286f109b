package status

import (
	"fmt"
	"path"
	"strings"

	"github.com/mpiprobe/mpiprobe/internal/discover"
	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/symbolize"
	"github.com/mpiprobe/mpiprobe/probes"
)

// apiLibrary reports whether a mapped file is an MPI API library: one
// whose exported functions are the MPI calls an application makes.
func apiLibrary(object string) bool {
	base := path.Base(object)
	if l, ok := discover.Classify(base); ok {
		switch l {
		case probes.OMPILibMPI, probes.MPICHLib, probes.OMPIFortran, probes.MPICHFortran:
			return true
		}
	}
	for _, p := range []string{"libmpi_usempi", "libmpi_usempif08", "libmpifort.so", "libmpicxx.so", "libmpi_cxx.so"} {
		if strings.HasPrefix(base, p) {
			return true
		}
	}
	return false
}

// inMPI is where a stack says a thread is.
type inMPI struct {
	// Call is the MPI call ("MPI_Barrier"); "" when the thread is in no
	// MPI call.
	Call string
	// API is the index of the call's outermost frame in the MPI library.
	API int
	// Site is the application's call site, "" when the unwinding stopped
	// before leaving the library.
	Site string
	// SitePC is the return address into the application (0 if unknown).
	SitePC uint64
	// Hidden says a uretprobe (mpiprobe's own, or another tool's) has
	// replaced the return address: the site is not on the stack.
	Hidden bool
}

// uprobesPage is the mapping the kernel's uretprobe trampoline lives in.
const uprobesPage = "[uprobes]"

// findCall finds the MPI call a stack (innermost frame first) is in: the
// outermost frame in an MPI API library whose function is an MPI API
// function. Internal functions of the libraries (progress threads,
// libevent) are not calls: a thread whose frames are only those is not in
// an MPI call.
//
// MPI_Init and MPI_Finalize may leave no frame of their own: Open MPI's
// MPI_Finalize tail-calls ompi_mpi_finalize, so a rank waiting there shows
// "usleep <- ompi_mpi_finalize <- main". The library functions that
// implement them (entryCalls) stand for the call when no API frame is
// found.
func findCall(frames []symbolize.Site, pcs []uint64) inMPI {
	out := inMPI{API: -1}
	entry, entryAt := "", -1
	for i, f := range frames {
		if !apiLibrary(f.Object) {
			continue
		}
		if name, ok := apiName(f.Function); ok {
			out.Call, out.API = name, i
			continue
		}
		if name, ok := entryCalls[f.Function]; ok {
			entry, entryAt = name, i
		}
	}
	if out.API < 0 && entryAt >= 0 {
		out.Call, out.API = entry, entryAt
	}
	if out.API >= 0 && out.API+1 < len(frames) && frames[out.API+1].Object == uprobesPage {
		out.Hidden = true
		if out.API+1 < len(pcs) {
			out.SitePC = pcs[out.API+1]
		}
		return out
	}
	if out.API >= 0 && out.API+1 < len(frames) {
		out.Site = siteText(frames[out.API+1])
		if out.API+1 < len(pcs) {
			out.SitePC = pcs[out.API+1]
		}
	}
	return out
}

// apiName is the MPI call a function of an API library implements:
// mpiabi.APIName; MPICH's generated bindings from 4.1 (internal_Waitall,
// to which MPI_Waitall jumps, leaving no frame of its own); and Open MPI's
// Fortran bindings, which the symbolizer names ompi_barrier_f rather than
// their aliases mpi_barrier_.
func apiName(fn string) (string, bool) {
	if name, ok := mpiabi.APIName(fn); ok {
		return name, true
	}
	if mid, ok := strings.CutPrefix(fn, "internal_"); ok {
		return mpiabi.APIName("MPI_" + mid)
	}
	if mid, ok := strings.CutPrefix(fn, "ompi_"); ok && strings.HasSuffix(mid, "_f") {
		return mpiabi.APIName("mpi_" + strings.TrimSuffix(mid, "_f") + "_")
	}
	return "", false
}

// entryCalls are the library functions that implement MPI_Init and
// MPI_Finalize, reached by a tail call that leaves no frame of the API
// function: Open MPI's, and MPICH's (whose API functions usually stay on
// the stack).
var entryCalls = map[string]string{
	"ompi_mpi_init":     "MPI_Init",
	"ompi_mpi_finalize": "MPI_Finalize",
	"MPII_Init_thread":  "MPI_Init",
	"MPII_Finalize":     "MPI_Finalize",
	"MPIR_Init_impl":    "MPI_Init",
	"MPIR_Finalize":     "MPI_Finalize",
}

// siteText renders a call site: "main+0x1e4 (hang.c:32)", or the object
// and offset when no symbol covers it.
func siteText(s symbolize.Site) string {
	var b strings.Builder
	if s.Function != "" {
		fmt.Fprintf(&b, "%s+%#x", s.Function, s.FuncOffset)
	} else {
		fmt.Fprintf(&b, "%s+%#x", path.Base(s.Object), s.Offset)
	}
	if s.File != "" && s.Line > 0 {
		fmt.Fprintf(&b, " (%s:%d", path.Base(s.File), s.Line)
		// One call instruction serves several lines (the compiler
		// merged their calls): name them all, not one as fact.
		for _, l := range s.AlsoLines {
			fmt.Fprintf(&b, " or %d", l)
		}
		b.WriteString(")")
	}
	return b.String()
}

// voteComm returns the communicator object most words point to, among
// those valid accepts; ok is false when none is valid or when two tie.
func voteComm(words []uint64, valid func(addr uint64) bool) (uint64, bool) {
	return bestVote(countVotes(words, valid))
}

// countVotes counts, per communicator object valid accepts, the words that
// point to it.
func countVotes(words []uint64, valid func(addr uint64) bool) map[uint64]int {
	votes := map[uint64]int{}
	checked := map[uint64]bool{}
	for _, w := range words {
		if w == 0 {
			continue
		}
		ok, seen := checked[w]
		if !seen {
			ok = valid(w)
			checked[w] = ok
		}
		if ok {
			votes[w]++
		}
	}
	return votes
}

// bestVote returns the object with the most votes; ok is false when there
// is none or two tie.
func bestVote(votes map[uint64]int) (uint64, bool) {
	var best uint64
	bestN, tie := 0, false
	for a, n := range votes {
		switch {
		case n > bestN:
			best, bestN, tie = a, n, false
		case n == bestN:
			tie = true
		}
	}
	if bestN == 0 || tie {
		return 0, false
	}
	return best, true
}

// mergeVotes adds the votes of two samples of one call.
func mergeVotes(a, b map[uint64]int) map[uint64]int {
	out := make(map[uint64]int, len(a)+len(b))
	for k, v := range a {
		out[k] += v
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}
