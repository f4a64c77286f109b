package discover

import (
	"slices"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/probes"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		file    string
		want    probes.Library
		wantLib bool
	}{
		// Open MPI 4.x and 5.x: libmpi.so.40.
		{"/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4", probes.OMPILibMPI, true},
		{"/opt/ompi/lib/libmpi.so.40", probes.OMPILibMPI, true},
		{"libmpi.so.40.40.1", probes.OMPILibMPI, true},
		// MPICH: libmpich.so.12, also installed as libmpi.so.12.
		{"/usr/lib/x86_64-linux-gnu/libmpich.so.12.2.2", probes.MPICHLib, true},
		{"libmpich.so.12", probes.MPICHLib, true},
		{"libmpi.so.12", probes.MPICHLib, true},
		{"/usr/lib64/mpich/lib/libmpi.so.12.3.0", probes.MPICHLib, true},
		{"/opt/mpich-4.2.3/lib/libmpi.so.0.0.0", probes.MPICHLib, true}, // built from git: ABI 0:0:0
		// Open MPI's portability layer: .40 up to 4.1, .80 from 5.0.
		{"/usr/lib/x86_64-linux-gnu/libopen-pal.so.40.30.2", probes.OMPIPal, true},
		{"/opt/ompi-5.0.10/lib/libopen-pal.so.80.0.5", probes.OMPIPal, true},
		// Open MPI MCA components are named after themselves.
		{"mca_pml_ob1.so", probes.OMPIPmlOb1, true},
		{"/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so", probes.Library("mca_pml_ob1"), true},
		{"/opt/ompi/lib/openmpi/mca_btl_tcp.so", probes.Library("mca_btl_tcp"), true},
		// Not MPI libraries, or not ones the catalog probes.
		{"/usr/lib/x86_64-linux-gnu/libc.so.6", "", false},
		{"libc.so.6", "", false},
		{"/usr/lib/x86_64-linux-gnu/libmpi.so", "", false},
		{"/usr/lib/x86_64-linux-gnu/libmpi_mpifh.so.40", probes.OMPIFortran, true},
		{"/usr/lib/x86_64-linux-gnu/libmpi_cxx.so.40", "", false},
		{"/usr/lib/x86_64-linux-gnu/libmpi_usempif08.so.40", "", false},
		{"/usr/lib/x86_64-linux-gnu/libmpichfort.so.12", probes.MPICHFortran, true},
		{"/opt/mpich/lib/libmpifort.so.12.4.3", probes.MPICHFortran, true},
		{"/usr/lib/x86_64-linux-gnu/libmpichcxx.so.12", "", false},
		{"/usr/lib/x86_64-linux-gnu/libopen-pal.so.40.30.2", probes.OMPIPal, true},
		{"/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0", probes.IBVerbs, true},
		{"/usr/lib/x86_64-linux-gnu/libopen-rte.so.40", "", false},
		{"/usr/lib/x86_64-linux-gnu/libmca_common_sm.so.40.30.0", "", false},
		{"/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/pmix_mca_pcompress_zlib.so", "", false},
		{"/x/mca_foo.so (weird)", "", false},
		{"/x/mca_foo.so.1", "", false},
		{"/x/mca_foo.sox", "", false},
		{"/opt/mca_dir/libc.so.6", "", false},
		{"/opt/libmpi.so.40/libc.so.6", "", false},
		{"[heap]", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, ok := Classify(tt.file)
			if got != tt.want || ok != tt.wantLib {
				t.Errorf("Classify(%q) = (%q, %v), want (%q, %v)", tt.file, got, ok, tt.want, tt.wantLib)
			}
		})
	}
}

// ompiRankMaps is an excerpt of the /proc/PID/maps of an Open MPI 4.1 rank
// on Debian after MPI_Init (anonymous lines keep the kernel's trailing space).
const ompiRankMaps = `5621f6ba9000-5621f6baa000 r--p 00000000 fe:00 9978235                    /tmp/m
5621f6baa000-5621f6bab000 r-xp 00001000 fe:00 9978235                    /tmp/m
5621f6bab000-5621f6bac000 r--p 00002000 fe:00 9978235                    /tmp/m
5621f6bac000-5621f6bad000 r--p 00002000 fe:00 9978235                    /tmp/m
5621f6bad000-5621f6bae000 rw-p 00003000 fe:00 9978235                    /tmp/m
562221d96000-562221f2b000 rw-p 00000000 00:00 0                          [heap]
7fab6c000000-7fab6c021000 rw-p 00000000 00:00 0 
7fab6c021000-7fab70000000 ---p 00000000 00:00 0 
7fab79800000-7fab79c00000 r--s 00000000 fe:00 9978248                    /tmp/ompi.vm.0/pid.16492/pmix_dstor_ds21_16492/smdataseg-747765761-0
7fab7aca8000-7fab7acac000 r--p 00000000 fe:00 15630568                   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so
7fab7acac000-7fab7acc7000 r-xp 00004000 fe:00 15630568                   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so
7fab7acc7000-7fab7acca000 r--p 0001f000 fe:00 15630568                   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so
7fab7acca000-7fab7accb000 r--p 00022000 fe:00 15630568                   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so
7fab7accb000-7fab7accc000 rw-p 00023000 fe:00 15630568                   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so
7fab7accc000-7fab7ad4d000 rw-p 00000000 00:00 0 
7fab7ad66000-7fab7ad6a000 r--p 00000000 fe:00 15630505                   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_tcp.so
7fab7ad6a000-7fab7ad75000 r-xp 00004000 fe:00 15630505                   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_tcp.so
7fab7ad75000-7fab7ad78000 r--p 0000f000 fe:00 15630505                   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_tcp.so
7fab7ad78000-7fab7ad79000 r--p 00012000 fe:00 15630505                   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_tcp.so
7fab7ad79000-7fab7ad7b000 rw-p 00013000 fe:00 15630505                   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_tcp.so
7fab7b5a0000-7fab7b5a4000 r--p 00000000 fe:00 15630571                   /usr/lib/x86_64-linux-gnu/libmca_common_sm.so.40.30.0
7fab7b5a4000-7fab7b5a8000 r-xp 00004000 fe:00 15630571                   /usr/lib/x86_64-linux-gnu/libmca_common_sm.so.40.30.0
7fab7b82c000-7fab7b84c000 r--p 00000000 fe:00 15630488                   /usr/lib/x86_64-linux-gnu/libopen-pal.so.40.30.2
7fab7b84c000-7fab7b8b4000 r-xp 00020000 fe:00 15630488                   /usr/lib/x86_64-linux-gnu/libopen-pal.so.40.30.2
7fab7b8dd000-7fab7b8e3000 rw-p 00000000 00:00 0 
7fab7b99f000-7fab7b9c5000 r--p 00000000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6
7fab7b9c5000-7fab7bb1b000 r-xp 00026000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6
7fab7bb72000-7fab7bb74000 rw-p 001d3000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6
7fab7bb81000-7fab7bbaa000 r--p 00000000 fe:00 15630478                   /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4
7fab7bbaa000-7fab7bc71000 r-xp 00029000 fe:00 15630478                   /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4
7fab7bc71000-7fab7bc9b000 r--p 000f0000 fe:00 15630478                   /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4
7fab7bc9b000-7fab7bc9d000 r--p 00119000 fe:00 15630478                   /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4
7fab7bc9d000-7fab7bcae000 rw-p 0011b000 fe:00 15630478                   /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4
7fab7bccc000-7fab7bcd0000 r--p 00000000 00:00 0                          [vvar]
7fab7bcd2000-7fab7bcd4000 r-xp 00000000 00:00 0                          [vdso]
7fab7bcd4000-7fab7bcd5000 r--p 00000000 fe:00 325835                     /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
7fab7be00000-7fab7be29000 r--p 00000000 fe:00 15630478                   /lib/x86_64-linux-gnu/libmpi.so.40.30.4
7fab7be29000-7fab7bef0000 r-xp 00029000 fe:00 15630478                   /lib/x86_64-linux-gnu/libmpi.so.40.30.4
7ffe4718d000-7ffe471ae000 rw-p 00000000 00:00 0                          [stack]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
`

// mpichRankMaps is an excerpt of the maps of an MPICH 4.0 rank, with odd
// mappings around it: a library mapped with inode 0, one named by a relative
// path, anonymous memory named after a component, and a memfd.
const mpichRankMaps = `55d0c5a00000-55d0c5a01000 r--p 00000000 fe:00 9978300                    /tmp/ring
55d0c6f1e000-55d0c6f3f000 rw-p 00000000 00:00 0                          [heap]
7f1c20000000-7f1c20200000 rw-s 00000000 00:01 4098                       /memfd:mca_btl_sm.so (deleted)
7f1c20400000-7f1c20600000 rw-p 00000000 00:00 0                          [anon:mca_pml_ob1.so]
7f1c20800000-7f1c20900000 r-xp 00000000 00:00 0                          /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4
7f1c20a00000-7f1c20b00000 r-xp 00000000 fe:00 42                         usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4
7f1c2a0e4000-7f1c2a1c6000 r--p 00000000 fe:00 15631002                   /usr/lib/x86_64-linux-gnu/libmpich.so.12.2.2
7f1c2a1c6000-7f1c2aa5e000 r-xp 000e2000 fe:00 15631002                   /usr/lib/x86_64-linux-gnu/libmpich.so.12.2.2
7f1c2aa5e000-7f1c2b0ef000 r--p 0097a000 fe:00 15631002                   /usr/lib/x86_64-linux-gnu/libmpich.so.12.2.2
7f1c2b0ef000-7f1c2b118000 r--p 0100a000 fe:00 15631002                   /usr/lib/x86_64-linux-gnu/libmpich.so.12.2.2
7f1c2b118000-7f1c2b163000 rw-p 01033000 fe:00 15631002                   /usr/lib/x86_64-linux-gnu/libmpich.so.12.2.2
7f1c2b400000-7f1c2b426000 r--p 00000000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6
`

type mappedWant struct {
	lib     probes.Library
	path    string
	start   uint64
	inode   uint64
	deleted bool
}

func TestDiscover(t *testing.T) {
	tests := []struct {
		name string
		maps string
		want []mappedWant
	}{
		{
			name: "Open MPI rank: one entry per file, first mapping, address order, merged-usr alias dropped",
			maps: ompiRankMaps,
			want: []mappedWant{
				{lib: probes.OMPIPmlOb1, path: "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so", start: 0x7fab7aca8000, inode: 15630568},
				{lib: "mca_btl_tcp", path: "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_tcp.so", start: 0x7fab7ad66000, inode: 15630505},
				{lib: probes.OMPIPal, path: "/usr/lib/x86_64-linux-gnu/libopen-pal.so.40.30.2", start: 0x7fab7b82c000, inode: 15630488},
				{lib: probes.OMPILibMPI, path: "/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4", start: 0x7fab7bb81000, inode: 15630478},
			},
		},
		{
			name: "MPICH rank: inode 0, relative path, memfd and anonymous names ignored",
			maps: mpichRankMaps,
			want: []mappedWant{
				{lib: probes.MPICHLib, path: "/usr/lib/x86_64-linux-gnu/libmpich.so.12.2.2", start: 0x7f1c2a0e4000, inode: 15631002},
			},
		},
		{
			name: "alias at the lower address wins",
			maps: `7f0000000000-7f0000001000 r--p 00000000 fe:00 77                         /lib/x86_64-linux-gnu/libmpi.so.40.30.4
7f0000100000-7f0000101000 r--p 00000000 fe:00 77                         /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4
`,
			want: []mappedWant{{lib: probes.OMPILibMPI, path: "/lib/x86_64-linux-gnu/libmpi.so.40.30.4", start: 0x7f0000000000, inode: 77}},
		},
		{
			name: "same inode on two devices is two files",
			maps: `7f0000000000-7f0000001000 r--p 00000000 fe:00 77                         /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4
7f0000100000-7f0000101000 r--p 00000000 00:3a 77                         /usr/local/lib/libmpi.so.40.30.5
7f0000200000-7f0000201000 r--p 00000000 fe:01 77                         /opt/ompi/lib/libmpi.so.40
`,
			want: []mappedWant{
				{lib: probes.OMPILibMPI, path: "/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4", start: 0x7f0000000000, inode: 77},
				{lib: probes.OMPILibMPI, path: "/usr/local/lib/libmpi.so.40.30.5", start: 0x7f0000100000, inode: 77},
				{lib: probes.OMPILibMPI, path: "/opt/ompi/lib/libmpi.so.40", start: 0x7f0000200000, inode: 77},
			},
		},
		{
			// Upgrading the package unlinks the file the rank runs; it is still
			// reachable (and probeable) through /proc/PID/map_files.
			name: "library deleted after the rank mapped it is still discovered",
			maps: `7f61d8a00000-7f61d8b9e000 r-xp 00026000 fd:01 3146391                    /home/alice/build/libmpi.so.40.30.6 (deleted)
7f61d8c00000-7f61d8c01000 r--p 00000000 fd:01 3146392                    /home/alice/build/libc.so.6 (deleted)
`,
			want: []mappedWant{{lib: probes.OMPILibMPI, path: "/home/alice/build/libmpi.so.40.30.6", start: 0x7f61d8a00000, inode: 3146391, deleted: true}},
		},
		{
			name: "no MPI library",
			maps: `55b76261e000-55b76263f000 rw-p 00000000 00:00 0                          [heap]
7f255e11d000-7f255e273000 r-xp 00026000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6
`,
			want: nil,
		},
		{name: "empty", maps: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maps, err := procfs.ParseMaps([]byte(tt.maps))
			if err != nil {
				t.Fatalf("ParseMaps: %v", err)
			}
			check := func(t *testing.T, maps []procfs.Mapping) {
				t.Helper()
				got := Discover(maps)
				if len(got) != len(tt.want) {
					t.Fatalf("Discover found %d files, want %d:\n%s", len(got), len(tt.want), describe(got))
				}
				for i, w := range tt.want {
					g := got[i]
					if g.Library != w.lib || g.Mapping.Path != w.path || g.Mapping.Start != w.start ||
						g.Mapping.Inode != w.inode || g.Mapping.Deleted != w.deleted {
						t.Errorf("entry %d = %s, want {%s %s start=%#x inode=%d deleted=%v}",
							i, describe(got[i:i+1]), w.lib, w.path, w.start, w.inode, w.deleted)
					}
				}
			}
			check(t, maps)
			t.Run("input in reverse order", func(t *testing.T) {
				rev := slices.Clone(maps)
				slices.Reverse(rev)
				check(t, rev)
			})
			if !slices.Equal(maps, mustParse(t, tt.maps)) {
				t.Error("Discover modified its input")
			}
		})
	}
}

func mustParse(t *testing.T, text string) []procfs.Mapping {
	t.Helper()
	maps, err := procfs.ParseMaps([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return maps
}

func describe(ms []Mapped) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(string(m.Library) + ": " + m.Mapping.String() + "\n")
	}
	return b.String()
}

func TestComponentDirs(t *testing.T) {
	tests := []struct {
		name     string
		libmpi   string
		first    string
		contains []string
	}{
		{
			name:     "Debian",
			libmpi:   "/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4",
			first:    "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3",
			contains: []string{"/usr/lib/x86_64-linux-gnu/openmpi"},
		},
		{
			name:     "Debian, merged-usr alias",
			libmpi:   "/lib/x86_64-linux-gnu/libmpi.so.40",
			first:    "/lib/x86_64-linux-gnu/openmpi/lib/openmpi3",
			contains: []string{"/lib/x86_64-linux-gnu/openmpi"},
		},
		{
			name:     "upstream prefix",
			libmpi:   "/opt/ompi/lib/libmpi.so.40",
			contains: []string{"/opt/ompi/lib/openmpi"},
		},
		{
			name:     "upstream prefix with lib64",
			libmpi:   "/opt/ompi/lib64/libmpi.so.40.30.6",
			contains: []string{"/opt/ompi/lib64/openmpi", "/opt/ompi/lib/openmpi"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ComponentDirs(tt.libmpi)
			if len(got) == 0 {
				t.Fatalf("ComponentDirs(%q) is empty", tt.libmpi)
			}
			if tt.first != "" && got[0] != tt.first {
				t.Errorf("ComponentDirs(%q)[0] = %q, want %q", tt.libmpi, got[0], tt.first)
			}
			for _, want := range tt.contains {
				if !slices.Contains(got, want) {
					t.Errorf("ComponentDirs(%q) = %q, want it to contain %q", tt.libmpi, got, want)
				}
			}
			for _, d := range got {
				if !strings.HasPrefix(d, "/") || strings.Contains(d, "..") || strings.HasSuffix(d, "/") {
					t.Errorf("ComponentDirs(%q) has %q, want clean absolute directories", tt.libmpi, d)
				}
			}
		})
	}
}

func TestComponentFile(t *testing.T) {
	tests := []struct {
		lib    probes.Library
		want   string
		wantOK bool
	}{
		{probes.OMPIPmlOb1, "mca_pml_ob1.so", true},
		{"mca_btl_vader", "mca_btl_vader.so", true},
		{probes.OMPILibMPI, "", false},
		{probes.MPICHLib, "", false},
		{"libmca_common_sm", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Run(string(tt.lib), func(t *testing.T) {
			got, ok := ComponentFile(tt.lib)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("ComponentFile(%q) = (%q, %v), want (%q, %v)", tt.lib, got, ok, tt.want, tt.wantOK)
			}
			if !ok {
				return
			}
			// The file found in a component directory classifies back as the library.
			if back, ok := Classify("/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/" + got); !ok || back != tt.lib {
				t.Errorf("Classify(%q) = (%q, %v), want (%q, true)", got, back, ok, tt.lib)
			}
		})
	}
}

func FuzzDiscover(f *testing.F) {
	f.Add([]byte(ompiRankMaps))
	f.Add([]byte(mpichRankMaps))
	f.Add([]byte("7f0000000000-7f0000001000 r--p 00000000 fe:00 77 /lib/libmpi.so.40\n" +
		"7f0000000000-7f0000001000 r--p 00000000 fe:00 77 /usr/lib/libmpi.so.40\n" +
		"00000000-00000000 ---s 00000000 00:00 0 /x/mca_a.so\n"))
	f.Add([]byte("1-2 r-xp 0 0:0 1 /mca_.so\n3-4 r-xp 0 0:0 1 /a/libmpich.so (deleted)\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		maps, err := procfs.ParseMaps(data)
		if err != nil {
			return
		}
		got := Discover(maps)

		type fileID struct {
			major, minor uint32
			inode        uint64
		}
		// The lowest-addressed classifiable mapping of every file.
		first := map[fileID]procfs.Mapping{}
		for _, m := range maps {
			if m.Inode == 0 || !strings.HasPrefix(m.Path, "/") {
				continue
			}
			if _, ok := Classify(m.Path); !ok {
				continue
			}
			id := fileID{m.Major, m.Minor, m.Inode}
			if prev, ok := first[id]; !ok || m.Start < prev.Start {
				first[id] = m
			}
		}

		seen := map[fileID]bool{}
		for i, e := range got {
			m := e.Mapping
			id := fileID{m.Major, m.Minor, m.Inode}
			if seen[id] {
				t.Fatalf("entry %d: file %d:%d inode %d found twice", i, m.Major, m.Minor, m.Inode)
			}
			seen[id] = true
			lib, ok := Classify(m.Path)
			if !ok || lib != e.Library {
				t.Fatalf("entry %d: Classify(%q) = (%q, %v), but Discover says %q", i, m.Path, lib, ok, e.Library)
			}
			if m.Inode == 0 || !strings.HasPrefix(m.Path, "/") {
				t.Fatalf("entry %d: %s: want an absolute path and an inode", i, m)
			}
			if !slices.Contains(maps, m) {
				t.Fatalf("entry %d: %s is not one of the input mappings", i, m)
			}
			if i > 0 && got[i-1].Mapping.Start > m.Start {
				t.Fatalf("entries %d and %d are not in address order: %#x > %#x", i-1, i, got[i-1].Mapping.Start, m.Start)
			}
			if want := first[id]; want.Start != m.Start {
				t.Fatalf("entry %d: %s is not the file's first mapping (%s)", i, m, want)
			}
		}
		if len(got) != len(first) {
			t.Fatalf("Discover found %d files, want %d", len(got), len(first))
		}
	})
}

// TestCatalogLibrariesDiscoverable: every library the built-in catalogs
// and the startup probes name is one Classify can return for its installed
// file name, so that its probes can ever be attached.
func TestCatalogLibrariesDiscoverable(t *testing.T) {
	want := slices.Concat(probes.Full().Libraries(), probes.DefaultCatalog().Libraries(), probes.StartupLibraries())
	for _, l := range want {
		if !discoverable(l) {
			t.Errorf("library %q is not one Classify can return", l)
		}
	}
}

// discoverable reports whether Classify can name a file as library l.
func discoverable(l probes.Library) bool {
	for _, f := range []string{"libmpi.so.40", "libmpich.so.12", "libopen-pal.so.40", "libibverbs.so.1", "libucp.so.0"} {
		if got, ok := Classify("/usr/lib/x86_64-linux-gnu/" + f); ok && got == l {
			return true
		}
	}
	file, ok := ComponentFile(l)
	if !ok {
		return false
	}
	got, ok := Classify("/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/" + file)
	return ok && got == l
}
