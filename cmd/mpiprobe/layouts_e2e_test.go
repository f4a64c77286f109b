package main

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/layout"
	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// TestProbesListsLayoutSources runs `mpiprobe probes --json -p PID` on a
// rank of Open MPI and of MPICH, with the tables of verified builds and
// with them off: the struct layouts that status and the collectives read
// (Open MPI's communicator and ob1 request, MPICH's communicator, request
// and UCX request) list every field with its source, "verified table"
// first, then, with the tables off, another source (Debian's libraries
// have no DWARF) and, where found, the same values.
func TestProbesListsLayoutSources(t *testing.T) {
	// The source of each struct's fields without the tables: inferred,
	// MPIR_Request's header taken from MPICH's sources, and UCX's request
	// learnt by status from the requests it reads (unknown here).
	offSource := map[string]string{
		mpiabi.CommLayoutStruct: "inferred: ", mpiabi.OB1LayoutStruct: "inferred: ",
		mpiabi.MPICHRequestStruct: string(mpiabi.MPICHSources), mpiabi.UCPRequestStruct: "unknown",
		// Where an MPIR_Request keeps its UCX request: status finds it in
		// each request.
		mpiabi.MPICHRequestStruct + "/UCX request": "unknown",
	}
	sourceOf := func(name, field string) string {
		if s, ok := offSource[name+"/"+field]; ok {
			return s
		}
		return offSource[name]
	}
	bin := mpitest.BuildMpiprobe(t)
	for _, tc := range []struct {
		impl    mpitest.Impl
		structs []string
	}{
		{mpitest.OpenMPI(), []string{mpiabi.CommLayoutStruct, mpiabi.OB1LayoutStruct}},
		{mpitest.MPICH(), []string{mpiabi.CommLayoutStruct, mpiabi.MPICHRequestStruct, mpiabi.UCPRequestStruct}},
	} {
		t.Run(tc.impl.Name, func(t *testing.T) {
			mpitest.RequireE2E(t, tc.impl)
			pid := strconv.Itoa(hungJob(t, bin, tc.impl, "skip", 2, false)[0])
			tables := layoutsOf(t, bin, pid, false)
			inferred := layoutsOf(t, bin, pid, true)
			for _, name := range tc.structs {
				want, got := tables[name], inferred[name]
				if len(want) == 0 {
					t.Errorf("%s: no fields with the tables", name)
				}
				for _, w := range want {
					i := slices.IndexFunc(got, func(f mpiabi.LayoutField) bool { return f.Name == w.Name })
					switch {
					case w.How != "verified table":
						t.Errorf("%s %s: source %q with the tables", name, w.Name, w.How)
					case i < 0:
						t.Errorf("%s %s: not listed without the tables", name, w.Name)
					case !strings.HasPrefix(string(got[i].How), sourceOf(name, w.Name)):
						t.Errorf("%s %s: source %q without the tables, want %q... (%s)", name, w.Name, got[i].How, sourceOf(name, w.Name), got[i].Note)
					case got[i].Found() && got[i].Value != w.Value:
						t.Errorf("%s %s: inferred %#x, the table has %#x", name, w.Name, got[i].Value, w.Value)
					}
				}
			}
		})
	}
}

// layoutsOf returns the fields of each struct layout `mpiprobe probes
// --json -p pid` lists, by struct, with the tables of verified builds off
// or on.
func layoutsOf(t *testing.T, bin, pid string, off bool) map[string][]mpiabi.LayoutField {
	t.Helper()
	cmd := exec.Command(bin, "probes", "--json", "-p", pid)
	if off {
		cmd.Env = append(cmd.Environ(), mpiabi.NoVerifiedLayoutsEnv+"=1")
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mpiprobe probes -p %s: %v\n%s", pid, err, out)
	}
	var doc struct {
		Processes []struct {
			Layouts []mpiabi.LayoutStatus `json:"layouts"`
		} `json:"processes"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.Processes) != 1 {
		t.Fatalf("mpiprobe probes --json: %v, %d processes\n%s", err, len(doc.Processes), out)
	}
	res := map[string][]mpiabi.LayoutField{}
	for _, l := range doc.Processes[0].Layouts {
		if l.Reason != "" {
			t.Logf("%s of %s: %s", l.Struct, l.File, l.Reason)
		}
		res[l.Struct] = l.Fields
		for _, f := range l.Fields {
			t.Logf("tables off=%v: %s %-24s %#x %s %s", off, l.Struct, f.Name, f.Value, f.How, f.Note)
		}
	}
	return res
}

// TestRootLayoutsInferred runs `mpiprobe probes --json -p PID` on a rank
// of each root build (Debian 13's Open MPI 5.0.7 and MPICH 4.2.1, Debian
// 11's Open MPI 4.1.0 and MPICH 3.4.1) with the tables off: every field
// of the communicator layout, and of ob1's request layout, is inferred.
// The exception is MPICH's rank map, which ch3 (Debian 11's MPICH) has
// not: its connection table is inferred instead. Open MPI 5.0 keeps the
// communicator's name behind a pointer; 4.1.0's ob1 stores the request's
// peer, tag and communicator from XMM registers.
func TestRootLayoutsInferred(t *testing.T) {
	for _, rb := range rootBuilds() {
		t.Run(rb.name, func(t *testing.T) {
			impl := rb.impl(t)
			bin := mpitest.BuildMpiprobe(t)
			pid := strconv.Itoa(hungJob(t, bin, impl, "skip", 2, false)[0])
			layouts := layoutsOf(t, bin, pid, true)
			structs := []string{mpiabi.CommLayoutStruct}
			if strings.HasPrefix(rb.name, "openmpi") {
				structs = append(structs, mpiabi.OB1LayoutStruct)
			}
			for _, name := range structs {
				fields := layouts[name]
				if len(fields) == 0 {
					t.Errorf("%s: no fields listed", name)
				}
				ch3 := slices.ContainsFunc(fields, func(f mpiabi.LayoutField) bool { return f.Name == layout.FieldVCRT && f.Found() })
				for _, f := range fields {
					if !f.Found() && !(ch3 && f.Name == layout.FieldRankMap) {
						t.Errorf("%s %s: not inferred (%s)", name, f.Name, f.Note)
					}
				}
			}
		})
	}
}
