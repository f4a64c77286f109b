package unwind

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

const libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"

// Shared libraries of the machine the tests read; each test skips the
// ones that are absent (failing instead under MPIPROBE_E2E=require: CI
// installs them all).
var realLibs = []string{
	libc,
	"/usr/lib64/ld-linux-x86-64.so.2",
	"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
	"/usr/lib/x86_64-linux-gnu/libgcc_s.so.1",
	"/usr/lib/x86_64-linux-gnu/libmpich.so.12",
	"/usr/lib/x86_64-linux-gnu/libmpi.so.40",
	"/usr/lib/x86_64-linux-gnu/libopen-pal.so.40",
}

func loadFile(t testing.TB, path string) *Table {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		mpitest.Require(t, path+" not installed")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := Load(f)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return tab
}

// loadScanned loads path ignoring its .eh_frame_hdr.
func loadScanned(t testing.TB, path string) *Table {
	t.Helper()
	tab := loadFile(t, path)
	s := &Table{eh: tab.eh, bases: tab.bases}
	if err := s.scan(); err != nil {
		t.Fatalf("scan %s: %v", path, err)
	}
	return s
}

// TestHdrMatchesScan checks, on real libraries, that the .eh_frame_hdr
// search table and the index Load builds without it find the same FDE
// for the first and last byte of every function.
func TestHdrMatchesScan(t *testing.T) {
	for _, path := range realLibs {
		t.Run(path, func(t *testing.T) {
			hdr := loadFile(t, path)
			if hdr.hdrN == 0 {
				t.Fatalf("%s: .eh_frame_hdr not used", path)
			}
			scanned := loadScanned(t, path)
			if len(scanned.idx) != hdr.hdrN {
				t.Errorf("scan found %d FDEs, .eh_frame_hdr lists %d", len(scanned.idx), hdr.hdrN)
			}
			bad := 0
			for _, ref := range scanned.idx {
				f, err := scanned.fdeAt(ref.off, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, pc := range []uint64{f.start, f.end - 1} {
					a, err1 := hdr.find(pc)
					b, err2 := scanned.find(pc)
					if err1 != nil || err2 != nil || a.off != b.off {
						if bad++; bad < 10 {
							t.Errorf("pc %#x: hdr %v %v, scan %v %v", pc, a, err1, b, err2)
						}
					}
				}
			}
			t.Logf("%d FDEs", len(scanned.idx))
		})
	}
}

var (
	fdeLine = regexp.MustCompile(`^[0-9a-f]+ [0-9a-f]+ [0-9a-f]+ FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+)`)
	rowLine = regexp.MustCompile(`^([0-9a-f]{16}) (\S+)\s+(.*)$`)
	// readelf shows a DW_CFA_register rule as "r2 (rcx)".
	regRule = regexp.MustCompile(`\br\d+ \((\w+)\)`)
)

// TestAgainstReadelf compares every row of the call frame tables of real
// files with what binutils' readelf -wF (--debug-dump=frames-interp)
// computes: the CFA rule and the rule of every register readelf shows.
func TestAgainstReadelf(t *testing.T) {
	readelf, err := exec.LookPath("readelf")
	if err != nil {
		mpitest.Require(t, "readelf (binutils) not found")
	}
	files := append([]string(nil), realLibs...)
	if testing.Short() {
		files = files[:1]
	}
	for _, path := range files {
		t.Run(path, func(t *testing.T) {
			tab := loadFile(t, path)
			compareReadelf(t, tab, runReadelf(t, readelf, path))
		})
	}
}

// runReadelf returns the output of readelf -wF. readelf exits with 1 when
// it only warns (about a separate debug file it cannot find, say), so any
// output counts.
func runReadelf(t *testing.T, readelf, path string) []byte {
	t.Helper()
	out, err := exec.Command(readelf, "-wF", path).Output()
	if len(out) == 0 {
		t.Fatalf("readelf -wF %s: %v", path, err)
	}
	return out
}

func compareReadelf(t *testing.T, tab *Table, out []byte) {
	t.Helper()
	regNum := map[string]int{}
	for i, n := range regNames {
		regNum[n] = i
	}
	var (
		inFDE      bool
		start, end uint64
		cols       []string
		rows, bad  int
		pending    = map[uint64][]string{} // LOC -> fields, last row wins
		order      []uint64
	)
	flush := func() {
		for _, loc := range order {
			f := pending[loc]
			if loc < start || loc >= end {
				continue
			}
			rows++
			r, _, err := tab.rowAt(loc)
			if err != nil {
				if bad++; bad <= 10 {
					t.Errorf("%#x: %v; readelf: %v", loc, err, f)
				}
				continue
			}
			mismatch := r.cfa.String() != f[0]
			got := []string{r.cfa.String()}
			for i, name := range cols {
				n, ok := regNum[name]
				if !ok || i+1 >= len(f) {
					continue
				}
				s := r.regs[n].String()
				got = append(got, name+"="+s)
				if s != f[i+1] {
					mismatch = true
				}
			}
			if mismatch {
				if bad++; bad <= 10 {
					t.Errorf("%#x: got %v; readelf %v %v", loc, got, cols, f)
				}
			}
		}
		clear(pending)
		order = order[:0]
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := fdeLine.FindStringSubmatch(line); m != nil {
			flush()
			inFDE = true
			start, _ = strconv.ParseUint(m[1], 16, 64)
			end, _ = strconv.ParseUint(m[2], 16, 64)
			cols = nil
			continue
		}
		if strings.Contains(line, " CIE ") {
			flush()
			inFDE = false
			continue
		}
		if !inFDE {
			continue
		}
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "LOC" && f[1] == "CFA" {
			cols = f[2:]
			continue
		}
		if m := rowLine.FindStringSubmatch(line); m != nil {
			loc, _ := strconv.ParseUint(m[1], 16, 64)
			if _, ok := pending[loc]; !ok {
				order = append(order, loc)
			}
			pending[loc] = append([]string{m[2]}, strings.Fields(regRule.ReplaceAllString(m[3], "$1"))...)
		}
	}
	flush()
	if rows == 0 {
		t.Fatalf("no rows compared")
	}
	t.Logf("%d rows compared, %d mismatches", rows, bad)
}

// TestAgainstReadelfSnapshotBinary runs the same comparison on a
// gcc -O2 -fomit-frame-pointer build of testdata/snapshot.c.
func TestAgainstReadelfSnapshotBinary(t *testing.T) {
	readelf, err := exec.LookPath("readelf")
	if err != nil {
		mpitest.Require(t, "readelf (binutils) not found")
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		mpitest.Require(t, "gcc not found: cannot build testdata/snapshot.c")
	}
	bin := t.TempDir() + "/snapshot"
	if out, err := exec.Command(gcc, "-O2", "-fomit-frame-pointer", "-g0", "-o", bin, "testdata/snapshot.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	tab := loadFile(t, bin)
	compareReadelf(t, tab, runReadelf(t, readelf, bin))
}

// TestMPIEntry looks up the CFI at the entry of MPI functions of the MPI
// libraries Debian ships: at a function's first byte nothing has been
// pushed yet, so the CFA is rsp+8 and the return address is at CFA-8.
func TestMPIEntry(t *testing.T) {
	libs := [][]string{
		{"/usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi.so.40", "/usr/lib/x86_64-linux-gnu/libmpi.so.40"},
		{"/usr/lib/x86_64-linux-gnu/libmpich.so.12"},
	}
	for _, alts := range libs {
		path := ""
		for _, p := range alts {
			if _, err := os.Stat(p); err == nil {
				path = p
				break
			}
		}
		t.Run(alts[0], func(t *testing.T) {
			if path == "" {
				mpitest.Require(t, alts[0]+" not installed")
			}
			tab := loadFile(t, path)
			ef, err := elf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer ef.Close()
			syms, err := ef.DynamicSymbols()
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{"PMPI_Barrier": true, "PMPI_Allreduce": true, "MPI_Send": true, "MPI_Recv": true, "PMPI_Wait": true}
			found := 0
			for _, s := range syms {
				if !want[s.Name] || elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
					continue
				}
				found++
				cfa, err := tab.CFA(s.Value)
				if err != nil || cfa != "rsp+8" {
					t.Errorf("%s at %#x: CFA %q, %v; want rsp+8", s.Name, s.Value, cfa, err)
				}
				r, _, err := tab.rowAt(s.Value)
				if err != nil || r.regs[regRA].String() != "c-8" {
					t.Errorf("%s at %#x: row %v, %v; want ra=c-8", s.Name, s.Value, r, err)
				}
				// And somewhere inside the body the function has a frame.
				if s.Size > 1 {
					if _, err := tab.CFA(s.Value + s.Size - 1); err != nil {
						t.Errorf("%s: last byte: %v", s.Name, err)
					}
				}
				t.Logf("%s %#x: %s", s.Name, s.Value, cfa)
			}
			if found < 2 {
				t.Errorf("found %d of the MPI functions", found)
			}
		})
	}
}

// TestPLTOfLibc checks the CFA expression of libc's .plt, which every
// binutils-linked object has: rsp+8, plus 8 from byte 11 of each entry.
func TestPLTOfLibc(t *testing.T) {
	tab := loadFile(t, libc)
	ef, err := elf.Open(libc)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	plt := ef.Section(".plt")
	if plt == nil || plt.Size < 0x20 {
		t.Skip("libc has no .plt")
	}
	got, err := tab.CFA(plt.Addr + 0x10)
	if want := "exp(breg7+8; breg16+0; lit15; and; lit11; ge; lit3; shl; plus)"; err != nil || got != want {
		t.Errorf("CFA at .plt+0x10 = %q, %v; want %q", got, err, want)
	}
}

// TestNoSectionHeaders loads libc with its section headers removed, as a
// file mapped in a process might be: .eh_frame_hdr is found through
// PT_GNU_EH_FRAME and .eh_frame through its eh_frame_ptr, and every
// function's rows must be the same as with the sections.
func TestNoSectionHeaders(t *testing.T) {
	want := loadScanned(t, libc)
	b, err := os.ReadFile(libc)
	if err != nil {
		t.Fatal(err)
	}
	// e_shoff, then (after flags, ehsize, phentsize, phnum, shentsize)
	// e_shnum and e_shstrndx.
	binary.LittleEndian.PutUint64(b[0x28:], 0)
	binary.LittleEndian.PutUint16(b[0x3c:], 0)
	binary.LittleEndian.PutUint16(b[0x3e:], 0)
	got, err := Load(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("Load without section headers: %v", err)
	}
	if got.hdrN != len(want.idx) {
		t.Errorf("hdrN = %d; want %d", got.hdrN, len(want.idx))
	}
	for _, ref := range want.idx {
		f, err := want.fdeAt(ref.off, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, pc := range []uint64{f.start, (f.start + f.end) / 2, f.end - 1} {
			a, _, err1 := want.rowAt(pc)
			b, _, err2 := got.rowAt(pc)
			if err1 != nil || err2 != nil || a.String() != b.String() {
				t.Fatalf("%#x: %v %v vs %v %v", pc, a, err1, b, err2)
			}
		}
	}
}
