package probes_test

import (
	"path/filepath"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/probes"
)

// TestOpenMPI5Names attaches two catalog events to stand-in libraries made
// with gcc that define their functions as Open MPI 4.x names them, as 5.0
// renamed them (ob1's ompi_pml_ob1_ prefix, the vader BTL become sm), or
// not at all: each event attaches under either name, and says which
// function is missing otherwise.
func TestOpenMPI5Names(t *testing.T) {
	objs := loadObjects(t)
	dir := t.TempDir()
	tests := []struct {
		name, file, src string
		lib             probes.Library
		event           string
		reason          string // "" when the event attaches
	}{
		{"4.x ob1", "mca_pml_ob1.so", "void append_frag_to_ordered_list(void) {}\n",
			probes.OMPIPmlOb1, "ob1.out_of_sequence", ""},
		{"5.0 ob1 in libmpi", "libmpi.so.40", "void ompi_pml_ob1_append_frag_to_ordered_list(void) {}\n",
			probes.OMPIPmlOb1, "ob1.out_of_sequence", ""},
		{"ob1 without the function", "old/mca_pml_ob1.so", "void mca_pml_ob1_recv_frag_callback_match(void) {}\n",
			probes.OMPIPmlOb1, "ob1.out_of_sequence", "not in this build: append_frag_to_ordered_list (entry)"},
		{"4.x vader", "mca_btl_vader.so", "void *mca_btl_vader_alloc(void) { return 0; }\n",
			probes.OMPIBtlVader, "vader.alloc_failed", ""},
		{"5.0 sm in libopen-pal", "libopen-pal.so.80", "void *mca_btl_sm_alloc(void) { return 0; }\n",
			probes.OMPIBtlSm, "vader.alloc_failed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.file)
			mpitest.GCCLib(t, path, tt.src)
			e, _, ok := probes.Full().Lookup(tt.event)
			if !ok {
				t.Fatalf("catalog has no %s", tt.event)
			}
			att, err := probes.NewAttacher(probes.ProgramsOf(&objs.MpiprobePrograms), probes.Catalog{Events: []probes.Event{e}})
			if err != nil {
				t.Fatal(err)
			}
			defer att.Close()
			tg, err := probes.FileTarget(tt.lib, path, path)
			if err != nil {
				t.Fatal(err)
			}
			if err := att.Add([]probes.Target{tg}); err != nil {
				t.Fatal(err)
			}
			st := att.Status()
			if len(st) != 1 {
				t.Fatalf("statuses %+v, want one", st)
			}
			if st[0].Attached != (tt.reason == "") || st[0].Reason != tt.reason {
				t.Errorf("%s in %s: attached=%v reason=%q, want reason %q", st[0].Event, tt.file, st[0].Attached, st[0].Reason, tt.reason)
			}
		})
	}
}

// TestSharedCallSites attaches call-site probes to a library whose send
// functions reach the callee through one clone they share (as Open MPI
// 5.0's ob1 send path is built), and whose retry function shares another
// clone with a send function. A site of one event is attached once
// however many of its probes reach it; a site two events reach is
// attached for neither, and the event that has no other site says so.
func TestSharedCallSites(t *testing.T) {
	objs := loadObjects(t)
	path := filepath.Join(t.TempDir(), "mca_pml_ob1.so")
	mpitest.GCCLib(t, path, `
int counter;
__attribute__((noinline)) void enable(int n) { counter += n; }
static int start_seq(int x) __asm__("start_seq.constprop.0");
static __attribute__((noinline)) int start_seq(int x) { if (x > 3) enable(1); return x + 1; }
static int schedule(int x) __asm__("schedule.part.0");
static __attribute__((noinline)) int schedule(int x) { if (x > 7) enable(2); return x - 1; }
__attribute__((noinline)) int isend(int x) { return start_seq(x) * 2; }
__attribute__((noinline)) int send(int x) { return start_seq(x) + schedule(x); }
__attribute__((noinline)) int retry(int x) { return schedule(x) * 3; }
`)
	site := func(fn string) probes.Probe {
		return probes.Probe{Library: probes.OMPIPmlOb1, Symbol: fn, CallTo: "enable"}
	}
	cat := probes.Catalog{Events: []probes.Event{
		{ID: "t.new", Level: probes.Default, Message: "queued by a send", Probes: []probes.Probe{site("isend"), site("send")}},
		{ID: "t.retry", Level: probes.Default, Message: "queued again", Probes: []probes.Probe{site("retry")}},
	}}
	att, err := probes.NewAttacher(probes.ProgramsOf(&objs.MpiprobePrograms), cat)
	if err != nil {
		t.Fatal(err)
	}
	defer att.Close()
	tg, err := probes.FileTarget(probes.OMPIPmlOb1, path, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := att.Add([]probes.Target{tg}); err != nil {
		t.Fatal(err)
	}
	got := map[string]probes.Status{}
	for _, s := range att.Status() {
		got[s.Event] = s
	}
	if s := got["t.new"]; !s.Attached || s.Reason != "" {
		t.Errorf("t.new: attached=%v reason=%q, want attached at start_seq's call, once", s.Attached, s.Reason)
	}
	if s := got["t.retry"]; s.Attached || s.Reason != "retry→enable: its calls are in code shared with t.new" {
		t.Errorf("t.retry: attached=%v reason=%q, want unavailable: its only site is shared with t.new", s.Attached, s.Reason)
	}
	if n := att.Attached(); n != 1 {
		t.Errorf("%d links, want 1: start_seq's call to enable, for t.new", n)
	}
}
