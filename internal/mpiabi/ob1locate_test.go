package mpiabi

import (
	"debug/elf"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// TestLocateOB1 finds mca_pml_ob1.so among a process's mappings, skipping
// anonymous ones and those the caller cannot use, and opens libmpi only
// when no ob1 component is mapped.
func TestLocateOB1(t *testing.T) {
	const dir = "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/"
	maps := []procfs.Mapping{
		{Path: "/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.5", Inode: 1},
		{Path: dir + "mca_pml_ob1.so", Inode: 0, Start: 0x1000},
		{Path: dir + "mca_pml_ob1.so", Inode: 2, Start: 0x2000},
		{Path: dir + "mca_pml_ob1.so", Inode: 2, Start: 0x3000},
	}
	opened := false
	noLib := func() *elf.File { opened = true; return nil }
	m, builtIn, ok := LocateOB1(maps, func(m procfs.Mapping) bool { return m.Start != 0x2000 }, noLib)
	if !ok || builtIn || m.Start != 0x3000 || opened {
		t.Errorf("LocateOB1 = %#x, builtIn %v, ok %v (libmpi opened: %v), want the mapping at 0x3000", m.Start, builtIn, ok, opened)
	}
	if _, _, ok := LocateOB1(maps[:2], func(procfs.Mapping) bool { return true }, noLib); ok || !opened {
		t.Errorf("LocateOB1 without ob1 nor libmpi: ok %v (libmpi opened: %v), want not found after asking for libmpi", ok, opened)
	}
}
