package probes

import (
	"debug/elf"
	"os"
	"path/filepath"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// Debian 13's Open MPI 5.0.7 queues a send in the unnamed out-of-line copy
// of ob1's send path that mca_pml_ob1_isend and _send share: both probes
// of ob1.send_pending.new reach its one call, which is attached once, and
// no other event claims it.
func TestCallSitesOutOfLineTrixie(t *testing.T) {
	path := filepath.Join(mpitest.RootsDir(), "trixie", "usr/lib/x86_64-linux-gnu/libmpi.so.40")
	if _, err := os.Stat(path); err != nil {
		mpitest.Require(t, "Debian 13's libmpi.so.40 at "+path+" (make the root with .ci/roots)")
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sites := newCallSites(f, Full(), OMPIPmlOb1, func(p Probe) string { return p.Symbol })
	const event, callee = "ob1.send_pending.new", "mca_pml_ob1_enable_progress"
	offs, ok, shared := sites.take(event, 1, "mca_pml_ob1_isend", callee, true)
	if !ok || len(offs) != 1 || shared != nil {
		t.Fatalf("isend: offsets %#x, ok %v, shared %v; want one site", offs, ok, shared)
	}
	offs2, ok, shared := sites.take(event, 1, "mca_pml_ob1_send", callee, true)
	if !ok || len(offs2) != 0 || shared != nil {
		t.Errorf("send: offsets %#x, ok %v, shared %v; want the isend site, already attached", offs2, ok, shared)
	}
	// Without OutOfLine the call is not found: what 5.0.7 gave before.
	if offs, ok, _ := sites.take(event, 2, "mca_pml_ob1_isend", callee, false); ok || len(offs) != 0 {
		t.Errorf("isend without OutOfLine: offsets %#x, ok %v; want none", offs, ok)
	}
}
