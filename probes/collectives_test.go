package probes

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// decodeCollCookie unpacks a collective cookie the way do_coll_enter,
// comm_slot and do_coll_exit (bpf/collectives.h) do, with the generated
// shifts and widths.
func decodeCollCookie(c uint64) (coll, commArg, layout, reqArg int, intRequests bool, addr uint64) {
	const argBits = bpf.MpiprobeCollCookieCOLL_ARG_BITS
	return int(field(c, bpf.MpiprobeCollCookieCOLL_INDEX_SHIFT, bpf.MpiprobeCollCookieCOLL_INDEX_BITS)),
		int(field(c, bpf.MpiprobeCollCookieCOLL_COMM_ARG_SHIFT, argBits)),
		int(field(c, bpf.MpiprobeCollCookieCOLL_LAYOUT_SHIFT, bpf.MpiprobeCollCookieCOLL_LAYOUT_BITS)),
		int(field(c, bpf.MpiprobeCollCookieCOLL_REQ_ARG_SHIFT, argBits)),
		field(c, bpf.MpiprobeCollCookieCOLL_INT_REQ_SHIFT, uint32(1)) == 1,
		c >> bpf.MpiprobeCollCookieCOLL_ADDR_SHIFT
}

func TestCollCookie(t *testing.T) {
	tests := []struct {
		name                          string
		coll, commArg, layout, reqArg int
		intRequests                   bool
		addr                          uint64
		want                          uint64
	}{
		{"MPI_Barrier, unknown build", 0, 1, 0, 0, false, 0, 0x0000000000000100},
		{"MPI_Ibarrier, Open MPI", 1, 1, 1, 2, false, 0x1234, 0x0000123400021101},
		{"MPI_Iallreduce, MPICH", 25, 6, 2, 7, true, 0x2f5a30, 0x002f5a3000172619},
		{"MPI_Gatherv at a high address", 6, 9, 3, 0, false, 0xfffff000, 0xfffff00000003906},
		{"every field at its maximum", MaxCollectives - 1, 12, 15, 12, true, 0xffffffff, 0xffffffff001cfc3f},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CollCookie(tt.coll, tt.commArg, tt.layout, tt.reqArg, tt.intRequests, tt.addr)
			if err != nil {
				t.Fatalf("CollCookie: %v", err)
			}
			if got != tt.want {
				t.Errorf("CollCookie(%d, %d, %d, %d, %v, %#x) = %#016x, want %#016x",
					tt.coll, tt.commArg, tt.layout, tt.reqArg, tt.intRequests, tt.addr, got, tt.want)
			}
			if got&0xffe000c0 != 0 {
				t.Errorf("CollCookie = %#016x: bits 6-7 and 21-31 are not zero", got)
			}
			coll, comm, layout, req, ints, addr := decodeCollCookie(got)
			if coll != tt.coll || comm != tt.commArg || layout != tt.layout || req != tt.reqArg || ints != tt.intRequests || addr != tt.addr {
				t.Errorf("BPF-side decoding of %#016x = (%d, %d, %d, %d, %v, %#x), want (%d, %d, %d, %d, %v, %#x)",
					got, coll, comm, layout, req, ints, addr, tt.coll, tt.commArg, tt.layout, tt.reqArg, tt.intRequests, tt.addr)
			}
		})
	}
}

func TestCollCookieOutOfRange(t *testing.T) {
	tests := []struct {
		name                          string
		coll, commArg, layout, reqArg int
		addr                          uint64
		wantErr                       string
	}{
		{"negative collective", -1, 1, 0, 0, 0, "collective index -1"},
		{"collective MaxCollectives", MaxCollectives, 1, 0, 0, 0, "collective index 64"},
		{"communicator argument 0", 0, 0, 0, 0, 0, "communicator argument 0"},
		{"communicator argument 13", 0, 13, 0, 0, 0, "communicator argument 13"},
		{"negative communicator argument", 0, -1, 0, 0, 0, "communicator argument -1"},
		{"negative layout", 0, 1, -1, 0, 0, "layout index -1"},
		{"layout 16", 0, 1, 16, 0, 0, "layout index 16"},
		{"negative request argument", 0, 1, 0, -1, 0, "request argument -1"},
		{"request argument 13", 0, 1, 0, 13, 0, "request argument 13"},
		{"address at 4 GiB", 0, 1, 0, 0, 1 << 32, "beyond 4 GiB"},
		{"huge address", 0, 1, 0, 0, ^uint64(0), "beyond 4 GiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, ints := range []bool{false, true} {
				got, err := CollCookie(tt.coll, tt.commArg, tt.layout, tt.reqArg, ints, tt.addr)
				if err == nil {
					t.Fatalf("CollCookie(%d, %d, %d, %d, %v, %#x) = %#x, want an error", tt.coll, tt.commArg, tt.layout, tt.reqArg, ints, tt.addr, got)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("CollCookie error %q, want it to contain %q", err, tt.wantErr)
				}
				if got != 0 {
					t.Errorf("CollCookie = %#x with an error, want 0", got)
				}
			}
		})
	}
}

// decodeWaitCookie unpacks a completion cookie the way do_wait_enter does.
func decodeWaitCookie(c uint64) (reqArg, cntArg, width int) {
	width = 8
	if field(c, bpf.MpiprobeCollCookieCOLL_INT_REQ_SHIFT, uint32(1)) == 1 {
		width = 4
	}
	const argBits = bpf.MpiprobeCollCookieCOLL_ARG_BITS
	return int(field(c, bpf.MpiprobeCollCookieCOLL_WAIT_REQ_ARG_SHIFT, argBits)),
		int(field(c, bpf.MpiprobeCollCookieCOLL_WAIT_COUNT_ARG_SHIFT, argBits)), width
}

func TestWaitCookie(t *testing.T) {
	tests := []struct {
		name           string
		reqArg, cntArg int
		intRequests    bool
		want           uint64
	}{
		{"MPI_Wait, Open MPI", 1, 0, false, 0x1},
		{"MPI_Waitall, Open MPI", 2, 1, false, 0x12},
		{"MPI_Waitall, MPICH", 2, 1, true, 0x100012},
		{"maximum arguments", 12, 12, true, 0x1000cc},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := WaitCookie(tt.reqArg, tt.cntArg, tt.intRequests)
			if err != nil {
				t.Fatalf("WaitCookie: %v", err)
			}
			if got != tt.want {
				t.Errorf("WaitCookie(%d, %d, %v) = %#x, want %#x", tt.reqArg, tt.cntArg, tt.intRequests, got, tt.want)
			}
			wantWidth := 8
			if tt.intRequests {
				wantWidth = 4
			}
			req, cnt, w := decodeWaitCookie(got)
			if req != tt.reqArg || cnt != tt.cntArg || w != wantWidth {
				t.Errorf("BPF-side decoding of %#x = (%d, %d, %d), want (%d, %d, %d)", got, req, cnt, w, tt.reqArg, tt.cntArg, wantWidth)
			}
		})
	}
	for _, bad := range []struct{ req, cnt int }{{0, 0}, {-1, 0}, {13, 0}, {1, -1}, {1, 13}, {0, 1}} {
		for _, ints := range []bool{false, true} {
			got, err := WaitCookie(bad.req, bad.cnt, ints)
			if err == nil || got != 0 {
				t.Errorf("WaitCookie(%d, %d, %v) = %#x, %v, want 0 and an error", bad.req, bad.cnt, ints, got, err)
			}
		}
	}
	for _, c := range completions {
		if _, err := WaitCookie(c.reqArg, c.cntArg, true); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestCollectivesTable(t *testing.T) {
	cs := Collectives()
	if len(cs) != 44 {
		t.Errorf("%d collectives, want 44", len(cs))
	}
	if len(cs) >= MaxCollectives {
		t.Errorf("%d collectives, want fewer than MaxCollectives (%d)", len(cs), MaxCollectives)
	}
	byName := map[string]Collective{}
	blocking := 0
	for _, c := range cs {
		if _, dup := byName[c.Name]; dup {
			t.Errorf("%s listed twice", c.Name)
		}
		byName[c.Name] = c
		if !strings.HasPrefix(c.Name, "MPI_") {
			t.Errorf("%s: not an MPI_ name", c.Name)
		}
		if c.Comm < 1 || c.Comm > 12 {
			t.Errorf("%s: communicator argument %d out of 1..12", c.Name, c.Comm)
		}
		if _, err := CollCookie(0, c.Comm, 0, 0, false, 0); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
		if !c.Nonblocking {
			blocking++
		}
	}
	if blocking*2 != len(cs) {
		t.Errorf("%d blocking collectives of %d, want half", blocking, len(cs))
	}
	for i, c := range cs {
		if !c.Nonblocking {
			continue
		}
		// MPI_Iallreduce pairs with MPI_Allreduce.
		rest, ok := strings.CutPrefix(c.Name, "MPI_I")
		if !ok || rest == "" {
			t.Errorf("nonblocking %s does not start with MPI_I", c.Name)
			continue
		}
		if rest[:1] != strings.ToLower(rest[:1]) {
			t.Errorf("nonblocking %s: the letter after MPI_I is not lower case", c.Name)
		}
		b, ok := byName["MPI_"+strings.ToUpper(rest[:1])+rest[1:]]
		if !ok || b.Nonblocking {
			t.Errorf("nonblocking %s has no blocking counterpart", c.Name)
			continue
		}
		if b.Comm != c.Comm {
			t.Errorf("%s takes its communicator as argument %d, %s as %d", c.Name, c.Comm, b.Name, b.Comm)
		}
		if i == 0 || cs[i-1] != b {
			t.Errorf("%s does not follow %s", c.Name, b.Name)
		}
		if _, err := CollCookie(i, c.Comm, 15, c.Comm+1, true, 0); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
	cs[0].Name = "changed"
	if Collectives()[0].Name == "changed" {
		t.Errorf("Collectives returns the package's table, not a copy")
	}
}

// mpiHeader returns the path of an MPI header, or "" when it is not
// installed.
func mpiHeader(dirs []string, name string) string {
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// openMPIHeader finds Open MPI's mpi.h, asking its mpicc first.
func openMPIHeader() string {
	var dirs []string
	if out, err := exec.Command("mpicc.openmpi", "--showme:incdirs").Output(); err == nil {
		dirs = strings.Fields(string(out))
	}
	dirs = append(dirs, "/usr/lib/x86_64-linux-gnu/openmpi/include")
	return mpiHeader(dirs, "mpi.h")
}

var commentRE = regexp.MustCompile(`(?s)/\*.*?\*/|//[^\n]*`)

// prototype returns the parameter types of `int name(...)` in a header:
// spaces normalized, the parameter name dropped ("MPI_Request*",
// "MPI_Request[]", "const void*").
func prototype(header, name string) ([]string, bool) {
	re := regexp.MustCompile(`\bint\s+` + regexp.QuoteMeta(name) + `\s*\(([^)]*)\)`)
	m := re.FindStringSubmatch(header)
	if m == nil {
		return nil, false
	}
	var types []string
	for _, p := range strings.Split(m[1], ",") {
		types = append(types, paramType(p))
	}
	return types, true
}

var paramRE = regexp.MustCompile(`^(.*?)\b([A-Za-z_][A-Za-z0-9_]*)\s*(\[\s*\])?$`)

func paramType(p string) string {
	p = strings.Join(strings.Fields(p), " ")
	m := paramRE.FindStringSubmatch(p)
	if m == nil || strings.TrimSpace(m[1]) == "" {
		return p // no parameter name
	}
	typ := strings.TrimSpace(m[1])
	if m[3] != "" {
		typ += "[]"
	}
	typ = strings.ReplaceAll(typ, " *", "*")
	return strings.ReplaceAll(typ, " [", "[")
}

func TestParamType(t *testing.T) {
	tests := []struct{ in, want string }{
		{"MPI_Comm comm", "MPI_Comm"},
		{" MPI_Request *request", "MPI_Request*"},
		{"MPI_Request  array_of_requests[]", "MPI_Request[]"},
		{"const void *sendbuf", "const void*"},
		{"const int recvcounts[ ]", "const int[]"},
		{"\n      MPI_Datatype datatype", "MPI_Datatype"},
		{"MPI_Comm", "MPI_Comm"},
		{"void", "void"},
	}
	for _, tt := range tests {
		if got := paramType(tt.in); got != tt.want {
			t.Errorf("paramType(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	h := "int MPI_Ibarrier_x(int);\nOMPI_DECLSPEC  int MPI_Ibarrier(MPI_Comm comm, /* the comm */\n   MPI_Request *request);\nint PMPI_Ibarrier(int);"
	got, ok := prototype(commentRE.ReplaceAllString(h, " "), "MPI_Ibarrier")
	if want := []string{"MPI_Comm", "MPI_Request*"}; !ok || !slices.Equal(got, want) {
		t.Errorf("prototype(MPI_Ibarrier) = %q, %v, want %q", got, ok, want)
	}
	if got, ok := prototype(h, "MPI_Barrier"); ok {
		t.Errorf("prototype(MPI_Barrier) of a header without it = %q", got)
	}
}

// TestCollectivesMatchHeaders checks each collective's communicator
// argument, and the request argument CollAttacher derives from it, against
// the prototypes in the installed MPI headers, and the completion calls'
// request and count arguments.
func TestCollectivesMatchHeaders(t *testing.T) {
	headers := []struct{ impl, path string }{
		{"Open MPI", openMPIHeader()},
		{"MPICH", mpiHeader([]string{"/usr/include/x86_64-linux-gnu/mpich"}, "mpi_proto.h")},
	}
	for _, h := range headers {
		t.Run(h.impl, func(t *testing.T) {
			if h.path == "" {
				mpitest.Require(t, h.impl+" headers (libopenmpi-dev / libmpich-dev): MPI header not found")
				return
			}
			b, err := os.ReadFile(h.path)
			if err != nil {
				t.Fatal(err)
			}
			src := commentRE.ReplaceAllString(string(b), " ")
			for _, c := range Collectives() {
				params, ok := prototype(src, c.Name)
				if !ok {
					t.Errorf("%s: no prototype of %s", h.path, c.Name)
					continue
				}
				if len(params) > 12 {
					t.Errorf("%s has %d parameters: BPF reads at most 12", c.Name, len(params))
				}
				var comms []int
				for i, p := range params {
					if p == "MPI_Comm" {
						comms = append(comms, i+1)
					}
				}
				if len(comms) != 1 {
					t.Errorf("%s(%s): MPI_Comm parameters at %v, want exactly one", c.Name, strings.Join(params, ", "), comms)
					continue
				}
				if comms[0] != c.Comm {
					t.Errorf("%s: communicator is argument %d in %s, the table says %d", c.Name, comms[0], filepath.Base(h.path), c.Comm)
				}
				hasReq := slices.Contains(params, "MPI_Request*")
				switch {
				case c.Nonblocking && (c.Comm >= len(params) || params[c.Comm] != "MPI_Request*"):
					t.Errorf("%s(%s): argument %d (Comm+1) is not the MPI_Request*", c.Name, strings.Join(params, ", "), c.Comm+1)
				case !c.Nonblocking && hasReq:
					t.Errorf("blocking %s(%s) takes a request", c.Name, strings.Join(params, ", "))
				}
			}
			for _, c := range completions {
				params, ok := prototype(src, c.name)
				if !ok {
					t.Errorf("%s: no prototype of %s", h.path, c.name)
					continue
				}
				if c.reqArg > len(params) || (params[c.reqArg-1] != "MPI_Request*" && params[c.reqArg-1] != "MPI_Request[]") {
					t.Errorf("%s(%s): argument %d is not the request (array)", c.name, strings.Join(params, ", "), c.reqArg)
				}
				if c.cntArg != 0 && (c.cntArg > len(params) || params[c.cntArg-1] != "int") {
					t.Errorf("%s(%s): argument %d is not the count", c.name, strings.Join(params, ", "), c.cntArg)
				}
				if c.cntArg == 0 && slices.Contains(params, "MPI_Request[]") {
					t.Errorf("%s(%s) takes a request array but no count argument is set", c.name, strings.Join(params, ", "))
				}
			}
		})
	}
}

// readelfBuildID returns the build id `readelf -n` prints for a file.
func readelfBuildID(t *testing.T, path string) string {
	t.Helper()
	if _, err := exec.LookPath("readelf"); err != nil {
		mpitest.Require(t, "readelf (binutils)")
	}
	cmd := exec.Command("readelf", "-n", path)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("readelf -n %s: %v", path, err)
	}
	m := regexp.MustCompile(`Build ID:\s*([0-9a-f]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("readelf -n %s printed no build id:\n%s", path, out)
	}
	return string(m[1])
}

func TestBuildIDOfRealLibraries(t *testing.T) {
	libs := []struct {
		path string
		kind CommLayoutKind
	}{
		{"/usr/lib/x86_64-linux-gnu/libmpi.so.40", LayoutOMPI},
		{"/usr/lib/x86_64-linux-gnu/libmpich.so.12", LayoutMPICH},
	}
	for _, l := range libs {
		t.Run(filepath.Base(l.path), func(t *testing.T) {
			if _, err := os.Stat(l.path); err != nil {
				mpitest.Require(t, err.Error())
				return
			}
			want := readelfBuildID(t, l.path)
			f, err := elf.Open(l.path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := BuildID(f)
			if err != nil {
				t.Fatalf("BuildID: %v", err)
			}
			if got != want {
				t.Errorf("BuildID = %s, readelf says %s", got, want)
			}
			layout, ok := CommLayoutOf(got)
			if !ok {
				t.Fatalf("build %s of %s is not in the layout table (a new Debian package?)", got, l.path)
			}
			if layout.Kind != l.kind {
				t.Errorf("layout of %s has kind %d, want %d", l.path, layout.Kind, l.kind)
			}
			checkLayoutAddresses(t, f, layout)
		})
	}
}

// checkLayoutAddresses checks a layout's addresses against the library:
// Open MPI's class is the exported ompi_communicator_t_class; MPICH's
// object tables lie in its writable data, the builtin table right after
// the direct one.
func checkLayoutAddresses(t *testing.T, f *elf.File, l CommLayout) {
	t.Helper()
	switch l.Kind {
	case LayoutOMPI:
		syms, err := f.DynamicSymbols()
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(syms, func(s elf.Symbol) bool { return s.Name == "ompi_communicator_t_class" })
		if i < 0 {
			t.Fatalf("no dynamic symbol ompi_communicator_t_class")
		}
		if syms[i].Value != l.ClassAddr {
			t.Errorf("ClassAddr = %#x, ompi_communicator_t_class is at %#x", l.ClassAddr, syms[i].Value)
		}
	case LayoutMPICH:
		var lo, hi uint64
		for _, name := range []string{".data", ".bss"} {
			s := f.Section(name)
			if s == nil {
				t.Fatalf("no %s section", name)
			}
			if lo == 0 || s.Addr < lo {
				lo = s.Addr
			}
			hi = max(hi, s.Addr+s.Size)
		}
		obj := uint64(l.ObjSize)
		for _, r := range []struct {
			name       string
			start, end uint64
		}{
			{"MPIR_Comm_direct", l.Direct, l.Direct + uint64(l.DirectCount)*obj},
			{"MPIR_Comm_builtin", l.Builtin, l.Builtin + 3*obj},
			{"MPIR_Comm_mem block array pointer", l.Mem + uint64(l.IndBlocksOff), l.Mem + uint64(l.IndBlocksOff) + 8},
		} {
			if r.start < lo || r.end > hi {
				t.Errorf("%s [%#x, %#x) is outside .data and .bss [%#x, %#x)", r.name, r.start, r.end, lo, hi)
			}
		}
		if l.Direct+uint64(l.DirectCount)*obj != l.Builtin {
			t.Errorf("MPIR_Comm_direct[%d] ends at %#x, MPIR_Comm_builtin starts at %#x", l.DirectCount,
				l.Direct+uint64(l.DirectCount)*obj, l.Builtin)
		}
	}
}

func TestCommLayoutOf(t *testing.T) {
	tests := []struct {
		build string
		kind  CommLayoutKind
	}{
		{"2a2f4d8c4f8dc5dcc63f6789a50f3ab49f61e168", LayoutOMPI},
		{"15ff29242f0f6336eb8096d953e03de259b65bb4", LayoutMPICH},
	}
	for _, tt := range tests {
		l, ok := CommLayoutOf(tt.build)
		if !ok {
			t.Errorf("CommLayoutOf(%s): not found", tt.build)
			continue
		}
		if l.Kind != tt.kind {
			t.Errorf("CommLayoutOf(%s).Kind = %d, want %d", tt.build, l.Kind, tt.kind)
		}
		if l.CIDMask == 0 || l.CIDOff == l.RankOff {
			t.Errorf("CommLayoutOf(%s) = %+v: context id and rank not set", tt.build, l)
		}
		switch l.Kind {
		case LayoutOMPI:
			if l.ClassAddr == 0 || l.GroupOff == 0 {
				t.Errorf("Open MPI layout %+v lacks its class or group", l)
			}
		case LayoutMPICH:
			// An MPICH handle's index is its low 26 bits: indirect ones
			// split them into block and index.
			if l.IndIndexMask != 1<<l.IndShift-1 {
				t.Errorf("IndIndexMask %#x, want the %d bits below IndShift", l.IndIndexMask, l.IndShift)
			}
			if got := l.IndBlockMask<<l.IndShift | l.IndIndexMask; got != 0x03ffffff {
				t.Errorf("block and index masks cover %#x, want 0x03ffffff", got)
			}
			if l.ObjSize == 0 || l.DirectCount == 0 || l.ObjSize%8 != 0 {
				t.Errorf("MPICH layout %+v: object size %#x or direct count %d", l, l.ObjSize, l.DirectCount)
			}
		}
	}
	for _, id := range []string{"", "deadbeef", "2A2F4D8C4F8DC5DCC63F6789A50F3AB49F61E168", "2a2f4d8c4f8dc5dcc63f6789a50f3ab49f61e16"} {
		if l, ok := CommLayoutOf(id); ok {
			t.Errorf("CommLayoutOf(%q) = %+v, true, want false", id, l)
		}
	}
}

// note encodes one ELF note; the name gets its NUL, name and desc are
// padded to 4 bytes.
func note(bo binary.AppendByteOrder, name string, typ uint32, desc []byte) []byte {
	n := []byte(name)
	if name != "" {
		n = append(n, 0)
	}
	return rawNote(bo, n, typ, desc)
}

// rawNote encodes a note whose name is given byte for byte.
func rawNote(bo binary.AppendByteOrder, name []byte, typ uint32, desc []byte) []byte {
	b := bo.AppendUint32(nil, uint32(len(name)))
	b = bo.AppendUint32(b, uint32(len(desc)))
	b = bo.AppendUint32(b, typ)
	b = append(b, name...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	b = append(b, desc...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

const (
	ntGNUABITag  = 1
	ntGNUBuildID = 3
	ntGoBuildID  = 4
)

func TestFindBuildID(t *testing.T) {
	le, be := binary.LittleEndian, binary.BigEndian
	id := []byte{0x2a, 0x2f, 0x4d, 0x8c, 0x4f, 0x8d, 0xc5, 0xdc, 0xc6, 0x3f, 0x67, 0x89, 0xa5, 0x0f, 0x3a, 0xb4, 0x9f, 0x61, 0xe1, 0x68}
	const idHex = "2a2f4d8c4f8dc5dcc63f6789a50f3ab49f61e168"
	good := note(le, "GNU", ntGNUBuildID, id)
	abiTag := note(le, "GNU", ntGNUABITag, []byte{0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0})
	tests := []struct {
		name   string
		data   []byte
		bo     binary.ByteOrder
		want   string
		wantOK bool
	}{
		{"build id", good, le, idHex, true},
		{"after an ABI tag", append(bytes.Clone(abiTag), good...), le, idHex, true},
		{"after a Go build id", append(note(le, "Go", ntGoBuildID, []byte("abc/def")), good...), le, idHex, true},
		{"odd-sized id (padding)", note(le, "GNU", ntGNUBuildID, []byte{1, 2, 3, 4, 5}), le, "0102030405", true},
		{"name without NUL", rawNote(le, []byte("GNU"), ntGNUBuildID, id), le, idHex, true},
		{"big endian", note(be, "GNU", ntGNUBuildID, id), be, idHex, true},
		{"big endian read as little", note(be, "GNU", ntGNUBuildID, id), le, "", false},
		{"ABI tag only: wrong type", abiTag, le, "", false},
		{"wrong type", note(le, "GNU", ntGoBuildID, id), le, "", false},
		{"wrong name", note(le, "Go", ntGNUBuildID, id), le, "", false},
		{"longer name", note(le, "GNUX", ntGNUBuildID, id), le, "", false},
		{"empty name", note(le, "", ntGNUBuildID, id), le, "", false},
		{"empty id", note(le, "GNU", ntGNUBuildID, nil), le, "", false},
		{"truncated id", good[:len(good)-1], le, "", false},
		{"truncated name", good[:14], le, "", false},
		{"header only", good[:12], le, "", false},
		{"truncated header", good[:11], le, "", false},
		{"empty", nil, le, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := findBuildID(tt.data, tt.bo)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("findBuildID(% x) = %q, %v, want %q, %v", tt.data, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// elfWithNotes builds a small ELF64 shared object holding notes in an
// SHT_NOTE section (if sec is not nil) and in a PT_NOTE segment (if seg is
// not nil).
func elfWithNotes(t *testing.T, sec, seg []byte) *elf.File {
	t.Helper()
	le := binary.LittleEndian
	const ehsize, phsize, shsize = 64, 56, 64
	var phnum uint16
	if seg != nil {
		phnum = 1
	}
	data := bytes.Repeat([]byte{0}, ehsize+int(phnum)*phsize)
	secOff := uint64(len(data))
	data = append(data, sec...)
	segOff := uint64(len(data))
	data = append(data, seg...)
	shstrOff := uint64(len(data))
	shstr := []byte("\x00.note.test\x00.shstrtab\x00")
	data = append(data, shstr...)
	for len(data)%8 != 0 {
		data = append(data, 0)
	}
	shoff := uint64(len(data))

	var sh bytes.Buffer
	sections := []elf.Section64{{}}
	if sec != nil {
		sections = append(sections, elf.Section64{Name: 1, Type: uint32(elf.SHT_NOTE), Flags: uint64(elf.SHF_ALLOC),
			Off: secOff, Size: uint64(len(sec)), Addralign: 4})
	}
	sections = append(sections, elf.Section64{Name: 12, Type: uint32(elf.SHT_STRTAB), Off: shstrOff, Size: uint64(len(shstr)), Addralign: 1})
	for _, s := range sections {
		if err := binary.Write(&sh, le, s); err != nil {
			t.Fatal(err)
		}
	}
	data = append(data, sh.Bytes()...)

	hdr := elf.Header64{
		Type: uint16(elf.ET_DYN), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Shoff: shoff, Ehsize: ehsize, Phentsize: phsize, Phnum: phnum, Shentsize: shsize,
		Shnum: uint16(len(sections)), Shstrndx: uint16(len(sections) - 1),
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	if seg != nil {
		hdr.Phoff = ehsize
	}
	var head bytes.Buffer
	if err := binary.Write(&head, le, hdr); err != nil {
		t.Fatal(err)
	}
	if seg != nil {
		ph := elf.Prog64{Type: uint32(elf.PT_NOTE), Flags: uint32(elf.PF_R), Off: segOff, Vaddr: segOff, Paddr: segOff,
			Filesz: uint64(len(seg)), Memsz: uint64(len(seg)), Align: 4}
		if err := binary.Write(&head, le, ph); err != nil {
			t.Fatal(err)
		}
	}
	copy(data, head.Bytes())

	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the test's ELF file does not parse: %v", err)
	}
	return f
}

func TestBuildIDOfSyntheticFiles(t *testing.T) {
	le := binary.LittleEndian
	id := []byte{0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04}
	gnu := note(le, "GNU", ntGNUBuildID, id)
	other := note(le, "Go", ntGoBuildID, []byte("go-build-id"))
	tests := []struct {
		name     string
		sec, seg []byte
		want     string
	}{
		{"in a note section", gnu, nil, "deadbeef01020304"},
		{"in a PT_NOTE segment only", nil, gnu, "deadbeef01020304"},
		{"section without it, segment with it", other, gnu, "deadbeef01020304"},
		{"no note at all", nil, nil, ""},
		{"other notes only", other, other, ""},
		{"truncated note", gnu[:len(gnu)-4], nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := elfWithNotes(t, tt.sec, tt.seg)
			got, err := BuildID(f)
			switch {
			case tt.want == "" && err == nil:
				t.Errorf("BuildID = %q, want an error", got)
			case tt.want != "" && err != nil:
				t.Errorf("BuildID: %v, want %s", err, tt.want)
			case got != tt.want:
				t.Errorf("BuildID = %q, want %q", got, tt.want)
			}
		})
	}
}

// Corrupt note sizes near 4 GiB must not wrap around and panic.
func TestFindBuildIDHugeSizes(t *testing.T) {
	for _, sizes := range [][2]uint32{{0xfffffffd, 0}, {4, 0xfffffffe}, {0xffffffff, 0xffffffff}} {
		b := make([]byte, 12, 24)
		binary.LittleEndian.PutUint32(b, sizes[0])
		binary.LittleEndian.PutUint32(b[4:], sizes[1])
		binary.LittleEndian.PutUint32(b[8:], 3)
		b = append(b, "GNU\x00abcd"...)
		if id, ok := findBuildID(b, binary.LittleEndian); ok {
			t.Errorf("sizes %#x: found %q in a corrupt note", sizes, id)
		}
	}
}

// FuzzFindBuildID: any note bytes give an id or nothing, never a panic.
func FuzzFindBuildID(f *testing.F) {
	f.Add([]byte("\x04\x00\x00\x00\x04\x00\x00\x00\x03\x00\x00\x00GNU\x00abcd"))
	f.Add([]byte("\xfd\xff\xff\xff\x00\x00\x00\x00\x03\x00\x00\x00GNU\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if id, ok := findBuildID(b, binary.LittleEndian); ok && id == "" {
			t.Error("ok with an empty id")
		}
	})
}
