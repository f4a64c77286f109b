package metrics_test

import (
	"os/exec"
	"runtime"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// TestPromtoolComplains makes sure the check is not vacuous: the helper
// fails on a page promtool rejects (invalid UTF-8) or lints (a counter
// without _total, no help text).
func TestPromtoolComplains(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		mpitest.Require(t, "promtool (Debian package prometheus)")
	}
	for _, page := range []string{
		"# HELP a h\n# TYPE a gauge\na{x=\"\xff\"} 1\n",
		"# HELP a h\n# TYPE a counter\na 1\n",
		"# HELP a\n# TYPE a gauge\na 1\n",
	} {
		ft := &fakeT{TB: t}
		mpitest.CheckWithPromtool(ft, []byte(page))
		if !ft.failed {
			t.Errorf("CheckWithPromtool accepted %q", page)
		}
	}
}

// fakeT records a failure or a skip instead of reporting it.
type fakeT struct {
	testing.TB
	failed, skipped bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }

func (f *fakeT) Fatal(...any) { f.failed = true; runtime.Goexit() }
func (f *fakeT) Skip(...any)  { f.skipped = true; runtime.Goexit() }

// TestPromtoolMissing: without promtool, the helper skips, or fails under
// MPIPROBE_E2E=require.
func TestPromtoolMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, mode := range []string{"", "require"} {
		t.Setenv("MPIPROBE_E2E", mode)
		ft := &fakeT{TB: t}
		done := make(chan struct{})
		go func() { // Skip and Fatal end the goroutine
			defer close(done)
			mpitest.CheckWithPromtool(ft, []byte("# HELP a h\n# TYPE a gauge\na 1\n"))
		}()
		<-done
		if want := mode == ""; ft.skipped != want || ft.failed == want {
			t.Errorf("MPIPROBE_E2E=%q: skipped %v, failed %v", mode, ft.skipped, ft.failed)
		}
	}
}
