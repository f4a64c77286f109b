package probes_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/kernel"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/probes"
)

// debianIBVerbs is the real libibverbs of Debian's libibverbs1 package.
const debianIBVerbs = "/usr/lib/x86_64-linux-gnu/libibverbs.so.1"

// openibCatalog is the catalog's SRQ events, the ones that probe libibverbs.
func openibCatalog(t *testing.T) probes.Catalog {
	t.Helper()
	var cat probes.Catalog
	for _, e := range probes.Full().Events {
		for _, p := range e.Probes {
			if p.Library == probes.IBVerbs {
				cat.Events = append(cat.Events, e)
				break
			}
		}
	}
	if len(cat.Events) != 2 {
		t.Fatalf("catalog has %d libibverbs events, want openib.srq_limit and openib.srq_grown", len(cat.Events))
	}
	return cat
}

func loadObjects(t *testing.T) *bpf.MpiprobeObjects {
	t.Helper()
	mpitest.RequireE2E(t)
	var objs bpf.MpiprobeObjects
	if err := kernel.Load(&objs, kernel.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = objs.Close() })
	return &objs
}

func fileTarget(t *testing.T, path string) probes.Target {
	t.Helper()
	tg, err := probes.FileTarget(probes.IBVerbs, path, path)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestIBVerbsProbesAttachToDebianLibrary attaches every libibverbs probe of
// the catalog to the real library, whose ibv_get_async_event and
// ibv_modify_srq exist in two versions each: no entry may be unavailable.
// No RDMA device exists here, so nothing can fire; TestSRQEventsOnFixture
// checks the decoding.
func TestIBVerbsProbesAttachToDebianLibrary(t *testing.T) {
	objs := loadObjects(t)
	if _, err := os.Stat(debianIBVerbs); err != nil {
		mpitest.Require(t, "libibverbs1 ("+debianIBVerbs+")")
	}
	cat := openibCatalog(t)
	att, err := probes.NewAttacher(probes.ProgramsOf(&objs.MpiprobePrograms), cat)
	if err != nil {
		t.Fatal(err)
	}
	defer att.Close()
	if err := att.Add([]probes.Target{fileTarget(t, debianIBVerbs)}); err != nil {
		t.Fatal(err)
	}
	st := att.Status()
	if len(st) != 2 {
		t.Fatalf("statuses %+v, want one per SRQ event", st)
	}
	for _, s := range st {
		if !s.Attached || s.Reason != "" {
			t.Errorf("%s in %s: attached=%v reason=%q, want attached", s.Event, s.File, s.Attached, s.Reason)
		}
	}
	if got := att.Attached(); got != 3 {
		t.Errorf("%d links, want 3 (async event entry and return, modify_srq entry)", got)
	}
}

// TestSRQEventsOnFixture runs a TEST FIXTURE, not libibverbs: a small
// library of our own (testdata/verbsfixture) with libibverbs' signatures
// and versioned symbols, called by a program that fetches SRQ-limit and
// other async events and modifies an SRQ. The catalog's probes, attached
// to the fixture as if it were libibverbs, must count the SRQ-limit events
// only, the IBV_SRQ_LIMIT modifications only, with the largest max_wr as
// peak, and only through the default (IBVERBS_1.1) versions the program
// calls.
func TestSRQEventsOnFixture(t *testing.T) {
	objs := loadObjects(t)
	if _, err := exec.LookPath("cc"); err != nil {
		mpitest.Require(t, "cc (to build the fixture)")
	}
	dir := t.TempDir()
	build := exec.Command("bash", filepath.Join(mpitest.RepoRoot(t), "testdata", "verbsfixture", "build.sh"), dir)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build fixture: %v\n%s", err, out)
	}
	const limits, others = 3, 2
	grown := []string{"1024", "4096", "2048"}
	const maxWR, maxWROnly = 4096, 2

	cat := openibCatalog(t)
	att, err := probes.NewAttacher(probes.ProgramsOf(&objs.MpiprobePrograms), cat)
	if err != nil {
		t.Fatal(err)
	}
	defer att.Close()
	if err := att.Add([]probes.Target{fileTarget(t, filepath.Join(dir, "libverbs_fixture.so"))}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "fixture_main"), "-l", strconv.Itoa(limits), "-o", strconv.Itoa(others),
		"-g", strings.Join(grown, ","), "-x", strconv.Itoa(maxWROnly))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := objs.Traced.Put(uint32(cmd.Process.Pid), uint32(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if err := cmd.Wait(); err != nil {
		t.Fatalf("fixture: %v (%q)", err, line)
	}
	if !strings.HasPrefix(line, "fixture done") {
		t.Fatalf("fixture printed %q", line)
	}

	got := map[string]bpf.MpiprobeCountVal{}
	var k bpf.MpiprobeCountKey
	var v bpf.MpiprobeCountVal
	it := objs.Counts.Iterate()
	for it.Next(&k, &v) {
		if k.Tgid == uint32(cmd.Process.Pid) {
			got[cat.Events[k.Event].ID] = v
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if c := got["openib.srq_limit"].Count; c != limits {
		t.Errorf("openib.srq_limit counted %d, want %d (the -l events of type 15; the %d others must not count)", c, limits, others)
	}
	g := got["openib.srq_grown"]
	if g.Count != uint64(len(grown)) || g.Peak != maxWR {
		t.Errorf("openib.srq_grown counted %d with peak %d, want %d (the -g calls with IBV_SRQ_LIMIT; not the %d IBV_SRQ_MAX_WR ones) with peak %d",
			g.Count, g.Peak, len(grown), maxWROnly, maxWR)
	}
}
