package status

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/symbolize"
)

// Objects of the stacks below, as a Debian 12 process maps them.
const (
	libMPI     = "/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4"
	libMPICH   = "/usr/lib/x86_64-linux-gnu/libmpich.so.12.2.2"
	libMPIFH   = "/usr/lib/x86_64-linux-gnu/libmpi_mpifh.so.40.30.3"
	libPML     = "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so"
	libCollTun = "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_coll_tuned.so"
	libOPAL    = "/usr/lib/x86_64-linux-gnu/libopen-pal.so.40.30.2"
	libEvent   = "/usr/lib/x86_64-linux-gnu/libevent_core-2.1.so.7.0.1"
	libPMIx    = "/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so.2.5.2"
	libC       = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	app        = "/tmp/app"
)

// fn is a frame in a named function.
func fn(object, function string, off uint64) symbolize.Site {
	return symbolize.Site{Object: object, Function: function, FuncOffset: off, Offset: 0x1000 + off}
}

// pcsOf numbers the frames' addresses: frame i is at 0x1000*(i+1)+i.
func pcsOf(n int) []uint64 {
	pcs := make([]uint64, n)
	for i := range pcs {
		pcs[i] = 0x1000*uint64(i+1) + uint64(i)
	}
	return pcs
}

func TestFindCall(t *testing.T) {
	mainAt := symbolize.Site{Object: app, Function: "main", FuncOffset: 0x1e4, Offset: 0x1339, File: "/src/hang.c", Line: 32}
	tests := []struct {
		name   string
		frames []symbolize.Site
		pcs    []uint64 // nil: pcsOf(len(frames))
		want   inMPI
	}{
		{
			name: "Open MPI barrier: PMPI_Barrier above the coll and pml internals",
			frames: []symbolize.Site{
				fn(libC, "__poll", 0x4f),
				fn(libOPAL, "opal_progress", 0x34),
				fn(libPML, "mca_pml_ob1_recv", 0x2d5),
				fn(libMPI, "ompi_coll_base_barrier_intra_recursivedoubling", 0x1a0),
				fn(libCollTun, "ompi_coll_tuned_barrier_intra_dec_fixed", 0x4c),
				fn(libMPI, "PMPI_Barrier", 0x5d),
				mainAt,
				fn(libC, "__libc_start_call_main", 0x7a),
			},
			want: inMPI{Call: "MPI_Barrier", API: 5, Site: "main+0x1e4 (hang.c:32)", SitePC: 0x7006},
		},
		{
			// MPI_Finalize tail-calls ompi_mpi_finalize: no API frame.
			name: "Open MPI finalize without its API frame",
			frames: []symbolize.Site{
				fn(libC, "usleep", 0x30),
				fn(libMPI, "ompi_mpi_finalize", 0x1b7),
				mainAt,
				fn(libC, "__libc_start_call_main", 0x7a),
			},
			want: inMPI{Call: "MPI_Finalize", API: 1, Site: "main+0x1e4 (hang.c:32)", SitePC: 0x3002},
		},
		{
			name: "Open MPI init without its API frame",
			frames: []symbolize.Site{
				fn(libC, "usleep", 0x30),
				fn(libMPI, "ompi_mpi_init", 0x4a0),
				mainAt,
			},
			want: inMPI{Call: "MPI_Init", API: 1, Site: "main+0x1e4 (hang.c:32)", SitePC: 0x3002},
		},
		{
			// An API frame wins over the implementation below it.
			name: "MPICH finalize with its API frame",
			frames: []symbolize.Site{
				fn(libMPICH, "MPID_Progress_wait", 0x61),
				fn(libMPICH, "MPII_Finalize", 0x90),
				fn(libMPICH, "PMPI_Finalize", 0x22),
				mainAt,
			},
			want: inMPI{Call: "MPI_Finalize", API: 2, Site: "main+0x1e4 (hang.c:32)", SitePC: 0x4003},
		},
		{
			// Open MPI's Fortran binding, symbolized by its real name.
			name: "Open MPI Fortran binding",
			frames: []symbolize.Site{
				fn(libMPI, "PMPI_Barrier", 0x5d),
				fn("/usr/lib/x86_64-linux-gnu/libmpi_mpifh.so.40", "ompi_barrier_f", 0x13),
				mainAt,
			},
			want: inMPI{Call: "MPI_Barrier", API: 1, Site: "main+0x1e4 (hang.c:32)", SitePC: 0x3002},
		},
		{
			// MPICH 4.1 and later: MPI_Waitall jumps to its generated
			// internal_Waitall, which stands for it on the stack.
			name: "MPICH generated binding",
			frames: []symbolize.Site{
				fn("/opt/mpich/lib/libmpi.so.12", "MPIR_Waitall_state", 0x6d),
				fn("/opt/mpich/lib/libmpi.so.12", "MPIR_Waitall", 0x46),
				fn("/opt/mpich/lib/libmpi.so.12", "internal_Waitall", 0x1ac),
				mainAt,
			},
			want: inMPI{Call: "MPI_Waitall", API: 2, Site: "main+0x1e4 (hang.c:32)", SitePC: 0x4003},
		},
		{
			name: "MPICH allreduce",
			frames: []symbolize.Site{
				fn(libMPICH, "MPID_Progress_wait", 0x61),
				fn(libMPICH, "MPIR_Wait_state", 0x11),
				fn(libMPICH, "MPIC_Wait", 0x34),
				fn(libMPICH, "MPIR_Allreduce_intra_recursive_doubling", 0x2d4),
				fn(libMPICH, "MPIR_Allreduce_impl", 0x18),
				fn(libMPICH, "PMPI_Allreduce", 0x2a1),
				mainAt,
			},
			want: inMPI{Call: "MPI_Allreduce", API: 5, Site: "main+0x1e4 (hang.c:32)", SitePC: 0x7006},
		},
		{
			name: "the MPI_ name of a C function",
			frames: []symbolize.Site{
				fn(libMPI, "ompi_request_default_wait", 0x40),
				fn(libMPI, "MPI_Wait", 0x70),
				{Object: app, Offset: 0x1150},
			},
			want: inMPI{Call: "MPI_Wait", API: 1, Site: "app+0x1150", SitePC: 0x3002},
		},
		{
			name: "Fortran binding above PMPI_Barrier: the site is the application frame above the binding",
			frames: []symbolize.Site{
				fn(libPML, "mca_pml_ob1_recv", 0x2d5),
				fn(libMPI, "PMPI_Barrier", 0x5d),
				fn(libMPIFH, "mpi_barrier_", 0x1f),
				{Object: app, Function: "MAIN__", FuncOffset: 0x88, Offset: 0x1288, File: "/src/hang.f90", Line: 12},
				fn(app, "main", 0x22),
			},
			want: inMPI{Call: "MPI_Barrier", API: 2, Site: "MAIN__+0x88 (hang.f90:12)", SitePC: 0x4003},
		},
		{
			name: "outermost of two API frames (a call made from inside another)",
			frames: []symbolize.Site{
				fn(libMPI, "PMPI_Comm_rank", 0x10),
				fn(libMPI, "ompi_errhandler_invoke", 0x30),
				fn(libMPI, "PMPI_Allreduce", 0x99),
				mainAt,
			},
			want: inMPI{Call: "MPI_Allreduce", API: 2, Site: "main+0x1e4 (hang.c:32)", SitePC: 0x4003},
		},
		{
			name: "an uretprobe hid the return address",
			frames: []symbolize.Site{
				fn(libMPI, "ompi_coll_base_barrier_intra_recursivedoubling", 0x1a0),
				fn(libMPI, "PMPI_Barrier", 0x5d),
				{Object: uprobesPage, Offset: 0},
			},
			want: inMPI{Call: "MPI_Barrier", API: 1, SitePC: 0x3002, Hidden: true},
		},
		{
			name: "hidden site without its pc",
			frames: []symbolize.Site{
				fn(libMPI, "PMPI_Barrier", 0x5d),
				{Object: uprobesPage},
			},
			pcs:  []uint64{0x1000},
			want: inMPI{Call: "MPI_Barrier", API: 0, Hidden: true},
		},
		{
			name: "unwinding stopped inside the library: no site",
			frames: []symbolize.Site{
				fn(libMPI, "ompi_coll_base_barrier_intra_recursivedoubling", 0x1a0),
				fn(libMPI, "PMPI_Barrier", 0x5d),
			},
			want: inMPI{Call: "MPI_Barrier", API: 1},
		},
		{
			name: "fewer pcs than frames: site without pc",
			frames: []symbolize.Site{
				fn(libMPI, "PMPI_Send", 0x5d),
				mainAt,
			},
			pcs:  []uint64{0x1000},
			want: inMPI{Call: "MPI_Send", API: 0, Site: "main+0x1e4 (hang.c:32)"},
		},
		{
			name: "libevent progress thread",
			frames: []symbolize.Site{
				fn(libC, "epoll_wait", 0x5e),
				fn(libEvent, "event_base_loop", 0x2f4),
				fn(libOPAL, "progress_engine", 0x26),
				fn(libC, "start_thread", 0x2f2),
				fn(libC, "clone3", 0x2b),
			},
			want: inMPI{API: -1},
		},
		{
			name: "pmix progress thread",
			frames: []symbolize.Site{
				fn(libC, "epoll_wait", 0x5e),
				fn(libEvent, "event_base_loop", 0x2f4),
				fn(libPMIx, "progress_engine", 0x26),
				fn(libC, "start_thread", 0x2f2),
			},
			want: inMPI{API: -1},
		},
		{
			name: "application computing",
			frames: []symbolize.Site{
				fn(app, "compute", 0x40),
				mainAt,
				fn(libC, "__libc_start_call_main", 0x7a),
			},
			want: inMPI{API: -1},
		},
		{
			name: "exported internal functions of libmpi are not calls",
			frames: []symbolize.Site{
				fn(libMPI, "ompi_request_default_wait_all", 0x1c0),
				fn(libMPI, "ompi_comm_nextcid", 0x80),
				fn(libMPI, "", 0),
				mainAt,
			},
			want: inMPI{API: -1},
		},
		{
			name: "internal MPICH functions are not calls",
			frames: []symbolize.Site{
				fn(libMPICH, "MPIR_Wait_impl", 0x30),
				fn(libMPICH, "MPID_Progress_test", 0x10),
				fn(libMPICH, "MPIR_Barrier_impl", 0x20),
			},
			want: inMPI{API: -1},
		},
		{
			name: "MPI names outside an API library are not calls",
			frames: []symbolize.Site{
				fn(libPML, "MPI_Send", 0x10),
				fn(libC, "MPI_Barrier", 0x10),
				mainAt,
			},
			want: inMPI{API: -1},
		},
		{
			name: "an MPI_ function in the application wraps the library's",
			frames: []symbolize.Site{
				fn(libMPI, "PMPI_Barrier", 0x5d),
				fn(app, "MPI_Barrier", 0x14),
				mainAt,
			},
			want: inMPI{Call: "MPI_Barrier", API: 0, Site: "MPI_Barrier+0x14", SitePC: 0x2001},
		},
		{
			name: "empty stack",
			want: inMPI{API: -1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pcs := tt.pcs
			if pcs == nil {
				pcs = pcsOf(len(tt.frames))
			}
			got := findCall(tt.frames, pcs)
			if got != tt.want {
				t.Errorf("findCall = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestAPILibrary(t *testing.T) {
	tests := []struct {
		object string
		want   bool
	}{
		{libMPI, true},
		{libMPICH, true},
		{"/usr/lib/x86_64-linux-gnu/libmpi.so.12.2.2", true},
		{libMPIFH, true},
		{"/usr/lib/x86_64-linux-gnu/libmpichfort.so.12.2.2", true},
		{"/usr/lib/x86_64-linux-gnu/libmpi_usempif08.so.40.30.3", true},
		{"/usr/lib/x86_64-linux-gnu/libmpi_usempi_ignore_tkr.so.40.30.3", true},
		{"/usr/lib/x86_64-linux-gnu/libmpifort.so.12", true},
		{"/usr/lib/x86_64-linux-gnu/libmpicxx.so.12", true},
		{"/usr/lib/x86_64-linux-gnu/libmpi_cxx.so.40", true},
		{libPML, false},
		{libOPAL, false},
		{libEvent, false},
		{libC, false},
		{app, false},
		{uprobesPage, false},
		{"", false},
	}
	for _, tt := range tests {
		if got := apiLibrary(tt.object); got != tt.want {
			t.Errorf("apiLibrary(%q) = %v, want %v", tt.object, got, tt.want)
		}
	}
}

func TestSiteText(t *testing.T) {
	tests := []struct {
		name string
		site symbolize.Site
		want string
	}{
		{"function, file and line", symbolize.Site{Object: app, Function: "main", FuncOffset: 0x1e4, File: "/home/u/src/hang.c", Line: 32}, "main+0x1e4 (hang.c:32)"},
		{"function without line info", symbolize.Site{Object: app, Function: "main", FuncOffset: 0x1e4}, "main+0x1e4"},
		{"function at offset 0", symbolize.Site{Object: app, Function: "worker"}, "worker+0x0"},
		{"file with line 0 is not shown", symbolize.Site{Object: app, Function: "main", FuncOffset: 8, File: "hang.c"}, "main+0x8"},
		{"line without file is not shown", symbolize.Site{Object: app, Function: "main", FuncOffset: 8, Line: 12}, "main+0x8"},
		{"no function: object base and file offset", symbolize.Site{Object: "/opt/bin/solver", Offset: 0x1139}, "solver+0x1139"},
		{"no function, with line", symbolize.Site{Object: "/opt/bin/solver", Offset: 0x1139, File: "/src/solver.f90", Line: 7}, "solver+0x1139 (solver.f90:7)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := siteText(tt.site); got != tt.want {
				t.Errorf("siteText(%+v) = %q, want %q", tt.site, got, tt.want)
			}
		})
	}
}

func TestFrameText(t *testing.T) {
	tests := []struct {
		site symbolize.Site
		want string
	}{
		{symbolize.Site{}, "?"},
		{symbolize.Site{Function: "main", FuncOffset: 4}, "?"},
		{symbolize.Site{Object: libMPI, Function: "PMPI_Barrier", FuncOffset: 0x5d}, "PMPI_Barrier+0x5d in " + libMPI},
		{symbolize.Site{Object: app, Offset: 0x40}, "app+0x40 in " + app},
	}
	for _, tt := range tests {
		if got := frameText(tt.site); got != tt.want {
			t.Errorf("frameText(%+v) = %q, want %q", tt.site, got, tt.want)
		}
	}
}

func TestVoteComm(t *testing.T) {
	const a, b, c, bad = 0x1000, 0x2000, 0x3000, 0x4000
	valid := func(addr uint64) bool { return addr == a || addr == b || addr == c }
	tests := []struct {
		name   string
		words  []uint64
		want   uint64
		wantOK bool
	}{
		{"no words", nil, 0, false},
		{"only zeros", []uint64{0, 0, 0}, 0, false},
		{"only invalid words", []uint64{bad, 7, bad}, 0, false},
		{"one valid word", []uint64{bad, a, 0}, a, true},
		{"majority wins", []uint64{a, b, a, c, a, b}, a, true},
		{"invalid words do not vote", []uint64{a, bad, bad, bad, b, b}, b, true},
		{"zero words do not vote", []uint64{0, 0, 0, a}, a, true},
		{"tie between two", []uint64{a, b, a, b}, 0, false},
		{"tie among three", []uint64{c, b, a}, 0, false},
		{"a tie below the best does not matter", []uint64{a, b, c, c, c, a, b}, c, true},
		{"a later best breaks an earlier tie", []uint64{a, b, c, c, c}, c, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The map order voteComm iterates in is random: repeat.
			for range 20 {
				got, ok := voteComm(tt.words, valid)
				if got != tt.want || ok != tt.wantOK {
					t.Fatalf("voteComm(%#x) = %#x, %v, want %#x, %v", tt.words, got, ok, tt.want, tt.wantOK)
				}
			}
		})
	}
}

// TestVoteCommValidatesOnce checks that each distinct nonzero word is
// checked once, however often it occurs: valid reads the target's memory.
func TestVoteCommValidatesOnce(t *testing.T) {
	calls := map[uint64]int{}
	valid := func(addr uint64) bool {
		calls[addr]++
		return addr%2 == 0
	}
	words := []uint64{2, 3, 2, 0, 3, 4, 2, 0, 5, 3, 4, 2}
	got, ok := voteComm(words, valid)
	if got != 2 || !ok {
		t.Errorf("voteComm = %#x, %v, want 0x2, true", got, ok)
	}
	want := map[uint64]int{2: 1, 3: 1, 4: 1, 5: 1}
	if len(calls) != len(want) {
		t.Errorf("valid called for %v, want %v", calls, want)
	}
	for w, n := range want {
		if calls[w] != n {
			t.Errorf("valid(%#x) called %d times, want %d", w, calls[w], n)
		}
	}
	if calls[0] != 0 {
		t.Errorf("valid(0) called %d times, want never", calls[0])
	}
}

func TestDecodeRegs(t *testing.T) {
	recs := []bpf.MpiprobeTaskRegs{
		{Tgid: 100, Tid: 100, Ip: 0x7f0000001234, Sp: 0x7ffc00001000, Bp: 0x7ffc00001040, Nret: 2,
			RetStack: [8]uint64{0x7ffc00001100, 0x7ffc00001200}, RetOrig: [8]uint64{0x555500001111, 0x555500002222}},
		{Tgid: 100, Tid: 101, Ip: 0x7f0000005678, Sp: 0x7f00dead0000, Bp: 0, Nret: 0},
	}
	var buf bytes.Buffer
	for _, r := range recs {
		if err := binary.Write(&buf, binary.LittleEndian, r); err != nil {
			t.Fatal(err)
		}
	}
	data := buf.Bytes()

	got, err := decodeRegs(data)
	if err != nil {
		t.Fatalf("decodeRegs: %v", err)
	}
	if len(got) != len(recs) {
		t.Fatalf("decodeRegs: %d records, want %d", len(got), len(recs))
	}
	for i := range recs {
		if got[i] != recs[i] {
			t.Errorf("record %d = %+v, want %+v", i, got[i], recs[i])
		}
	}

	t.Run("empty", func(t *testing.T) {
		got, err := decodeRegs(nil)
		if err != nil || len(got) != 0 {
			t.Errorf("decodeRegs(nil) = %v, %v, want no record and no error", got, err)
		}
	})
	for _, n := range []int{len(data) - 1, len(data)/2 + 3, 1} {
		got, err := decodeRegs(data[:n])
		if err == nil {
			t.Errorf("decodeRegs(%d bytes) = %d records, want an error", n, len(got))
		} else if !strings.Contains(err.Error(), "not a whole number") {
			t.Errorf("decodeRegs(%d bytes) error %q, want it to say the size is wrong", n, err)
		}
	}
}

// memFile returns a process whose memory is a file of size bytes, byte i
// holding i%251: (*process).read reads it at offset = address.
func memFile(t *testing.T, size int) *process {
	t.Helper()
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(i % 251)
	}
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "1", "mem"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := procfs.FS{Root: root}.OpenMem(1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return &process{mem: m}
}

func TestProcessRead(t *testing.T) {
	p := memFile(t, 0x200)
	b := make([]byte, 16)
	if err := p.read(0x10, b); err != nil {
		t.Fatalf("read(0x10): %v", err)
	}
	if b[0] != 0x10 || b[15] != 0x1f {
		t.Errorf("read(0x10) = % x, want 10 .. 1f", b)
	}
	for _, addr := range []uint64{0x1f8, 0x200, 1<<63 + 1, ^uint64(0)} {
		if err := p.read(addr, b); err == nil {
			t.Errorf("read(%#x, 16 bytes) of a 0x200-byte memory succeeded", addr)
		}
	}
}

func TestThreadMemory(t *testing.T) {
	p := memFile(t, 0x400)
	const addr, n = 0x100, 0x20 // the read: [0x100, 0x120)
	plain := make([]byte, n)
	if err := p.read(addr, plain); err != nil {
		t.Fatal(err)
	}
	const v = 0x1122334455667788
	le := binary.LittleEndian.AppendUint64(nil, v)

	tests := []struct {
		name    string
		patches []patch
		// changed are the offsets in the read where v's 8 bytes appear.
		changed []int
	}{
		{"no patch", nil, nil},
		{"inside", []patch{{at: 0x108, value: v}}, []int{8}},
		{"at the start", []patch{{at: 0x100, value: v}}, []int{0}},
		{"ending at the end", []patch{{at: 0x118, value: v}}, []int{0x18}},
		{"unaligned inside", []patch{{at: 0x10b, value: v}}, []int{0xb}},
		{"two inside", []patch{{at: 0x100, value: v}, {at: 0x110, value: v}}, []int{0, 0x10}},
		{"before", []patch{{at: 0xf8, value: v}}, nil},
		{"after", []patch{{at: 0x120, value: v}}, nil},
		{"far away", []patch{{at: 0x300, value: v}}, nil},
		{"straddling the start", []patch{{at: 0xfc, value: v}}, nil},
		{"straddling the end", []patch{{at: 0x11c, value: v}}, nil},
		{"one in, one straddling", []patch{{at: 0x11d, value: v}, {at: 0x104, value: v}}, []int{4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := bytes.Clone(plain)
			for _, off := range tt.changed {
				copy(want[off:], le)
			}
			got := make([]byte, n)
			if err := p.threadMemory(tt.patches)(addr, got); err != nil {
				t.Fatalf("read: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("read with patches %+v =\n% x\nwant\n% x", tt.patches, got, want)
			}
		})
	}

	t.Run("read errors pass through", func(t *testing.T) {
		mem := p.threadMemory([]patch{{at: 0x3f8, value: v}})
		if err := mem(0x3f8, make([]byte, 16)); err == nil {
			t.Errorf("read past the end of memory succeeded")
		}
	})
	t.Run("patches do not change memory", func(t *testing.T) {
		_ = p.threadMemory([]patch{{at: 0x100, value: v}})(addr, make([]byte, n))
		got := make([]byte, n)
		if err := p.read(addr, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, plain) {
			t.Errorf("plain read after a patched one = % x, want % x", got, plain)
		}
	})
}

// TestMergeVotes: a tie in one sample is decided by both samples' votes,
// and stays undecided when the sum ties too.
func TestMergeVotes(t *testing.T) {
	const a, b = 0x1000, 0x2000
	tests := []struct {
		name   string
		first  map[uint64]int
		last   map[uint64]int
		want   uint64
		wantOK bool
	}{
		{"tie decided by the other sample", map[uint64]int{a: 1, b: 2}, map[uint64]int{a: 1, b: 1}, b, true},
		{"both tie", map[uint64]int{a: 1, b: 1}, map[uint64]int{a: 2, b: 2}, 0, false},
		{"one sample without votes", nil, map[uint64]int{a: 3}, a, true},
		{"no votes", nil, nil, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := bestVote(mergeVotes(tc.first, tc.last))
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("bestVote(mergeVotes) = %#x, %v; want %#x, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
