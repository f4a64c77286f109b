package probes_test

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/discover"
	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/layout"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/probes"
)

// TestInferredLayoutEqualsTheTable infers the communicator layout of
// Debian's Open MPI and MPICH from every rank of a running job, without
// the table, and compares it with the table's verified entry: they must be
// equal field for field, and the identity fields must be found both ways
// (objects and accessor) or by the objects with the accessor excluding the
// alternative.
func TestInferredLayoutEqualsTheTable(t *testing.T) {
	for _, impl := range []mpitest.Impl{mpitest.OpenMPI(), mpitest.MPICH()} {
		t.Run(impl.Name, func(t *testing.T) {
			mpitest.RequireE2E(t, impl)
			prog := mpitest.Build(t, impl, "hang")
			job := mpitest.StartJob(t, impl.Command(3, nil, prog, "skip"), prog, 3, impl.Lib)
			for _, pid := range job.Ranks {
				res, f, kind, build := inferRank(t, pid)
				want, ok := probes.CommLayoutOf(build)
				if !ok {
					t.Fatalf("pid %d: build %s of %s is not in the table: this test checks Debian's builds", pid, build, impl.Lib)
				}
				if res.Layout != want {
					t.Errorf("pid %d: inferred %+v\nthe table has %+v", pid, res.Layout, want)
				}
				for _, fld := range res.Fields {
					t.Logf("pid %d %s: %-16s %#x %s %s", pid, kind, fld.Name, fld.Value, fld.How, fld.Note)
					if !fld.Found() {
						t.Errorf("pid %d: %s unknown: %s", pid, fld.Name, fld.Note)
					}
				}
				if res.Took > 20*time.Millisecond {
					t.Logf("pid %d: inference took %v, over the 20 ms target (a shared host?)", pid, res.Took)
				}
				t.Logf("pid %d: inferred in %v", pid, res.Took)
				_ = f.Close()
			}
		})
	}
}

// inferRank infers the layout of the MPI C library pid maps with the
// table turned off, retrying while the rank is still in MPI_Init.
func inferRank(t *testing.T, pid int) (probes.CommLayoutResult, *elf.File, probes.Library, string) {
	t.Helper()
	fs := procfs.FS{}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mem.Close() })
	env, err := fs.Environ(pid)
	if err != nil {
		t.Fatal(err)
	}
	id := identity.FromEnv(env)
	rank, err1 := strconv.Atoi(id.Rank)
	size, err2 := strconv.Atoi(id.Size)
	if err1 != nil || err2 != nil {
		t.Fatalf("pid %d: rank %q and size %q from its environment", pid, id.Rank, id.Size)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		maps, err := fs.Maps(pid)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range discover.Discover(maps) {
			if m.Library != probes.OMPILibMPI && m.Library != probes.MPICHLib {
				continue
			}
			f, err := elf.Open(m.Mapping.Path)
			if err != nil {
				t.Fatal(err)
			}
			build, _ := elfx.BuildID(f)
			bias, ok := elfx.Loads(f.Progs).Bias(m.Mapping.Start, m.Mapping.Offset)
			if !ok {
				t.Fatalf("pid %d: no load bias for %s", pid, m.Mapping.Path)
			}
			res, err := probes.InferCommLayout(f, m.Library, probes.LiveProcess{
				Mem: func(addr uint64, p []byte) error {
					_, err := mem.ReadAt(p, int64(addr))
					return err
				},
				Bias: bias, WorldRank: rank, WorldSize: size,
			})
			if err == nil {
				return res, f, m.Library, build
			}
			_ = f.Close()
			if !errors.Is(err, probes.ErrLayoutNotReady) && time.Now().After(deadline) {
				t.Fatalf("pid %d: %v", pid, err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("pid %d: %v after 20 s", pid, err)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestVerifiedLayoutsSwitch checks that the test-only switch turns the
// tables off and that ResolveCommLayout says where each field came from.
func TestVerifiedLayoutsSwitch(t *testing.T) {
	const ompi = "2a2f4d8c4f8dc5dcc63f6789a50f3ab49f61e168"
	t.Setenv(probes.NoVerifiedLayoutsEnv, "")
	if _, ok := probes.CommLayoutOf(ompi); !ok {
		t.Fatal("Debian's Open MPI is not in the table")
	}
	res, err := probes.ResolveCommLayout(nil, probes.OMPILibMPI, ompi, probes.LiveProcess{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Fields {
		if f.How != layout.Verified {
			t.Errorf("%s from %s, want the verified table", f.Name, f.How)
		}
	}
	t.Setenv(probes.NoVerifiedLayoutsEnv, "1")
	if l, ok := probes.CommLayoutOf(ompi); ok {
		t.Errorf("with %s=1, CommLayoutOf = %+v, true", probes.NoVerifiedLayoutsEnv, l)
	}
}
