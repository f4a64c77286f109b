package probes

import (
	"debug/elf"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/elfx"
)

// Libraries probed for startup timing only.
const (
	// OMPIPmixExt3x is Open MPI 4.1's PMIx client component, mca_pmix_ext3x.so.
	OMPIPmixExt3x Library = "mca_pmix_ext3x"
	// OMPIPmixPmix3x is Open MPI 4.0's PMIx client component, mca_pmix_pmix3x.so.
	OMPIPmixPmix3x Library = "mca_pmix_pmix3x"
	// UCXLib is UCX's protocol library libucp.so.0, used by MPICH ch4:ucx.
	UCXLib Library = "libucp"
)

// Mark is a point of an MPI process's start or end; the values are the
// indexes of struct startup (enum mark in bpf/lifecycle.h).
type Mark uint8

// The marks startup_mark records.
const (
	MarkInitEnter = Mark(bpf.MpiprobeMarkMARK_INIT_ENTER) // MPI_Init or MPI_Init_thread entered
	MarkInitExit  = Mark(bpf.MpiprobeMarkMARK_INIT_EXIT)
	MarkPMIxStart = Mark(bpf.MpiprobeMarkMARK_PMIX_START) // Open MPI: the first PMIx fence, which is the modex
	MarkPMIxEnd   = Mark(bpf.MpiprobeMarkMARK_PMIX_END)   // Open MPI: ompi_proc_complete_init, right after the modex
	MarkUCXStart  = Mark(bpf.MpiprobeMarkMARK_UCX_START)  // MPICH: ucp_worker_get_address, before the address exchange
	MarkUCXEnd    = Mark(bpf.MpiprobeMarkMARK_UCX_END)    // MPICH: the first ucp_ep_create, after it
	MarkFinEnter  = Mark(bpf.MpiprobeMarkMARK_FIN_ENTER)  // MPI_Finalize entered
	MarkFinExit   = Mark(bpf.MpiprobeMarkMARK_FIN_EXIT)
	MarkAbort     = Mark(bpf.MpiprobeMarkMARK_ABORT) // MPI_Abort entered (its error code is kept with the marks)
	// NumMarks is the number of marks.
	NumMarks = Mark(bpf.MpiprobeMarkMARK_MAX)
)

// startupProbe records Mark when Symbol of Library is entered or returns.
type startupProbe struct {
	Library Library
	Symbol  string
	Side    Side
	Mark    Mark
}

// startupProbes returns where MPI_Init, its modex and MPI_Finalize begin and
// end, and where MPI_Abort is called, for Open MPI 4.x and MPICH over UCX. In Open MPI 4.1.4, ompi_mpi_init
// calls the PMIx fence of the modex, then ompi_proc_complete_init, then the
// PML's add_procs, then a second fence (the barrier); MPICH hides its PMI
// client, so its address exchange is bracketed by UCX's calls around it.
func startupProbes() []startupProbe {
	var out []startupProbe
	for _, lib := range []Library{OMPILibMPI, MPICHLib} {
		out = append(out,
			startupProbe{lib, "PMPI_Init", Entry, MarkInitEnter},
			startupProbe{lib, "PMPI_Init", Return, MarkInitExit},
			startupProbe{lib, "PMPI_Init_thread", Entry, MarkInitEnter},
			startupProbe{lib, "PMPI_Init_thread", Return, MarkInitExit},
			startupProbe{lib, "PMPI_Finalize", Entry, MarkFinEnter},
			startupProbe{lib, "PMPI_Finalize", Return, MarkFinExit},
			startupProbe{lib, "PMPI_Abort", Entry, MarkAbort},
		)
	}
	return append(out,
		startupProbe{OMPILibMPI, "ompi_proc_complete_init", Entry, MarkPMIxEnd},
		startupProbe{OMPIPmixExt3x, "ext3x_fencenb", Entry, MarkPMIxStart},
		startupProbe{OMPIPmixPmix3x, "pmix3x_fencenb", Entry, MarkPMIxStart},
		startupProbe{UCXLib, "ucp_worker_get_address", Entry, MarkUCXStart},
		startupProbe{UCXLib, "ucp_ep_create", Entry, MarkUCXEnd},
	)
}

// StartupLibraries returns the libraries the startup probes are in.
func StartupLibraries() []Library {
	var out []Library
	for _, p := range startupProbes() {
		if !slices.Contains(out, p.Library) {
			out = append(out, p.Library)
		}
	}
	return out
}

// StartupAttacher attaches the startup probes, where MPI_Init, its modex
// and MPI_Finalize begin and end, to library files, each (device, inode)
// once, all served by one program whose cookie is the Mark.
type StartupAttacher struct {
	prog  *ebpf.Program
	files fileLinks
	// OnFile, when set, is given the links made for each newly attached
	// file before Add returns, e.g. to pin them; an error fails Add.
	OnFile func(t Target, links []link.Link) error
	// missing lists "file: symbol" of probes not in their file's build.
	missing []string
}

// NewStartupAttacher returns a StartupAttacher running prog.
func NewStartupAttacher(prog *ebpf.Program) *StartupAttacher {
	return &StartupAttacher{prog: prog}
}

// Skip marks a file as attached already, e.g. by an earlier agent whose
// pinned links still run.
func (a *StartupAttacher) Skip(dev, ino uint64) { a.files.skipFile(dev, ino) }

// Links returns how many links are live.
func (a *StartupAttacher) Links() int { return len(a.files.links) }

// Missing returns the probes that were not in their file's build.
func (a *StartupAttacher) Missing() []string { return append([]string(nil), a.missing...) }

// Close releases the links (pinned ones stay attached).
func (a *StartupAttacher) Close() error { return a.files.close() }

// Add attaches the startup probes to the targets not attached before. A
// missing symbol is recorded (see Missing), any other failure closes the
// links this call made and is returned.
func (a *StartupAttacher) Add(targets []Target) error {
	return a.files.add(targets, a.OnFile, func(t Target) ([]link.Link, bool, error) {
		var probes []startupProbe
		for _, p := range startupProbes() {
			if p.Library == t.Library {
				probes = append(probes, p)
			}
		}
		if len(probes) == 0 {
			return nil, false, nil
		}
		links, err := a.attachFile(t, probes)
		return links, true, err
	})
}

// attachFile attaches the probes to one file. On an error it returns the
// links it made until then, for Add to close.
func (a *StartupAttacher) attachFile(t Target, ps []startupProbe) ([]link.Link, error) {
	ex, err := link.OpenExecutable(t.Path)
	if err != nil {
		return nil, fmt.Errorf("open %s (%s): %w", t.Display, t.Path, err)
	}
	file, err := elf.Open(t.Path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", t.Display, err)
	}
	defer file.Close()
	syms, err := elfx.ReadSymbols(file)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", t.Display, err)
	}
	var made []link.Link
	for _, p := range ps {
		opts := &link.UprobeOptions{Cookie: uint64(p.Mark)}
		// Past an endbr64 or a prologue instruction the kernel would
		// single-step, the return probe too (entryPoint); a name with
		// several versions stays at the entry of the one the link package
		// picks.
		if def, _, found, versioned, err := syms.Definition(p.Symbol); err == nil && found && !versioned {
			opts.Offset, _ = entryPoint(symbolCode(file, def), false)
		}
		var l link.Link
		if p.Side == Return {
			l, err = ex.Uretprobe(p.Symbol, a.prog, opts)
		} else {
			l, err = ex.Uprobe(p.Symbol, a.prog, opts)
		}
		if errors.Is(err, link.ErrNoSymbol) {
			a.missing = append(a.missing, t.Display+": "+p.Symbol)
			continue
		}
		if err != nil {
			return made, fmt.Errorf("attach %s:%s (%s): %w", t.Display, p.Symbol, strings.ToLower(p.Side.String()), err)
		}
		made = append(made, l)
	}
	return made, nil
}
