package probes_test

import (
	"os"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/probes"
)

// TestFreeListEventsFindTheLayout attaches the whole catalog to a copy of
// Debian's libopen-pal whose build id mpiprobe does not know (what a
// rebuild of the same sources gives) and to Debian's ob1: without a debug
// file the free-list events attach with the layout inferred from the
// copy's code, and every other event attaches too; with the separate debug
// file found by build id they attach, naming it as where their layout
// came from.
func TestFreeListEventsFindTheLayout(t *testing.T) {
	objs := loadObjects(t)
	if _, err := os.Stat(mpitest.DebianOb1); err != nil {
		mpitest.Require(t, "Debian's libopenmpi3 ("+mpitest.DebianOb1+")")
	}
	foreign := mpitest.NewForeignPal(t)
	if got := elfx.DebugFile(foreign.DebugDir, foreign.BuildID); got != foreign.DebugFile {
		t.Fatalf("DebugFile = %s, want %s (gdb's .build-id/ab/cdef….debug)", got, foreign.DebugFile)
	}
	palCopy, debugDir, debugFile := foreign.Lib, foreign.DebugDir, foreign.DebugFile

	cat := probes.Full()
	var palEvents []string
	for _, e := range cat.Events {
		for _, p := range e.Probes {
			if p.Library == probes.OMPIPal {
				palEvents = append(palEvents, e.ID)
				break
			}
		}
	}
	if len(palEvents) != 2 {
		t.Fatalf("catalog probes libopen-pal in %v, want the two free-list events", palEvents)
	}
	pal, err := probes.FileTarget(probes.OMPIPal, palCopy, palCopy)
	if err != nil {
		t.Fatal(err)
	}
	ob1, err := probes.FileTarget(probes.OMPIPmlOb1, mpitest.DebianOb1, mpitest.DebianOb1)
	if err != nil {
		t.Fatal(err)
	}

	attach := func(debugDirs []string) map[string]probes.Status {
		att, err := probes.NewAttacher(probes.ProgramsOf(&objs.MpiprobePrograms), cat)
		if err != nil {
			t.Fatal(err)
		}
		att.DebugDirs = debugDirs
		t.Cleanup(func() { _ = att.Close() })
		if err := att.Add([]probes.Target{pal, ob1}); err != nil {
			t.Fatalf("Add: %v (an unknown layout must not fail the rest)", err)
		}
		out := map[string]probes.Status{}
		for _, s := range att.Status() {
			out[string(s.Library)+" "+s.Event] = s
		}
		return out
	}

	// Without a debug file the layout is inferred from the copy's code.
	without := attach([]string{t.TempDir()})
	for _, ev := range palEvents {
		s := without[string(probes.OMPIPal)+" "+ev]
		if !s.Attached || !strings.HasPrefix(s.Layout, "opal_free_list_t from the code of opal_free_list_grow_st") {
			t.Errorf("%s without a debug file: attached %v, reason %q, layout %q; want attached with the layout inferred from its code", ev, s.Attached, s.Reason, s.Layout)
		}
	}
	n := 0
	for k, s := range without {
		if strings.HasPrefix(k, string(probes.OMPIPmlOb1)+" ") {
			n++
			if !s.Attached && !strings.HasPrefix(s.Reason, "not in this build") {
				t.Errorf("%s: unavailable (%s) next to an unknown libopen-pal layout", k, s.Reason)
			}
		}
	}
	if n == 0 {
		t.Errorf("no ob1 event was tried: %+v", without)
	}

	with := attach([]string{t.TempDir(), debugDir})
	for _, ev := range palEvents {
		s := with[string(probes.OMPIPal)+" "+ev]
		if !s.Attached || s.Reason != "" || s.Layout != "opal_free_list_t from debug file "+debugFile {
			t.Errorf("%s with the debug file: attached %v, reason %q, layout %q; want attached with its layout from %s", ev, s.Attached, s.Reason, s.Layout, debugFile)
		}
	}
}
