package elfx

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

func rel32(from, to uint64) []byte {
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, uint32(int32(int64(to)-int64(from))))
	return b
}

func TestScan(t *testing.T) {
	const addr = 0x1000
	call := func(at, to uint64) []byte { return append([]byte{opCall}, rel32(addr+at+5, to)...) }
	jmp := func(at, to uint64) []byte { return append([]byte{opJmp}, rel32(addr+at+5, to)...) }
	targets := map[uint64]bool{0x41d0: true}
	tests := []struct {
		name string
		code []byte
		want []uint64
	}{
		{"empty", nil, nil},
		{"call at start", call(0, 0x41d0), []uint64{0}},
		{"call elsewhere ignored", call(0, 0x5000), nil},
		{"after other bytes", append([]byte{0x90, 0xbf, 1, 0, 0, 0}, call(6, 0x41d0)...), []uint64{6}},
		{"tail jump", append([]byte{0x5b}, jmp(1, 0x41d0)...), []uint64{1}},
		{"two calls", append(call(0, 0x41d0), call(5, 0x41d0)...), []uint64{0, 5}},
		{"truncated", call(0, 0x41d0)[:4], nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := scan(tc.code, addr, targets); !slices.Equal(got, tc.want) {
				t.Errorf("scan = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSitesRealLibrary builds a small shared object whose functions call a
// global function (through the PLT) and a static one (directly), and checks
// the sites against objdump's reading of the same file.
func TestSitesRealLibrary(t *testing.T) {
	for _, tool := range []string{"cc", "objdump"} {
		if _, err := exec.LookPath(tool); err != nil {
			mpitest.Require(t, tool+" not installed")
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "lib.c")
	so := filepath.Join(dir, "lib.so")
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
`
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
	defer f.Close()
	dis, err := exec.Command("objdump", "-d", "--no-show-raw-insn", so).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range []string{"isend", "progress", "quiet", "tail"} {
		got, err := Sites(f, fn, "enable")
		if err != nil {
			t.Fatalf("Sites(%s): %v", fn, err)
		}
		want := objdumpSites(t, string(dis), fn, "enable")
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
	if want := objdumpSites(t, string(dis), "usetaken", "taken"); len(got) == 0 || !slices.Equal(got, want) {
		t.Errorf("Sites(usetaken, taken) through .plt.got = %v, objdump says %v", got, want)
	}
	if _, err := Sites(f, "nosuch", "enable"); err == nil {
		t.Error("Sites of an undefined function: want an error")
	}
}

// objdumpSites lists the offsets in fn of calls and jumps to callee or callee@plt.
func objdumpSites(t *testing.T, dis, fn, callee string) []uint64 {
	var out []uint64
	var start uint64
	in := false
	for _, line := range strings.Split(dis, "\n") {
		if strings.HasSuffix(line, ">:") {
			name := line[strings.Index(line, "<")+1 : strings.Index(line, ">")]
			in = name == fn
			if in {
				v, err := strconv.ParseUint(strings.Fields(line)[0], 16, 64)
				if err != nil {
					t.Fatal(err)
				}
				start = v
			}
			continue
		}
		if !in {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 || !strings.HasSuffix(fields[0], ":") {
			continue
		}
		if (fields[1] == "call" || fields[1] == "jmp") &&
			(strings.Contains(line, "<"+callee+">") || strings.Contains(line, "<"+callee+"@plt>")) {
			v, err := strconv.ParseUint(strings.TrimSuffix(fields[0], ":"), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v-start)
		}
	}
	return out
}

func FuzzSites(f *testing.F) {
	f.Add([]byte("\x7fELF"))
	if self, err := os.ReadFile("/proc/self/exe"); err == nil && len(self) < 64<<20 {
		f.Add(self[:min(len(self), 8192)])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ef, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			return
		}
		_, _ = Sites(ef, "main", "enable")
	})
}
