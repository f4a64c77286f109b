package symbolize

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
)

// cSource is the C test program. probe records its return address; main
// prints the recorded addresses and blocks reading stdin. Lines that the
// test checks carry a MARK comment. nosize is a function symbol without a
// size, written in assembly.
const cSource = `#include <stdio.h>
#include <unistd.h>

void *ra[3];

__attribute__((noinline)) void probe(int i) { ra[i] = __builtin_return_address(0); }

__attribute__((noinline)) int work(int n) {
	int s = 0;
	for (int i = 0; i < n; i++)
		s += i;
	probe(0); /* MARK:work */
	return s;
}

static __attribute__((noinline)) int helper(int x) {
	probe(1); /* MARK:helper */
	return x + 1;
}

__asm__(".text\n.globl nosize\n.type nosize, @function\nnosize:\n\tnop\n\tnop\n\tnop\n\tnop\n\tret\n");
void nosize(void);

int main(void) {
	int v = work(10) + helper(3);
	probe(2); /* MARK:main */
	nosize();
	printf("work=%p helper=%p main=%p nosize=%p v=%d\n", ra[0], ra[1], ra[2], (void *)nosize, v);
	fflush(stdout);
	char c;
	return read(0, &c, 1) < 0;
}
`

// fortranSource is the Fortran test program; it calls the C helpers in
// fortranHelper to record return addresses and to block.
const fortranSource = `module m
contains
  subroutine inner(k)
    integer, intent(in) :: k
    call probe(k) ! MARK:inner
  end subroutine inner
end module m

subroutine outer()
  call probe(1) ! MARK:outer
end subroutine outer

program p
  use m
  call inner(0)
  call outer()
  call probe(2) ! MARK:program
  call report()
end program p
`

const fortranHelper = `#include <stdio.h>
#include <unistd.h>

void *ra[3];

void probe_(int *i) { ra[*i] = __builtin_return_address(0); }

void report_(void) {
	printf("inner=%p outer=%p program=%p\n", ra[0], ra[1], ra[2]);
	fflush(stdout);
	char c;
	if (read(0, &c, 1) < 0)
		perror("read");
}
`

// build writes the sources into a temporary directory and runs compiler
// with args followed by the source paths; it returns the binary's path.
func build(t *testing.T, compiler string, args []string, sources map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath(compiler); err != nil {
		mpitest.Require(t, compiler+" not installed")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "prog")
	cmdArgs := append(slices.Clone(args), "-o", bin)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range sources {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(sources[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		cmdArgs = append(cmdArgs, p)
	}
	cmd := exec.Command(compiler, cmdArgs...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", compiler, strings.Join(cmdArgs, " "), err, out)
	}
	return bin
}

// child is a running test program, blocked reading its stdin.
type child struct {
	pid   int
	addrs map[string]uint64 // the name=0x... pairs it printed
}

// start runs bin and waits for its line of addresses. The process is
// released and reaped when the test ends.
func start(t *testing.T, bin string) child {
	t.Helper()
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the addresses of %s: %v", bin, err)
	}
	c := child{pid: cmd.Process.Pid, addrs: make(map[string]uint64)}
	for _, f := range strings.Fields(line) {
		name, val, ok := strings.Cut(f, "=")
		if !ok || !strings.HasPrefix(val, "0x") {
			continue
		}
		v, err := strconv.ParseUint(val[2:], 16, 64)
		if err != nil {
			t.Fatalf("bad address in %q: %v", line, err)
		}
		c.addrs[name] = v
	}
	return c
}

func (c child) maps(t *testing.T) []procfs.Mapping {
	t.Helper()
	maps, err := procfs.FS{}.Maps(c.pid)
	if err != nil {
		t.Fatal(err)
	}
	return maps
}

// syscallPC waits until the child is blocked in a system call and returns
// the user-space instruction pointer from /proc/PID/syscall, with the
// system call number.
func (c child) syscallPC(t *testing.T) (nr int, pc uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", c.pid))
		if err != nil {
			t.Skipf("cannot read the child's system call: %v", err)
		}
		f := strings.Fields(string(data))
		if len(f) == 9 {
			nr, err1 := strconv.Atoi(f[0])
			pc, err2 := strconv.ParseUint(strings.TrimPrefix(f[8], "0x"), 16, 64)
			if err1 == nil && err2 == nil {
				return nr, pc
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("child never blocked in a system call: %q", data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// markLine returns the 1-based line of src that holds "MARK:name".
func markLine(t *testing.T, src, name string) int {
	t.Helper()
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, "MARK:"+name+" ") || strings.HasSuffix(l, "MARK:"+name) {
			return i + 1
		}
	}
	t.Fatalf("no MARK:%s in the source", name)
	return 0
}

// funcSym returns the symbol of the function called name in bin.
func funcSym(t *testing.T, bin, name string) elf.Symbol {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name && elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Section != elf.SHN_UNDEF {
			return s
		}
	}
	t.Fatalf("%s: no function %s", bin, name)
	return elf.Symbol{}
}

// a2l is one answer of addr2line.
type a2l struct {
	function, file string
	line           int
}

// addr2line runs `addr2line -f -e bin` for the ELF virtual addresses.
func addr2line(t *testing.T, bin string, vaddrs []uint64) []a2l {
	t.Helper()
	if _, err := exec.LookPath("addr2line"); err != nil {
		mpitest.Require(t, "addr2line not installed")
	}
	args := []string{"-f", "-e", bin}
	for _, v := range vaddrs {
		args = append(args, fmt.Sprintf("%#x", v))
	}
	out, err := exec.Command("addr2line", args...).Output()
	if err != nil {
		t.Fatalf("addr2line: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 2*len(vaddrs) {
		t.Fatalf("addr2line gave %d lines for %d addresses:\n%s", len(lines), len(vaddrs), out)
	}
	res := make([]a2l, len(vaddrs))
	for i := range vaddrs {
		fn, pos := lines[2*i], lines[2*i+1]
		pos, _, _ = strings.Cut(pos, " (discriminator")
		file, ln, _ := strings.Cut(pos, ":")
		n, _ := strconv.Atoi(ln)
		if fn == "??" {
			fn = ""
		}
		if file == "??" {
			file = ""
		}
		res[i] = a2l{function: fn, file: file, line: n}
	}
	return res
}

// countingOpener opens mapped files by path and counts the calls.
type countingOpener struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingOpener) open(m procfs.Mapping) (*os.File, error) {
	c.mu.Lock()
	if c.calls == nil {
		c.calls = make(map[string]int)
	}
	c.calls[m.Path]++
	c.mu.Unlock()
	return os.Open(m.Path)
}

func (c *countingOpener) count(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[path]
}

func newResolver(t *testing.T) *Resolver {
	r := NewResolver()
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

// checkProgram resolves the return addresses a child printed and checks
// them against the binary's symbols, its source and addr2line.
func checkProgram(t *testing.T, bin, src string, c child, want map[string]string) {
	t.Helper()
	r := newResolver(t)
	maps := c.maps(t)
	open := ProcOpener(procfs.FS{}, c.pid)
	srcName := ""
	for name, fn := range want {
		addr, ok := c.addrs[name]
		if !ok {
			t.Fatalf("child printed no address for %s", name)
		}
		s, err := r.Resolve(maps, open, addr)
		if err != nil {
			t.Fatalf("Resolve(%s=%#x): %v", name, addr, err)
		}
		t.Logf("%s: %#x -> %+v", name, addr, s)
		if s.Object != bin {
			t.Errorf("%s: Object = %q, want %q", name, s.Object, bin)
		}
		sym := funcSym(t, bin, fn)
		if s.Function != fn {
			t.Errorf("%s: Function = %q, want %q", name, s.Function, fn)
		}
		if s.Offset <= sym.Value || s.Offset > sym.Value+sym.Size {
			t.Errorf("%s: Offset %#x outside %s [%#x, %#x]", name, s.Offset, fn, sym.Value, sym.Value+sym.Size)
		}
		if s.FuncOffset != s.Offset-sym.Value {
			t.Errorf("%s: FuncOffset = %#x, want %#x", name, s.FuncOffset, s.Offset-sym.Value)
		}
		if line := markLine(t, src, name); s.Line != line {
			t.Errorf("%s: Line = %d, want %d (the call)", name, s.Line, line)
		}
		if !filepath.IsAbs(s.File) {
			t.Errorf("%s: File %q is not a full path", name, s.File)
		}
		if srcName == "" {
			srcName = filepath.Base(s.File)
		}
		a := addr2line(t, bin, []uint64{s.Offset - 1})[0]
		if s.File != a.file || s.Line != a.line {
			t.Errorf("%s: %s:%d, addr2line says %s:%d", name, s.File, s.Line, a.file, a.line)
		}
		// Resolving again answers from the cache, identically.
		if s2, err := r.Resolve(maps, open, addr); err != nil || !reflect.DeepEqual(s2, s) {
			t.Errorf("%s: second Resolve = %+v, %v; want %+v", name, s2, err, s)
		}
	}
}

func TestCPIE(t *testing.T) {
	bin := build(t, "gcc", []string{"-g", "-O0"}, map[string]string{"prog.c": cSource})
	checkELFType(t, bin, elf.ET_DYN)
	c := start(t, bin)
	checkProgram(t, bin, cSource, c, map[string]string{"work": "work", "helper": "helper", "main": "main"})
	checkNoSize(t, bin, c)
	checkLibcRead(t, c)
}

func TestCNoPIE(t *testing.T) {
	bin := build(t, "gcc", []string{"-g", "-O0", "-no-pie"}, map[string]string{"prog.c": cSource})
	checkELFType(t, bin, elf.ET_EXEC)
	c := start(t, bin)
	checkProgram(t, bin, cSource, c, map[string]string{"work": "work", "helper": "helper", "main": "main"})
	// Without PIE the runtime address is the ELF virtual address.
	r := newResolver(t)
	s, err := r.Resolve(c.maps(t), ProcOpener(procfs.FS{}, c.pid), c.addrs["work"])
	if err != nil {
		t.Fatal(err)
	}
	if s.Offset != c.addrs["work"] {
		t.Errorf("non-PIE: Offset %#x differs from the address %#x", s.Offset, c.addrs["work"])
	}
	checkNoSize(t, bin, c)
}

func TestFortran(t *testing.T) {
	if _, err := exec.LookPath("gfortran"); err != nil {
		mpitest.Require(t, "gfortran not installed")
	}
	bin := build(t, "gfortran", []string{"-g", "-O0"}, map[string]string{"prog.f90": fortranSource, "helper.c": fortranHelper})
	c := start(t, bin)
	checkProgram(t, bin, fortranSource, c, map[string]string{
		"inner":   "__m_MOD_inner",
		"outer":   "outer_",
		"program": "MAIN__",
	})
}

func checkELFType(t *testing.T, bin string, want elf.Type) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Type != want {
		t.Fatalf("%s is %v, want %v", bin, f.Type, want)
	}
}

// checkNoSize resolves an address inside the assembly function without a
// size: it is named after the nearest symbol below it.
func checkNoSize(t *testing.T, bin string, c child) {
	t.Helper()
	sym := funcSym(t, bin, "nosize")
	if sym.Size != 0 {
		t.Fatalf("nosize has size %d", sym.Size)
	}
	r := newResolver(t)
	s, err := r.Resolve(c.maps(t), ProcOpener(procfs.FS{}, c.pid), c.addrs["nosize"]+3)
	if err != nil {
		t.Fatal(err)
	}
	if s.Function != "nosize" || s.FuncOffset != 3 || s.Offset != sym.Value+3 {
		t.Errorf("nosize+3 = %+v, want nosize+0x3 at %#x", s, sym.Value+3)
	}
}

// checkLibcRead resolves the instruction pointer of the child blocked in
// read(2): an address inside libc, which has no .symtab and no DWARF.
func checkLibcRead(t *testing.T, c child) {
	t.Helper()
	nr, pc := c.syscallPC(t)
	if nr != int(syscall.SYS_READ) {
		t.Fatalf("child blocked in system call %d, not read", nr)
	}
	r := newResolver(t)
	s, err := r.Resolve(c.maps(t), ProcOpener(procfs.FS{}, c.pid), pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read: %#x -> %+v", pc, s)
	if !strings.Contains(filepath.Base(s.Object), "libc") {
		t.Skipf("the read system call was made from %s, not libc", s.Object)
	}
	f, err := elf.Open(s.Object)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Section(".symtab") != nil || f.Section(".debug_line") != nil {
		t.Skipf("%s has a .symtab or DWARF; the .dynsym fallback is not exercised", s.Object)
	}
	dyn, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	var read *elf.Symbol
	for i := range dyn {
		if dyn[i].Name == "read" && elf.ST_TYPE(dyn[i].Info) == elf.STT_FUNC {
			read = &dyn[i]
		}
	}
	if read == nil {
		t.Fatalf("%s defines no read", s.Object)
	}
	if s.Offset <= read.Value || s.Offset > read.Value+read.Size {
		t.Fatalf("pc %#x (vaddr %#x) is not inside read [%#x, %#x)", pc, s.Offset, read.Value, read.Value+read.Size)
	}
	if s.Function != "read" || s.FuncOffset != s.Offset-read.Value {
		t.Errorf("got %s+%#x, want read+%#x", s.Function, s.FuncOffset, s.Offset-read.Value)
	}
	if s.File != "" || s.Line != 0 {
		t.Errorf("libc without DWARF gave %s:%d", s.File, s.Line)
	}
}

// TestAddr2lineAgreement resolves every byte address of the test
// program's functions and compares file and line (and, for C, the
// function) with addr2line.
func TestAddr2lineAgreement(t *testing.T) {
	for _, tc := range []struct {
		name     string
		compiler string
		args     []string
		sources  map[string]string
		funcs    []string
	}{
		{"pie", "gcc", []string{"-g", "-O0"}, map[string]string{"prog.c": cSource}, []string{"probe", "work", "helper", "main"}},
		{"nopie-O2", "gcc", []string{"-g", "-O2", "-no-pie"}, map[string]string{"prog.c": cSource}, []string{"probe", "work", "main"}},
		{"fortran", "gfortran", []string{"-g", "-O0"}, map[string]string{"prog.f90": fortranSource, "helper.c": fortranHelper}, []string{"__m_MOD_inner", "outer_", "MAIN__"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := build(t, tc.compiler, tc.args, tc.sources)
			maps, base := loadMaps(t, bin, 0x5555_5555_4000)
			r := newResolver(t)
			var vaddrs []uint64
			var sites []Site
			for _, fn := range tc.funcs {
				sym := funcSym(t, bin, fn)
				for va := sym.Value + 1; va <= sym.Value+sym.Size; va++ {
					s, err := r.Resolve(maps, openPath, base+va)
					if err != nil {
						t.Fatal(err)
					}
					vaddrs = append(vaddrs, va-1)
					sites = append(sites, s)
				}
			}
			want := addr2line(t, bin, vaddrs)
			bad := 0
			for i, s := range sites {
				w := want[i]
				if s.File != w.file || s.Line != w.line || (tc.name == "pie" && s.Function != w.function) {
					t.Errorf("vaddr %#x: %s %s:%d, addr2line: %s %s:%d", vaddrs[i], s.Function, s.File, s.Line, w.function, w.file, w.line)
					if bad++; bad > 10 {
						t.FailNow()
					}
				}
			}
			t.Logf("%d addresses agree", len(sites))
		})
	}
}

func openPath(m procfs.Mapping) (*os.File, error) { return os.Open(m.Path) }

// loadMaps builds the memory map the kernel would give bin loaded at base
// (0 for a non-PIE binary): one mapping per PT_LOAD segment, page-aligned.
// It returns the mappings and the load bias to add to virtual addresses.
func loadMaps(t *testing.T, bin string, base uint64) ([]procfs.Mapping, uint64) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Type == elf.ET_EXEC {
		base = 0
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	const page = 0x1000
	var maps []procfs.Mapping
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		perms := []byte("---p")
		if p.Flags&elf.PF_R != 0 {
			perms[0] = 'r'
		}
		if p.Flags&elf.PF_W != 0 {
			perms[1] = 'w'
		}
		if p.Flags&elf.PF_X != 0 {
			perms[2] = 'x'
		}
		maps = append(maps, procfs.Mapping{
			Start:  base + p.Vaddr&^(page-1),
			End:    base + (p.Vaddr+p.Memsz+page-1)&^(page-1),
			Offset: p.Off &^ (page - 1),
			Perms:  string(perms),
			Major:  uint32(st.Dev >> 8 & 0xfff),
			Minor:  uint32(st.Dev&0xff | st.Dev>>12&0xfff00),
			Inode:  st.Ino,
			Path:   bin,
		})
	}
	return maps, base
}

// TestSyntheticMaps checks the offset arithmetic for a PIE binary loaded
// at two different bases, the sharing of the parsed object between
// "processes", and unsorted maps.
func TestSyntheticMaps(t *testing.T) {
	bin := build(t, "gcc", []string{"-g", "-O0"}, map[string]string{"prog.c": cSource})
	var opener countingOpener
	r := newResolver(t)
	bases := []uint64{0x5555_5555_4000, 0x7f12_3456_7000}
	var first []Site
	for n, base := range bases {
		maps, bias := loadMaps(t, bin, base)
		if bias != base {
			t.Fatalf("bias %#x, want %#x", bias, base)
		}
		if n == 1 {
			// A process with more mappings, listed out of order.
			maps = append(maps, procfs.Mapping{Start: 0x1000, End: 0x2000, Perms: "r-xp"})
			rand.Shuffle(len(maps), func(i, j int) { maps[i], maps[j] = maps[j], maps[i] })
		}
		var got []Site
		for _, fn := range []string{"probe", "work", "helper", "main"} {
			sym := funcSym(t, bin, fn)
			for _, k := range []uint64{1, 2, 7, sym.Size / 2, sym.Size} {
				s, err := r.Resolve(maps, opener.open, base+sym.Value+k)
				if err != nil {
					t.Fatal(err)
				}
				want := Site{Object: bin, Offset: sym.Value + k, Function: fn, FuncOffset: k}
				if s.Object != want.Object || s.Offset != want.Offset || s.Function != want.Function || s.FuncOffset != want.FuncOffset {
					t.Errorf("base %#x, %s+%#x: got %+v, want %+v", base, fn, k, s, want)
				}
				if s.File == "" || s.Line == 0 {
					t.Errorf("base %#x, %s+%#x: no line: %+v", base, fn, k, s)
				}
				got = append(got, s)
			}
		}
		if n == 0 {
			first = got
		} else if !reflect.DeepEqual(first, got) {
			t.Errorf("the second base gave other sites:\n%v\n%v", first, got)
		}
		// An address in the ELF header (mapped, but not executable).
		if _, err := r.Resolve(maps, opener.open, base+0x10); err == nil {
			t.Errorf("an address in the read-only mapping resolved")
		}
	}
	if n := opener.count(bin); n != 1 {
		t.Errorf("the binary was opened %d times, want 1", n)
	}
	// After Close the Resolver reopens what it needs.
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	maps, base := loadMaps(t, bin, bases[0])
	if s, err := r.Resolve(maps, opener.open, base+first[0].Offset); err != nil || !reflect.DeepEqual(s, first[0]) {
		t.Errorf("after Close: %+v, %v; want %+v", s, err, first[0])
	}
	if n := opener.count(bin); n != 2 {
		t.Errorf("the binary was opened %d times after Close, want 2", n)
	}
}

// TestTwoProcesses resolves the same call site in two processes running
// the same PIE binary: the Sites are equal, the object is opened once.
func TestTwoProcesses(t *testing.T) {
	bin := build(t, "gcc", []string{"-g", "-O0"}, map[string]string{"prog.c": cSource})
	r := newResolver(t)
	var opens int
	var sites []Site
	for range 2 {
		c := start(t, bin)
		open := ProcOpener(procfs.FS{}, c.pid)
		counted := func(m procfs.Mapping) (*os.File, error) { opens++; return open(m) }
		maps := c.maps(t)
		s, err := r.Resolve(maps, counted, c.addrs["work"])
		if err != nil {
			t.Fatal(err)
		}
		sites = append(sites, s)
		t.Logf("pid %d: %#x -> %+v", c.pid, c.addrs["work"], s)
	}
	if !reflect.DeepEqual(sites[0], sites[1]) {
		t.Errorf("the two processes gave %+v and %+v", sites[0], sites[1])
	}
	if opens != 1 {
		t.Errorf("Opener called %d times, want 1", opens)
	}
}

func TestErrors(t *testing.T) {
	r := newResolver(t)
	maps := []procfs.Mapping{
		{Start: 0x400000, End: 0x401000, Perms: "r--p", Inode: 7, Path: "/bin/x"},
		{Start: 0x401000, End: 0x402000, Perms: "r-xp", Offset: 0x1000, Inode: 7, Path: "/nonexistent/x"},
		{Start: 0x7000_0000, End: 0x7000_1000, Perms: "rwxp"},
		{Start: 0x7fff_0000, End: 0x7fff_2000, Perms: "r-xp", Path: "[vdso]"},
	}
	for _, tc := range []struct {
		addr uint64
		want string
	}{
		{0x1234, "0x1234"},     // in no mapping
		{0x400010, "0x400010"}, // in a mapping that is not executable
		{0x401010, "/nonexistent/x"},
		{0x7000_0010, "anonymous"},
		{0x7fff_0010, "[vdso]"},
	} {
		s, err := r.Resolve(maps, openPath, tc.addr)
		if err == nil {
			t.Errorf("Resolve(%#x) = %+v, want an error", tc.addr, s)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Resolve(%#x): error %q does not mention %q", tc.addr, err, tc.want)
		}
	}
	// A failed open is retried, not cached.
	calls := 0
	failing := func(procfs.Mapping) (*os.File, error) { calls++; return nil, errors.New("boom") }
	for range 2 {
		if _, err := r.Resolve(maps, failing, 0x401010); err == nil || !strings.Contains(err.Error(), "boom") {
			t.Errorf("failing Opener: %v", err)
		}
	}
	if calls != 2 {
		t.Errorf("failing Opener called %d times, want 2", calls)
	}
	// A file that is not ELF: an error, cached.
	notELF := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	textMaps := []procfs.Mapping{{Start: 0x1000, End: 0x2000, Perms: "r-xp", Inode: 9, Path: notELF}}
	calls = 0
	opener := func(m procfs.Mapping) (*os.File, error) { calls++; return os.Open(m.Path) }
	for range 2 {
		if _, err := r.Resolve(textMaps, opener, 0x1010); err == nil {
			t.Error("a non-ELF file resolved")
		}
	}
	if calls != 1 {
		t.Errorf("non-ELF file opened %d times, want 1", calls)
	}
}

// TestStripped resolves in a binary without symbols or DWARF: only Object
// and Offset are known, and that is no error.
func TestStripped(t *testing.T) {
	bin := build(t, "gcc", []string{"-O0", "-s"}, map[string]string{"prog.c": cSource})
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	var text uint64
	if s := f.Section(".text"); s != nil {
		text = s.Addr
	}
	f.Close()
	maps, base := loadMaps(t, bin, 0x5555_5555_4000)
	r := newResolver(t)
	s, err := r.Resolve(maps, openPath, base+text+0x10)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stripped: %+v", s)
	// .dynsym of an executable holds no local functions, maybe none at all.
	want := Site{Object: bin, Offset: text + 0x10}
	if s.Function == "" && !reflect.DeepEqual(s, want) {
		t.Errorf("got %+v, want %+v", s, want)
	}
	if s.File != "" || s.Line != 0 {
		t.Errorf("stripped binary gave a line: %+v", s)
	}
}

func TestProcOpenerFallback(t *testing.T) {
	bin := build(t, "gcc", []string{"-O0"}, map[string]string{"prog.c": cSource})
	// A procfs tree without map_files, whose process root is "/".
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "42"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(root, "42", "root")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	ino := fi.Sys().(*syscall.Stat_t).Ino
	open := ProcOpener(procfs.FS{Root: root}, 42)
	m := procfs.Mapping{Start: 0x1000, End: 0x2000, Perms: "r-xp", Inode: ino, Path: bin}

	f, err := open(m)
	if err != nil {
		t.Fatalf("fallback to the root path: %v", err)
	}
	f.Close()

	m.Inode = ino + 1
	if f, err := open(m); err == nil {
		f.Close()
		t.Error("a file with another inode was accepted")
	}
	m.Inode, m.Deleted = ino, true
	if f, err := open(m); err == nil {
		f.Close()
		t.Error("a deleted mapping was opened by its path")
	}
}

// TestProcOpenerMapFiles opens a mapping of a live process through
// map_files, after the file was deleted.
func TestProcOpenerMapFiles(t *testing.T) {
	bin := build(t, "gcc", []string{"-g", "-O0"}, map[string]string{"prog.c": cSource})
	c := start(t, bin)
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	maps := c.maps(t)
	var exe procfs.Mapping
	for _, m := range maps {
		if m.Path == bin && m.Executable() {
			exe = m
		}
	}
	if !exe.Deleted {
		t.Fatalf("the mapping of %s is not marked deleted: %+v", bin, exe)
	}
	if f, err := os.Open(procfs.FS{}.MapFile(c.pid, exe)); err != nil {
		t.Skipf("map_files not readable here: %v", err)
	} else {
		f.Close()
	}
	r := newResolver(t)
	s, err := r.Resolve(maps, ProcOpener(procfs.FS{}, c.pid), c.addrs["work"])
	if err != nil {
		t.Fatal(err)
	}
	if s.Function != "work" || s.Line != markLine(t, cSource, "work") {
		t.Errorf("deleted binary: %+v", s)
	}
}

// TestConcurrent resolves from several goroutines at once (run with -race
// to check the locking).
func TestConcurrent(t *testing.T) {
	bin := build(t, "gcc", []string{"-g", "-O0"}, map[string]string{"prog.c": cSource})
	maps, base := loadMaps(t, bin, 0x5555_5555_4000)
	sym := funcSym(t, bin, "main")
	r := newResolver(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for k := uint64(1); k <= sym.Size; k++ {
				s, err := r.Resolve(maps, openPath, base+sym.Value+k)
				if err == nil && s.Function != "main" {
					err = fmt.Errorf("main+%#x resolved to %+v", k, s)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

var _ io.Closer = (*Resolver)(nil)
