package elfx

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/internal/x86"
)

func rel32(from, to uint64) []byte {
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, uint32(int32(int64(to)-int64(from))))
	return b
}

// The code of the scan tests is loaded at addr; it reaches the callee at
// target (a PLT entry far away) or near (a local function right after it).
const (
	addr   = 0x1000
	target = 0x41d0
	near   = 0x1040
)

func call(at, to uint64) []byte { return append([]byte{0xe8}, rel32(addr+at+5, to)...) }
func jmp(at, to uint64) []byte  { return append([]byte{0xe9}, rel32(addr+at+5, to)...) }

func TestScan(t *testing.T) {
	targets := map[uint64]bool{target: true, near: true}
	padding := []byte{0xcc, 0xcc, 0x0f, 0x0b, 0x90, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0, 0}
	tests := []struct {
		name    string
		code    []byte
		want    []uint64
		wantErr string // the error's text after the offset, "" for none
	}{
		{"empty", nil, nil, ""},
		{"call at start", call(0, target), []uint64{0}, ""},
		{"call elsewhere ignored", call(0, 0x5000), nil, ""},
		{"after other bytes", slices.Concat([]byte{0x90, 0xbf, 1, 0, 0, 0}, call(6, target)), []uint64{6}, ""},
		{"tail jump", slices.Concat([]byte{0x5b}, jmp(1, target)), []uint64{1}, ""},
		{"short tail jump to a near function", []byte{0x5b, 0xeb, byte(near - addr - 3)}, []uint64{1}, ""},
		{"bnd jmp", slices.Concat([]byte{0xf2}, jmp(1, target)), []uint64{0}, ""},
		{"two calls", slices.Concat(call(0, target), call(5, target)), []uint64{0, 5}, ""},
		{"after endbr64", slices.Concat([]byte{0xf3, 0x0f, 0x1e, 0xfa}, call(4, target)), []uint64{4}, ""},
		{"int3, ud2 and nop padding after the last instruction", slices.Concat(call(0, target), padding), []uint64{0}, ""},
		{"a lone zero byte of fill at the end", slices.Concat(call(0, target), []byte{0xcc, 0}), []uint64{0}, ""},
		{"conditional jump elsewhere", slices.Concat([]byte{0x74, 0x05}, call(2, target)), []uint64{2}, ""},
		{"call cut short by the end", slices.Concat([]byte{0x90}, call(1, target)[:4]), nil,
			"+0x1: truncated instruction or lone prefix (bytes e8 ca 31 00)"},
		{"undecodable bytes between two calls", slices.Concat(call(0, target), []byte{0x0f, 0x04}, call(7, target)), nil,
			"+0x5: unrecognized instruction (bytes 0f 04 e8 c4 31 00 00)"},
		{"lone prefix at the end", slices.Concat(call(0, target), []byte{0x66}), nil,
			"+0x5: truncated instruction or lone prefix (bytes 66)"},
		{"conditional tail jump to the callee", slices.Concat(call(0, target), []byte{0x0f, 0x85}, rel32(addr+11, target)), nil,
			"+0x5: conditional jump JNE to the callee"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := scan(tc.code, addr, targets)
			if !slices.Equal(got, tc.want) {
				t.Errorf("scan = %v, want %v", got, tc.want)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("scan: %v", err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr+": "+ErrUnreliable.Error() || !errors.Is(err, ErrUnreliable)):
				t.Errorf("scan error = %v, want %q wrapping ErrUnreliable", err, tc.wantErr)
			}
		})
	}
}

// bytePatternSites are the offsets where the byte scan that decoding
// replaced matched: an E8 or E9 byte whose next four bytes, read as a
// rel32, land on a target, wherever it lies.
func bytePatternSites(code []byte, addr uint64, targets map[uint64]bool) []uint64 {
	var out []uint64
	for i := 0; i+5 <= len(code); i++ {
		rel := int32(binary.LittleEndian.Uint32(code[i+1:]))
		if (code[i] == 0xe8 || code[i] == 0xe9) && targets[addr+uint64(i)+5+uint64(int64(rel))] {
			out = append(out, uint64(i))
		}
	}
	return out
}

// TestNoSiteInsideInstruction gives scan instructions that hold a call or
// jump to the target in their immediate or displacement bytes: the byte
// scan took those for call sites, where a uprobe would corrupt the
// instruction.
func TestNoSiteInsideInstruction(t *testing.T) {
	// Reached from a call at +3 whose rel32's high byte is 5b (pop %rbx).
	const far = addr + 3 + 5 + 0x5b000010
	tests := []struct {
		name   string
		code   []byte
		target uint64
		false  uint64 // the offset the byte scan matched
		want   []uint64
	}{
		// movabs $imm64, %rax whose immediate starts with a call.
		{"mov immediate", slices.Concat([]byte{0x48, 0xb8}, call(2, target), []byte{0, 0, 0}), target, 2, nil},
		// cmpl $imm32, disp32(%rip) whose displacement ends in e9 and
		// whose immediate is the rel32; then a real call.
		{"cmp displacement and immediate", slices.Concat([]byte{0x81, 0x3d, 0, 0, 0}, jmp(5, target), call(10, target)), target, 5, []uint64{10}},
		// lea disp32(%rip), %rdi whose displacement holds e8 and three
		// bytes of a rel32 whose fourth is the next instruction, pop %rbx.
		{"lea displacement and the next opcode", slices.Concat([]byte{0x48, 0x8d, 0x3d}, call(3, far)[:4], []byte{0x5b}), far, 3, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			targets := map[uint64]bool{tc.target: true}
			if !slices.Contains(bytePatternSites(tc.code, addr, targets), tc.false) {
				t.Fatalf("the bytes hold no call to the target at +%#x: the test tests nothing", tc.false)
			}
			got, err := scan(tc.code, addr, targets)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("scan = %v, want %v (a site inside an instruction?)", got, tc.want)
			}
		})
	}
}

// TestSitesRealLibrary builds a small shared object whose functions call a
// global function (through the PLT) and a static one (directly), and checks
// the sites against objdump's reading of the same file.
func TestSitesRealLibrary(t *testing.T) {
	code := `
int counter;
__attribute__((noinline)) void enable(int n) { counter += n; }
__attribute__((noinline)) int isend(int x) { if (x > 3) enable(1); return x * 2; }
__attribute__((noinline)) int progress(int x) { for (int i = 0; i < x; i++) if (i & 1) enable(1); return x; }
__attribute__((noinline)) void quiet(void) { counter = 0; }
__attribute__((noinline)) void tail(int n) { enable(n + 1); }
/* called and its address taken in code (a GLOB_DAT relocation): the
   linker puts its PLT entry in .plt.got */
__attribute__((noinline)) void taken(int n) { counter -= n; }
void *taken_addr(void) { return (void *)taken; }
__attribute__((noinline)) int usetaken(int x) { if (x > 1) taken(x); return x + 1; }
/* calls enable, then holds bytes that are no instruction (0f 04) */
__attribute__((noinline)) int broken(int x) { if (x > 3) enable(1); __asm__ volatile(".byte 0x0f, 0x04"); return x; }
`
	f, dis := optimizedLib(t, code)
	for _, fn := range []string{"isend", "progress", "quiet", "tail"} {
		got, err := Sites(f, fn, "enable")
		if err != nil {
			t.Fatalf("Sites(%s): %v", fn, err)
		}
		want := dis.Sites(fn, "enable")
		if !slices.Equal(got, want) {
			t.Errorf("Sites(%s) = %v, objdump says %v", fn, got, want)
		}
	}
	if got, _ := Sites(f, "isend", "enable"); len(got) == 0 {
		t.Error("isend calls enable, no site found")
	}
	if f.Section(".plt.got") == nil {
		t.Fatal("the linker made no .plt.got for taken(), whose address is taken: the test does not test it")
	}
	got, err := Sites(f, "usetaken", "taken")
	if err != nil {
		t.Fatal(err)
	}
	if want := dis.Sites("usetaken", "taken"); len(got) == 0 || !slices.Equal(got, want) {
		t.Errorf("Sites(usetaken, taken) through .plt.got = %v, objdump says %v", got, want)
	}
	if _, err := Sites(f, "nosuch", "enable"); err == nil {
		t.Error("Sites of an undefined function: want an error")
	}

	// broken has a call to enable before its bad bytes: no site, and an
	// error naming the function and where objdump sees "(bad)".
	if len(dis.Sites("broken", "enable")) == 0 {
		t.Fatal("objdump sees no call to enable in broken: the test does not test a site before the bad bytes")
	}
	bad := slices.IndexFunc(dis.Funcs["broken"].Insts, func(i ObjdumpInst) bool { return i.Mnemonic == "(bad)" })
	if bad < 0 {
		t.Fatal("objdump sees no (bad) instruction in broken")
	}
	got, err = Sites(f, "broken", "enable")
	prefix := fmt.Sprintf("broken+%#x: ", dis.Funcs["broken"].Insts[bad].Off)
	if got != nil || !errors.Is(err, ErrUnreliable) || !strings.HasPrefix(err.Error(), prefix) {
		t.Errorf("Sites(broken) = %v, %v; want no sites and an error %q… wrapping ErrUnreliable", got, err, prefix)
	}
}

// TestCallSitesFollowClones builds a library whose functions reach
// enable through pieces a compiler moves out of line, named as GCC names
// them (given here by asm labels): a clone two functions share, a clone
// of a clone, and a cold part (GCC's own). Calls.Sites must find the calls
// in them, as objdump sees them, and not those in an ordinary function
// called alike.
func TestCallSitesFollowClones(t *testing.T) {
	code := `
int counter;
__attribute__((noinline)) void enable(int n) { counter += n; }
static int inner(int x) __asm__("inner.isra.0");
static __attribute__((noinline)) int inner(int x) { if (x > 9) enable(2); return x - 1; }
static int start_seq(int x) __asm__("start_seq.constprop.0");
static __attribute__((noinline)) int start_seq(int x) { if (x > 3) enable(1); return inner(x) + 1; }
static __attribute__((noinline, cold)) void slow(void) { counter = -counter; }
static __attribute__((noinline)) int helper(int x) { if (x > 5) enable(3); return x; }
__attribute__((noinline)) int isend(int x) { return start_seq(x) * 2; }
__attribute__((noinline)) int send(int x) { return start_seq(x) + 5; }
/* the block calling the cold function goes to GCC's retry.cold */
__attribute__((noinline)) int retry(int x) { if (x < 0) { slow(); enable(x); } return x; }
__attribute__((noinline)) int plain(int x) { return helper(x) * 3; }
`
	f, dis := optimizedLib(t, code)
	calls, err := ReadCalls(f)
	if err != nil {
		t.Fatal(err)
	}
	// at returns the addresses of the calls to enable in the named pieces.
	at := func(pieces ...string) []uint64 {
		var out []uint64
		for _, p := range pieces {
			sites := dis.Sites(p, "enable")
			if len(sites) == 0 {
				t.Fatalf("objdump sees no call to enable in %s: the test does not test it", p)
			}
			for _, off := range sites {
				out = append(out, dis.Funcs[p].Start+off)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		fn   string
		want []uint64
	}{
		{"isend", at("start_seq.constprop.0", "inner.isra.0")},
		{"send", at("start_seq.constprop.0", "inner.isra.0")},
		{"retry", at("retry.cold")},
		{"plain", nil}, // helper is a function of its own, not a piece of plain
	} {
		got, err := calls.Sites(tc.fn, "enable")
		if err != nil {
			t.Fatalf("Sites(%s): %v", tc.fn, err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Sites(%s) = %#x, want %#x", tc.fn, got, tc.want)
		}
	}
}

// optimizedLib compiles the C code with cc -O2 into a shared library and
// returns it, open (closed at the end of the test), and objdump's reading.
func optimizedLib(t *testing.T, code string) (*elf.File, ObjdumpFile) {
	t.Helper()
	for _, tool := range []string{"cc", "objdump"} {
		if _, err := exec.LookPath(tool); err != nil {
			mpitest.Require(t, tool+" not installed")
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "lib.c")
	so := filepath.Join(dir, "lib.so")
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cc", "-O2", "-fPIC", "-shared", "-o", so, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	f, err := elf.Open(so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, Objdump(t, so)
}

// ObjdumpInst is one instruction in objdump's disassembly.
type ObjdumpInst struct {
	Off      uint64 // from the start of its function
	Mnemonic string
	Line     string
}

// ObjdumpFunc is one function, or other symbol, in objdump's disassembly.
type ObjdumpFunc struct {
	Start uint64
	Insts []ObjdumpInst
}

// ObjdumpFile is objdump's reading of a file's code, by symbol name.
type ObjdumpFile struct {
	Funcs map[string]ObjdumpFunc
}

// Objdump reads `objdump -d` of a file. It is exported for the catalog
// test of package elfx_test.
func Objdump(t testing.TB, file string) ObjdumpFile {
	t.Helper()
	out, err := exec.Command("objdump", "-d", "-w", "--no-show-raw-insn", file).Output()
	if err != nil {
		t.Fatalf("objdump %s: %v", file, err)
	}
	d := ObjdumpFile{Funcs: map[string]ObjdumpFunc{}}
	var name string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasSuffix(line, ">:") {
			start, err := strconv.ParseUint(strings.Fields(line)[0], 16, 64)
			if err != nil {
				t.Fatalf("objdump %s: %q: %v", file, line, err)
			}
			name = unversioned(line[strings.Index(line, "<")+1 : len(line)-2])
			d.Funcs[name] = ObjdumpFunc{Start: start}
			continue
		}
		fields := strings.Fields(line)
		if name == "" || len(fields) < 2 || !strings.HasSuffix(fields[0], ":") {
			continue
		}
		at, err := strconv.ParseUint(strings.TrimSuffix(fields[0], ":"), 16, 64)
		if err != nil {
			continue
		}
		mnemonic := fields[1]
		if (mnemonic == "bnd" || mnemonic == "notrack") && len(fields) > 2 {
			mnemonic = fields[2]
		}
		fn := d.Funcs[name]
		fn.Insts = append(fn.Insts, ObjdumpInst{Off: at - fn.Start, Mnemonic: mnemonic, Line: line})
		d.Funcs[name] = fn
	}
	return d
}

// Sites lists the offsets in fn of calls and jumps (not conditional ones)
// to callee or callee@plt.
func (d ObjdumpFile) Sites(fn, callee string) []uint64 {
	var out []uint64
	for _, in := range d.Funcs[fn].Insts {
		if in.Mnemonic != "call" && in.Mnemonic != "jmp" || !strings.HasSuffix(in.Line, ">") {
			continue
		}
		dest := in.Line[strings.LastIndex(in.Line, "<")+1 : len(in.Line)-1]
		if unversioned(strings.TrimSuffix(dest, "@plt")) == callee {
			out = append(out, in.Off)
		}
	}
	return out
}

// unversioned strips the symbol version objdump names a dynamic symbol
// with (mca_pml_ob1_isend@@Base).
func unversioned(name string) string {
	if i := strings.Index(name, "@@"); i > 0 {
		return name[:i]
	}
	return name
}

// debianLibraries are Debian's Open MPI and UCX libraries, whose call
// sites the catalog probes, and Open MPI's own libraries.
var debianLibraries = []string{
	"/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so",
	"/usr/lib/x86_64-linux-gnu/libucp.so.0",
	"/usr/lib/x86_64-linux-gnu/libmpi.so.40",
	"/usr/lib/x86_64-linux-gnu/libopen-pal.so.40",
}

// TestDecodeDebianLibraries decodes every function of Debian's MPI
// libraries: each must decode to its end, and its instructions must start
// where objdump's do.
func TestDecodeDebianLibraries(t *testing.T) {
	if _, err := exec.LookPath("objdump"); err != nil {
		mpitest.Require(t, "objdump not installed")
	}
	for _, lib := range debianLibraries {
		t.Run(filepath.Base(lib), func(t *testing.T) {
			if _, err := os.Stat(lib); err != nil {
				mpitest.Require(t, "Debian's "+lib)
			}
			f, err := elf.Open(lib)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			c, err := ReadCalls(f)
			if err != nil {
				t.Fatal(err)
			}
			syms := c.syms
			starts := map[uint64][]uint64{} // objdump's instruction offsets by function address
			for _, fn := range Objdump(t, lib).Funcs {
				for _, in := range fn.Insts {
					starts[fn.Start] = append(starts[fn.Start], in.Off)
				}
			}
			n := 0
			for name, s := range syms {
				code, err := functionBytes(f, s)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				var got []uint64
				if err := walk(code, func(off int, _ x86asm.Inst) error {
					got = append(got, uint64(off))
					return nil
				}); err != nil {
					t.Errorf("%s%v", name, err)
					continue
				}
				want := slices.DeleteFunc(slices.Clone(starts[s.Value]), func(off uint64) bool { return off >= s.Size })
				if !slices.Equal(got, want) {
					i := 0
					for i < min(len(got), len(want)) && got[i] == want[i] {
						i++
					}
					t.Errorf("%s: instructions start at %#x, objdump's at %#x (first %d agree)", name, got[i:min(i+3, len(got))], want[i:min(i+3, len(want))], i)
				}
				n++
			}
			if n < 50 {
				t.Errorf("only %d functions decoded: the test tests little", n)
			}
			t.Logf("%d functions decode as objdump reads them", n)
		})
	}
}

func FuzzSites(f *testing.F) {
	f.Add([]byte("\x7fELF"), uint64(addr), uint64(target))
	f.Add(slices.Concat([]byte{0x48, 0xb8}, call(2, target), []byte{0, 0, 0}, call(10, target)), uint64(addr), uint64(target))
	f.Add(slices.Concat([]byte{0xf3, 0x0f, 0x1e, 0xfa, 0xf2}, jmp(5, target), []byte{0xeb, 0xfe, 0xcc, 0x0f, 0x0b, 0x66}), uint64(addr), uint64(target))
	// The ELF and program headers of the test binary: 1 KiB, since the
	// fuzzer minimises every new input by decoding it again and again.
	if self, err := os.ReadFile("/proc/self/exe"); err == nil && len(self) < 64<<20 {
		f.Add(self[:min(len(self), 1024)], uint64(addr), uint64(target))
	}
	f.Fuzz(func(t *testing.T, code []byte, pc, dest uint64) {
		if ef, err := elf.NewFile(bytes.NewReader(code)); err == nil {
			_, _ = Sites(ef, "main", "enable")
		}
		sites, err := scan(code, pc, map[uint64]bool{dest: true})
		if err != nil {
			if sites != nil || !errors.Is(err, ErrUnreliable) {
				t.Fatalf("scan = %v, %v: want no sites with an ErrUnreliable", sites, err)
			}
			return
		}
		for i, off := range sites {
			if i > 0 && off <= sites[i-1] || off >= uint64(len(code)) {
				t.Fatalf("sites %v out of order or outside %d bytes", sites, len(code))
			}
			in, err := x86.Decode(code[off:])
			rel, ok := in.Args[0].(x86asm.Rel)
			if err != nil || (in.Op != x86asm.CALL && in.Op != x86asm.JMP) || !ok ||
				pc+off+uint64(in.Len)+uint64(int64(rel)) != dest {
				t.Fatalf("site +%#x is %v (%v), not a call or jump to %#x", off, in, err, dest)
			}
		}
	})
}

// FunctionCode returns the bytes of function fn of f, and DecodeCode
// decodes them as Sites does: for the catalog benchmark of package
// elfx_test.
func FunctionCode(f *elf.File, fn string) ([]byte, error) {
	c, err := ReadCalls(f)
	if err != nil {
		return nil, err
	}
	return functionBytes(f, c.syms[fn])
}

// DecodeCode: see FunctionCode.
func DecodeCode(code []byte) error {
	return walk(code, func(int, x86asm.Inst) error { return nil })
}
