package probes

import (
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
			got, err := collCookie(tt.coll, tt.commArg, tt.layout, tt.reqArg, tt.intRequests, tt.addr)
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
				got, err := collCookie(tt.coll, tt.commArg, tt.layout, tt.reqArg, ints, tt.addr)
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
			got, err := waitCookie(tt.reqArg, tt.cntArg, tt.intRequests)
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
			got, err := waitCookie(bad.req, bad.cnt, ints)
			if err == nil || got != 0 {
				t.Errorf("WaitCookie(%d, %d, %v) = %#x, %v, want 0 and an error", bad.req, bad.cnt, ints, got, err)
			}
		}
	}
	for _, c := range completions {
		if _, err := waitCookie(c.reqArg, c.cntArg, true); err != nil {
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
		if _, err := collCookie(0, c.Comm, 0, 0, false, 0); err != nil {
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
		if _, err := collCookie(i, c.Comm, 15, c.Comm+1, true, 0); err != nil {
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

// TestCollArgs: the root and count arguments land in their cookie fields
// without touching the others, and out-of-range arguments are refused.
func TestCollArgs(t *testing.T) {
	base, err := collCookie(3, 7, 2, 0, true, 0x1234)
	if err != nil {
		t.Fatal(err)
	}
	got, err := collArgs(base, 6, 3)
	if err != nil {
		t.Fatal(err)
	}
	field := func(c uint64, shift int) int { return int(c >> shift & (1<<bpf.MpiprobeCollCookieCOLL_ARG_BITS - 1)) }
	if r, c := field(got, int(bpf.MpiprobeCollCookieCOLL_ROOT_ARG_SHIFT)), field(got, int(bpf.MpiprobeCollCookieCOLL_COUNT_ARG_SHIFT)); r != 6 || c != 3 {
		t.Errorf("root arg %d, count arg %d; want 6, 3", r, c)
	}
	mask := uint64(1<<bpf.MpiprobeCollCookieCOLL_ARG_BITS-1)<<bpf.MpiprobeCollCookieCOLL_ROOT_ARG_SHIFT |
		uint64(1<<bpf.MpiprobeCollCookieCOLL_ARG_BITS-1)<<bpf.MpiprobeCollCookieCOLL_COUNT_ARG_SHIFT
	if got&^mask != base {
		t.Errorf("collArgs changed other fields: %#x, base %#x", got&^mask, base)
	}
	for _, bad := range [][2]int{{-1, 0}, {maxArg + 1, 0}, {0, maxArg}} {
		if _, err := collArgs(base, bad[0], bad[1]); err == nil {
			t.Errorf("collArgs(root %d, count %d) accepted", bad[0], bad[1])
		}
	}
}

// TestCollectiveArgs: a collective's root, count and the datatype after
// the count come before its communicator.
func TestCollectiveArgs(t *testing.T) {
	for _, c := range Collectives() {
		if c.Root >= c.Comm || (c.Count > 0 && c.Count+1 >= c.Comm) {
			t.Errorf("%s: root %d, count %d (datatype %d) not before the communicator %d", c.Name, c.Root, c.Count, c.Count+1, c.Comm)
		}
	}
}
