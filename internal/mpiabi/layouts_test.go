package mpiabi

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// debianPal is the libopen-pal of Debian 12's libopenmpi3; debianPalID its build id.
const (
	debianPal   = mpitest.DebianPal
	debianPalID = "85e46cc75b438761041c473c7aab15698809b6f5"
)

// headerLayoutLib builds testdata/freelist_layout.c: a library whose DWARF
// holds opal_free_list_t as the installed Open MPI headers define it.
func headerLayoutLib(t *testing.T) string {
	t.Helper()
	impl := mpitest.OpenMPI()
	if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/openmpi/include/openmpi/opal/class/opal_free_list.h"); err != nil {
		mpitest.Require(t, "Open MPI's headers (libopenmpi-dev)")
	}
	return mpitest.BuildLib(t, impl, "freelist_layout")
}

func openELF(t *testing.T, path string) *elf.File {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// TestFreeListLayoutTableMatchesHeaders reads opal_free_list_t from the
// DWARF of a library compiled against the installed Open MPI headers: it
// must be the table's layout for the installed libopen-pal.
func TestFreeListLayoutTableMatchesHeaders(t *testing.T) {
	lib := headerLayoutLib(t)
	got, err := freeListLayoutFromDWARF(openELF(t, lib))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(debianPal); err != nil {
		mpitest.Require(t, "Debian's libopenmpi3 ("+debianPal+")")
	}
	id, err := elfx.BuildID(openELF(t, debianPal))
	if err != nil {
		t.Fatal(err)
	}
	want, ok := freeListLayouts[id]
	if !ok {
		t.Fatalf("the installed libopen-pal (build id %s) is not in freeListLayouts; its headers give %+v: verify and add it", id, got)
	}
	if got != want {
		t.Errorf("headers give %+v, freeListLayouts[%s] = %+v", got, id, want)
	}
}

// TestResolveFreeListLayout resolves the layout of real files: the stripped
// Debian library by its build id, a library with its own DWARF, a separate
// debug file found by build id, and the failures.
func TestResolveFreeListLayout(t *testing.T) {
	lib := headerLayoutLib(t)
	if _, err := os.Stat(debianPal); err != nil {
		mpitest.Require(t, "Debian's libopenmpi3 ("+debianPal+")")
	}
	pal := openELF(t, debianPal)
	want := freeListLayouts[debianPalID]
	const otherID = "0123456789abcdef0123456789abcdef01234567"

	debugDir := t.TempDir()
	debugFile := elfx.DebugFile(debugDir, otherID)
	if err := os.MkdirAll(filepath.Dir(debugFile), 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(debugFile, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	// A debug file with DWARF but without the struct: Debian's libopen-pal
	// has none, so any other file with DWARF and no opal types will do.
	wrongDir := t.TempDir()
	wrongFile := elfx.DebugFile(wrongDir, otherID)
	if err := os.MkdirAll(filepath.Dir(wrongFile), 0o755); err != nil {
		t.Fatal(err)
	}
	unrelated := mpitest.Build(t, mpitest.OpenMPI(), "errors")
	rawUnrelated, err := os.ReadFile(unrelated)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrongFile, rawUnrelated, 0o644); err != nil {
		t.Fatal(err)
	}

	noPal := openELF(t, unrelated)
	undecidable := openELF(t, withCode(t, debianPal, "opal_free_list_grow_st", 0xcc))
	tests := []struct {
		name      string
		file      *elf.File
		id        string
		dirs      []string
		libmpi    string // the libmpi.so beside the file
		wantFrom  string
		wantError string
	}{
		{"verified build", pal, debianPalID, nil, "", "verified build " + debianPalID, ""},
		{"own DWARF", openELF(t, lib), otherID, nil, "", "the library's own DWARF", ""},
		{"debug file by build id", pal, otherID, []string{t.TempDir(), debugDir}, lib, "debug file " + debugFile, ""},
		// lib stands for a libmpi.so whose debugger support's DWARF
		// describes opal_free_list_t, as Open MPI's does.
		{"the DWARF of libmpi beside it", pal, otherID, []string{t.TempDir()}, lib, "the DWARF of " + lib, ""},
		// Debian's stripped libopen-pal under another build id: its
		// code gives the table's layout.
		{"inferred from the code", pal, otherID, []string{t.TempDir()}, "",
			"the code of opal_free_list_grow_st (fl_frag_class by declaration order, loaded there too)", ""},
		// A file with neither the struct in its DWARF nor the function:
		// the one line names the debug file that would give it.
		{"nothing to read it from", noPal, otherID, []string{"/srv/debug"}, "", "",
			"layout of opal_free_list_t not known for this build (in no table, no DWARF, and its code did not decide it: no opal_free_list_grow_st): install its debug file /srv/debug/.build-id/01/23456789abcdef0123456789abcdef01234567.debug or pass --debug-dir"},
		{"a libmpi beside it without the struct", noPal, otherID, []string{t.TempDir()}, unrelated, "",
			"layout of opal_free_list_t not known for this build"},
		{"no libmpi beside it", noPal, otherID, []string{t.TempDir()}, filepath.Join(t.TempDir(), "libmpi.so.40"), "",
			"layout of opal_free_list_t not known for this build"},
		// Debian's own libopen-pal under another build id, with the code
		// of opal_free_list_grow_st made undecidable (int3 throughout):
		// nothing is guessed.
		{"code undecidable", undecidable, otherID, nil, "", "",
			"its code did not decide it: "},
		{"no build id", noPal, "", []string{debugDir}, "", "", "the file has no build id to find its debug file by"},
		{"debug file without the struct", pal, otherID, []string{wrongDir}, lib, "", "no complete opal_free_list_t in its DWARF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, from, err := ResolveFreeListLayout(tt.file, tt.id, tt.dirs, tt.libmpi)
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("err %v, want it to contain %q", err, tt.wantError)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error spans lines: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l != want || from != tt.wantFrom {
				t.Errorf("got %+v from %q, want %+v from %q", l, from, want, tt.wantFrom)
			}
		})
	}
}

// withCode writes a copy of the library file src in which every byte of
// function fn's code is b, and returns its path.
func withCode(t *testing.T, src, fn string, b byte) string {
	t.Helper()
	f := openELF(t, src)
	syms, err := elfx.Defined(f)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := syms[fn]
	if !ok || s.Size == 0 {
		t.Fatalf("%s defines no %s", src, fn)
	}
	var off uint64
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && s.Value >= p.Vaddr && s.Value+s.Size <= p.Vaddr+p.Filesz {
			off = s.Value - p.Vaddr + p.Off
		}
	}
	if off == 0 {
		t.Fatalf("%s: %s is in no loaded segment", src, fn)
	}
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Size {
		raw[off+i] = b
	}
	out := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(out, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}
