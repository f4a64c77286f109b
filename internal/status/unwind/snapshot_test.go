package unwind

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/procfs"

	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// mapping is one line of /proc/PID/maps.
type mapping struct {
	start, end uint64
	perms      string
	offset     uint64
	path       string
}

func parseMaps(t testing.TB, text string) []mapping {
	t.Helper()
	var ms []mapping
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			t.Fatalf("bad maps line %q", sc.Text())
		}
		lo, hi, _ := strings.Cut(fields[0], "-")
		var m mapping
		var err1, err2, err3 error
		m.start, err1 = strconv.ParseUint(lo, 16, 64)
		m.end, err2 = strconv.ParseUint(hi, 16, 64)
		m.offset, err3 = strconv.ParseUint(fields[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("bad maps line %q", sc.Text())
		}
		m.perms = fields[1]
		if len(fields) >= 6 {
			m.path = fields[5]
		}
		ms = append(ms, m)
	}
	return ms
}

// process is what the test knows of the snapshotted process: its
// executable mappings with their Tables and biases, and the symbols of
// the mapped files.
type process struct {
	mods []procModule
}

type procModule struct {
	mapping
	Module
	syms []elf.Symbol
}

func newProcess(t testing.TB, maps []mapping) *process {
	t.Helper()
	p := &process{}
	tables := map[string]*Table{}
	syms := map[string][]elf.Symbol{}
	for _, m := range maps {
		if !strings.Contains(m.perms, "x") || !strings.HasPrefix(m.path, "/") {
			continue
		}
		ef, err := elf.Open(m.path)
		if err != nil {
			t.Fatalf("open %s: %v", m.path, err)
		}
		bias, ok := elfx.Loads(ef.Progs).Bias(m.start, m.offset)
		if !ok {
			t.Fatalf("%s: no PT_LOAD holds offset %#x", m.path, m.offset)
		}
		if _, ok := tables[m.path]; !ok {
			fh, err := os.Open(m.path)
			if err != nil {
				t.Fatal(err)
			}
			tab, err := Load(fh)
			fh.Close()
			if err != nil {
				t.Fatalf("Load(%s): %v", m.path, err)
			}
			tables[m.path] = tab
			s, _ := ef.Symbols()
			d, _ := ef.DynamicSymbols()
			syms[m.path] = append(s, d...)
		}
		ef.Close()
		p.mods = append(p.mods, procModule{
			mapping: m,
			Module:  Module{Table: tables[m.path], Bias: bias},
			syms:    syms[m.path],
		})
	}
	return p
}

func (p *process) module(addr uint64) (*procModule, bool) {
	for i := range p.mods {
		if m := &p.mods[i]; m.start <= addr && addr < m.end {
			return m, true
		}
	}
	return nil, false
}

func (p *process) Modules(addr uint64) (Module, bool) {
	m, ok := p.module(addr)
	if !ok {
		return Module{}, false
	}
	return m.Module, true
}

// symbolize names the function holding addr: file base name and the FUNC
// symbol whose range holds it (.symtab, else .dynsym), or "?" for code no
// symbol covers (static functions of a stripped library).
func (p *process) symbolize(addr uint64) (file, fn string) {
	m, ok := p.module(addr)
	if !ok {
		return "?", "?"
	}
	v := addr - m.Bias
	for _, s := range m.syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value <= v && v < s.Value+s.Size {
			return filepath.Base(m.path), s.Name
		}
	}
	return filepath.Base(m.path), "?"
}

// stackMemory serves reads from a copy of the stack that starts at base.
func stackMemory(base uint64, data []byte) procfs.Memory {
	return func(addr uint64, p []byte) error {
		if addr < base || addr-base > uint64(len(data)) || uint64(len(p)) > uint64(len(data))-(addr-base) {
			return fmt.Errorf("%#x+%d outside the stack copy [%#x, %#x)", addr, len(p), base, base+uint64(len(data)))
		}
		copy(p, data[addr-base:])
		return nil
	}
}

// snapshot runs testdata/snapshot.c and returns its output directory.
func snapshot(t *testing.T) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		mpitest.Require(t, "gcc not found: cannot build testdata/snapshot.c")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "snapshot")
	out, err := exec.Command(gcc, "-O2", "-fomit-frame-pointer", "-g0", "-Wall",
		"-o", bin, "testdata/snapshot.c").CombinedOutput()
	if err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, dir).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, out)
	}
	return dir
}

func readRegs(t *testing.T, path string) Regs {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]uint64{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(line, " ")
		n, err := strconv.ParseUint(v, 0, 64)
		if err != nil {
			t.Fatalf("regs.txt: %q: %v", line, err)
		}
		vals[k] = n
	}
	return Regs{IP: vals["ip"], SP: vals["sp"], BP: vals["bp"]}
}

func readAddrs(t *testing.T, path string) []uint64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var as []uint64
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.ParseUint(f, 0, 64)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		as = append(as, n)
	}
	return as
}

// TestStackSnapshot unwinds a real stack: that of testdata/snapshot.c,
// built without frame pointers, captured inside a qsort callback.
func TestStackSnapshot(t *testing.T) {
	dir := snapshot(t)
	regs := readRegs(t, filepath.Join(dir, "regs.txt"))
	stack, err := os.ReadFile(filepath.Join(dir, "stack.bin"))
	if err != nil {
		t.Fatal(err)
	}
	mapsText, err := os.ReadFile(filepath.Join(dir, "maps.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ref := readAddrs(t, filepath.Join(dir, "ref.txt"))
	proc := newProcess(t, parseMaps(t, string(mapsText)))
	exe := "snapshot"

	pcs, err := Stack(regs, proc.Modules, stackMemory(regs.SP, stack), 64)

	type fr struct{ file, fn string }
	var frames []fr
	for i, pc := range pcs {
		look := pc
		if i > 0 {
			look-- // a return address may be the first byte of the next function
		}
		file, fn := proc.symbolize(look)
		frames = append(frames, fr{file, fn})
		t.Logf("#%-2d %#x %s!%s", i, pc, file, fn)
	}
	if err != nil {
		t.Fatalf("Stack: %v", err)
	}

	// Independent reference: libgcc's unwinder, run by backtrace() inside
	// compare, found ref[0] (the return address into compare from the
	// call to backtrace) and then exactly the return addresses Stack must
	// find above compare, up to _start.
	if len(ref) < 2 || len(pcs) != len(ref) {
		t.Errorf("Stack found %d frames, backtrace() %d: %#x vs %#x", len(pcs), len(ref), pcs, ref)
	} else {
		for i := 1; i < len(ref); i++ {
			if pcs[i] != ref[i] {
				t.Errorf("frame %d: Stack %#x, backtrace() %#x", i, pcs[i], ref[i])
			}
		}
	}

	// The names, as strictly as the facts allow. Frame 0 is the captured
	// rip inside compare. Next come the frames of glibc's qsort: glibc
	// 2.36 has qsort tail-jump to qsort_r, which calls the static,
	// recursive msort_with_tmp (one frame per recursion level, about
	// log2(64)); Debian's libc.so.6 has no .symtab, so static functions
	// have no name ("?") and only qsort_r (in .dynsym) does. The outermost
	// qsort frame must be qsort_r (or qsort, for a libc that does not
	// tail-call). Then level3, level2, level1 and main of the executable
	// (-fomit-frame-pointer and noinline leave each a frame; level1 uses
	// rbp as its CFA base because of its VLA, which tests that rbp is
	// restored from compare's and libc's saves). Above main come libc's
	// start-up frames (__libc_start_call_main, static, so "?", then
	// __libc_start_main), and _start of the executable, whose CIE marks
	// the return address undefined: there Stack stops without error.
	want := func(i int, file, fn string) {
		t.Helper()
		if i >= len(frames) {
			t.Fatalf("frame %d missing; want %s!%s", i, file, fn)
		}
		if frames[i].file != file || frames[i].fn != fn {
			t.Errorf("frame %d is %s!%s; want %s!%s", i, frames[i].file, frames[i].fn, file, fn)
		}
	}
	want(0, exe, "compare")
	i := 1
	for i < len(frames) && frames[i].file == "libc.so.6" {
		i++
	}
	if n := i - 1; n < 1 || n > 20 {
		t.Errorf("%d libc frames between compare and level3; want 1 to 20", n)
	}
	for j := 1; j < i-1; j++ {
		if fn := frames[j].fn; fn != "?" && !strings.HasPrefix(fn, "qsort") && !strings.HasPrefix(fn, "msort") {
			t.Errorf("frame %d: unexpected libc function %s inside qsort", j, fn)
		}
	}
	if fn := frames[i-1].fn; fn != "qsort_r" && fn != "qsort" {
		t.Errorf("frame %d (outermost libc frame under level3) is %s; want qsort_r or qsort", i-1, fn)
	}
	want(i, exe, "level3")
	want(i+1, exe, "level2")
	want(i+2, exe, "level1")
	want(i+3, exe, "main")
	i += 4
	sawStart := false
	for i < len(frames) && frames[i].file == "libc.so.6" {
		switch frames[i].fn {
		case "__libc_start_main", "__libc_start_call_main":
			sawStart = true
		case "?":
		default:
			t.Errorf("frame %d: unexpected libc function %s above main", i, frames[i].fn)
		}
		i++
	}
	if !sawStart {
		t.Errorf("no __libc_start_main frame above main")
	}
	want(i, exe, "_start")
	if len(frames) != i+1 {
		t.Errorf("%d frames after _start", len(frames)-i-1)
	}

	// Stopping early: max bounds the result and is no error.
	short, err := Stack(regs, proc.Modules, stackMemory(regs.SP, stack), 3)
	if err != nil || len(short) != 3 || short[2] != pcs[2] {
		t.Errorf("Stack(max 3) = %#x, %v", short, err)
	}

	// A stack copy cut short just below the slot holding the return
	// address of frame k: the k frames below it, then a read error.
	k := len(pcs) / 2
	cut := -1
	for off := 0; off+8 <= len(stack); off += 8 {
		if binary.LittleEndian.Uint64(stack[off:]) == pcs[k] {
			cut = off
			break
		}
	}
	if cut < 0 {
		t.Fatalf("return address %#x not on the stack", pcs[k])
	}
	part, err := Stack(regs, proc.Modules, stackMemory(regs.SP, stack[:cut]), 64)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("read stack at %#x", regs.SP+uint64(cut))) {
		t.Errorf("Stack on a cut stack: err = %v; want a read error at %#x", err, regs.SP+uint64(cut))
	}
	if !slices.Equal(part, pcs[:k]) {
		t.Errorf("Stack on a cut stack = %#x; want %#x", part, pcs[:k])
	}
	t.Logf("cut stack: %d frames, %v", len(part), err)

	// An unknown module: the same registers with no Modules at all.
	none := func(uint64) (Module, bool) { return Module{}, false }
	if got, err := Stack(regs, none, stackMemory(regs.SP, stack), 64); len(got) != 1 || err == nil ||
		!strings.Contains(err.Error(), fmt.Sprintf("no CFI for %#x (frame 0)", regs.IP)) {
		t.Errorf("Stack with no modules = %#x, %v", got, err)
	}
}
