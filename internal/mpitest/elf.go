package mpitest

import (
	"debug/elf"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildLib compiles testdata/<name>.c with the implementation's mpicc into
// a shared library with DWARF (-g -shared -fPIC) in a temporary directory
// and returns its path.
func BuildLib(t testing.TB, impl Impl, name string) string {
	t.Helper()
	src := filepath.Join(RepoRoot(t), "testdata", name+".c")
	out := filepath.Join(t.TempDir(), "lib"+name+".so")
	run(t, impl.CC, "-g", "-shared", "-fPIC", "-o", out, src)
	return out
}

// GCCLib compiles the C source src with gcc into the shared library path
// (its directory made as needed): a stand-in for a library of a build
// that only its symbols matter for. It fails the test, or skips it outside
// MPIPROBE_E2E=require, when gcc is missing.
func GCCLib(t testing.TB, path, src string) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		Require(t, "gcc, to make the libraries")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	c := path + ".c"
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "gcc", "-shared", "-fPIC", "-o", path, c)
}

// CopyWithBuildID copies the ELF file src to dst with every byte of its GNU
// build id inverted, as a rebuild of the same sources would change it, and
// returns the new build id in hex. The code, symbols and data are those of
// src.
func CopyWithBuildID(t testing.TB, src, dst string) string {
	t.Helper()
	f, err := elf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	sec := f.Section(".note.gnu.build-id")
	bo := f.ByteOrder
	_ = f.Close()
	if sec == nil {
		t.Fatalf("%s has no .note.gnu.build-id section", src)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	// One note: namesz, descsz, type, "GNU\0", then the id.
	off := sec.Offset
	if off+16 > uint64(len(b)) {
		t.Fatalf("%s: build-id note beyond the file", src)
	}
	namesz, descsz := uint64(bo.Uint32(b[off:])), uint64(bo.Uint32(b[off+4:]))
	desc := off + 12 + (namesz+3)&^3
	if namesz != 4 || descsz == 0 || desc+descsz > uint64(len(b)) || bo.Uint32(b[off+8:]) != 3 {
		t.Fatalf("%s: .note.gnu.build-id is not one NT_GNU_BUILD_ID note", src)
	}
	id := b[desc : desc+descsz]
	for i := range id {
		id[i] ^= 0xff
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(id)
}

// DebianOb1 is the ob1 component of Debian 12's libopenmpi3.
const DebianOb1 = "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so"

// DebianPal is the libopen-pal of Debian 12's libopenmpi3.
const DebianPal = "/usr/lib/x86_64-linux-gnu/libopen-pal.so.40.30.2"

// ForeignPal is a copy of Debian's libopen-pal under a build id mpiprobe
// does not know, with a separate debug file for it.
type ForeignPal struct {
	// Dir holds the copy as libopen-pal.so.40 (for LD_LIBRARY_PATH); Lib
	// is its path and BuildID its new build id.
	Dir, Lib, BuildID string
	// DebugDir holds DebugFile, DebugDir/.build-id/ab/cdef….debug as gdb
	// names it: testdata/freelist_layout.c built with -g, whose DWARF has
	// opal_free_list_t as the installed Open MPI headers define it.
	DebugDir, DebugFile string
}

// NewForeignPal makes a ForeignPal in temporary directories; it fails the
// test (or skips it, see Require) without Debian's libopen-pal.
func NewForeignPal(t testing.TB) ForeignPal {
	t.Helper()
	if _, err := os.Stat(DebianPal); err != nil {
		Require(t, "Debian's libopenmpi3 ("+DebianPal+")")
	}
	var p ForeignPal
	p.Dir = t.TempDir()
	p.Lib = filepath.Join(p.Dir, "libopen-pal.so.40")
	p.BuildID = CopyWithBuildID(t, DebianPal, p.Lib)
	p.DebugDir = t.TempDir()
	p.DebugFile = filepath.Join(p.DebugDir, ".build-id", p.BuildID[:2], p.BuildID[2:]+".debug")
	if err := os.MkdirAll(filepath.Dir(p.DebugFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(BuildLib(t, OpenMPI(), "freelist_layout"), p.DebugFile); err != nil {
		t.Fatal(err)
	}
	return p
}

// HideFunctionSize sets the size of the dynamic symbol sym of the ELF file
// at path to 0, in place: the code and the dynamic linking are unchanged,
// but nothing can tell where the function ends, so mpiprobe cannot read
// its code (as with a library whose symbols carry no sizes).
func HideFunctionSize(t testing.TB, path, sym string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	sec := f.Section(".dynsym")
	syms, err := f.DynamicSymbols()
	_ = f.Close()
	if err != nil || sec == nil {
		t.Fatalf("%s: dynamic symbols: %v", path, err)
	}
	for i, s := range syms {
		if s.Name != sym {
			continue
		}
		// Entry i+1 of .dynsym (DynamicSymbols skips the null entry);
		// st_size is the last 8 bytes of an Elf64_Sym.
		off := int64(sec.Offset) + int64(i+1)*elf.Sym64Size + 16
		fh, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if _, err := fh.WriteAt(make([]byte, 8), off); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s has no dynamic symbol %s", path, sym)
}

// UnknownBuild makes the ranks of impl, Debian's build, load copies of its
// MPI library (and, for Open MPI, of mca_pml_ob1.so; for MPICH, of UCX's
// libucp.so.0) whose build ids no table of mpiprobe holds and that have no
// DWARF: every layout is then inferred, as for a build nobody checked. It sets LD_LIBRARY_PATH (and
// Open MPI's component path, where the copy of ob1 comes first) for the
// rest of the test and returns impl passing them to the ranks and awaiting
// ranks that map the copy. It skips when impl is a build from a prefix
// ($MPIPROBE_OPENMPI_PREFIX, $MPIPROBE_MPICH_PREFIX), unknown to the
// tables already. The build ids of the copies are logged.
func UnknownBuild(t testing.TB, impl Impl) Impl {
	t.Helper()
	lib, name := "/usr/lib/x86_64-linux-gnu/libmpi.so.40", "libmpi.so.40"
	prefix := "MPIPROBE_OPENMPI_PREFIX"
	if impl.Name == "mpich" {
		lib, name, prefix = "/usr/lib/x86_64-linux-gnu/libmpich.so.12", "libmpich.so.12", "MPIPROBE_MPICH_PREFIX"
	}
	if os.Getenv(prefix) != "" {
		t.Skip("runs on Debian's build, whose library it copies")
	}
	real, err := filepath.EvalSymlinks(lib)
	if err != nil {
		Require(t, err.Error())
	}
	dir := t.TempDir()
	impl.Lib, impl.Unknown = filepath.Join(dir, name), true
	t.Logf("%s copied under build id %s", name, CopyWithBuildID(t, real, impl.Lib))
	t.Setenv("LD_LIBRARY_PATH", dir)
	if impl.Name != "openmpi" {
		ucp, err := filepath.EvalSymlinks("/usr/lib/x86_64-linux-gnu/libucp.so.0")
		if err != nil {
			Require(t, err.Error())
		}
		t.Logf("libucp.so.0 copied under build id %s", CopyWithBuildID(t, ucp, filepath.Join(dir, "libucp.so.0")))
		return impl
	}
	ob1 := filepath.Join(filepath.Dir(lib), "openmpi", "lib", "openmpi3", "mca_pml_ob1.so")
	comps := filepath.Join(dir, "components")
	if err := os.Mkdir(comps, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("mca_pml_ob1.so copied under build id %s", CopyWithBuildID(t, ob1, filepath.Join(comps, "mca_pml_ob1.so")))
	t.Setenv("OMPI_MCA_mca_base_component_path", comps+":"+filepath.Dir(ob1))
	impl.LauncherArgs = append(append([]string(nil), impl.LauncherArgs...), "-x", "LD_LIBRARY_PATH", "-x", "OMPI_MCA_mca_base_component_path")
	return impl
}
