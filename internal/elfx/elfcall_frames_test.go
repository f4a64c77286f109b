package elfx_test

import (
	"debug/elf"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/internal/status/unwind"
)

// trixieLibMPI opens Debian 13's libmpi.so.40 (Open MPI 5.0, ob1 built in)
// in the root .ci/roots makes, or skips with Require.
func trixieLibMPI(t *testing.T) *elf.File {
	t.Helper()
	path := filepath.Join(mpitest.RootsDir(), "trixie", "usr/lib/x86_64-linux-gnu/libmpi.so.40")
	if _, err := os.Stat(path); err != nil {
		mpitest.Require(t, "Debian 13's libmpi.so.40 at "+path+" (make the root with .ci/roots)")
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Open MPI 5.0 as Debian 13 builds it keeps ob1's send path
// (mca_pml_ob1_send_request_start_seq, inline in the source) out of line
// as one static function that mca_pml_ob1_isend and _send both call, and
// strips its name: the call that queues a send on send_pending,
// mca_pml_ob1_enable_progress(1), is in neither function. Its frame in
// .eh_frame finds it.
func TestSitesWithFramesTrixieOb1(t *testing.T) {
	f := trixieLibMPI(t)
	calls, err := elfx.ReadCalls(f)
	if err != nil {
		t.Fatal(err)
	}
	frames, err := unwind.LoadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	deep := calls.WithFrames(frames.Function)
	const callee = "mca_pml_ob1_enable_progress"
	var shared []uint64
	for _, fn := range []string{"mca_pml_ob1_isend", "mca_pml_ob1_send"} {
		if sites, err := calls.Sites(fn, callee); err != nil || len(sites) != 0 {
			t.Errorf("%s without frames: %#x, %v; want none (the call is out of line)", fn, sites, err)
		}
		sites, err := deep.Sites(fn, callee)
		if err != nil || len(sites) != 1 {
			t.Fatalf("%s with frames: %#x, %v; want one site", fn, sites, err)
		}
		if shared != nil && !slices.Equal(sites, shared) {
			t.Errorf("%s: site %#x, _isend's %#x: want the one shared copy", fn, sites, shared)
		}
		shared = sites
		// The site is in no named function: in the copy both call.
		for _, s := range mustSymbols(t, f) {
			if s.Value <= sites[0] && sites[0] < s.Value+s.Size && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
				t.Errorf("site %#x is in %s, want an unnamed function", sites[0], s.Name)
			}
		}
	}
	// The functions whose calls were found before are unchanged.
	for _, fn := range []string{"mca_pml_ob1_start", "mca_pml_ob1_progress", "mca_pml_ob1_send_request_process_pending", "mca_pml_ob1_send_request_schedule_once"} {
		a, errA := calls.Sites(fn, callee)
		b, errB := deep.Sites(fn, callee)
		if errA != nil || errB != nil || len(a) == 0 || !slices.Equal(a, b) {
			t.Errorf("%s: %#x (%v) without frames, %#x (%v) with: want the same, at least one", fn, a, errA, b, errB)
		}
	}
}

func mustSymbols(t *testing.T, f *elf.File) []elf.Symbol {
	t.Helper()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	return syms
}
