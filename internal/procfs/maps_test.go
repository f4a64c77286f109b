package procfs

import (
	"strings"
	"testing"
)

func TestParseMaps(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Mapping
	}{
		{
			name: "shared library",
			line: "7f255e11d000-7f255e273000 r-xp 00026000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6",
			want: Mapping{Start: 0x7f255e11d000, End: 0x7f255e273000, Perms: "r-xp", Offset: 0x26000, Major: 0xfe, Minor: 0, Inode: 326269, Path: "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		},
		{
			name: "device fd:01",
			line: "7f3a1c200000-7f3a1c3a5000 r-xp 00022000 fd:01 1835082                    /opt/openmpi-4.1.6/lib/libmpi.so.40.30.6",
			want: Mapping{Start: 0x7f3a1c200000, End: 0x7f3a1c3a5000, Perms: "r-xp", Offset: 0x22000, Major: 0xfd, Minor: 1, Inode: 1835082, Path: "/opt/openmpi-4.1.6/lib/libmpi.so.40.30.6"},
		},
		{
			name: "nvme device 103:02 (hex)",
			line: "7f0b2e600000-7f0b2e7c1000 r-xp 00028000 103:02 5243021                   /usr/lib64/mpich/lib/libmpi.so.12.3.0",
			want: Mapping{Start: 0x7f0b2e600000, End: 0x7f0b2e7c1000, Perms: "r-xp", Offset: 0x28000, Major: 0x103, Minor: 2, Inode: 5243021, Path: "/usr/lib64/mpich/lib/libmpi.so.12.3.0"},
		},
		{
			name: "container process on overlayfs",
			line: "7f8e4c012000-7f8e4c0b5000 r-xp 00012000 00:3a 2883604                    /usr/local/lib/libmpi.so.40.30.5",
			want: Mapping{Start: 0x7f8e4c012000, End: 0x7f8e4c0b5000, Perms: "r-xp", Offset: 0x12000, Major: 0, Minor: 0x3a, Inode: 2883604, Path: "/usr/local/lib/libmpi.so.40.30.5"},
		},
		{
			name: "deleted file",
			line: "7f61d8a00000-7f61d8b9e000 r-xp 00026000 fd:01 3146391                    /home/alice/build/libmpi.so.12 (deleted)",
			want: Mapping{Start: 0x7f61d8a00000, End: 0x7f61d8b9e000, Perms: "r-xp", Offset: 0x26000, Major: 0xfd, Minor: 1, Inode: 3146391, Path: "/home/alice/build/libmpi.so.12", Deleted: true},
		},
		{
			name: "memfd, deleted",
			line: "7f61d8000000-7f61d8200000 rw-s 00000000 00:01 4098                       /memfd:cuda-ipc (deleted)",
			want: Mapping{Start: 0x7f61d8000000, End: 0x7f61d8200000, Perms: "rw-s", Major: 0, Minor: 1, Inode: 4098, Path: "/memfd:cuda-ipc", Deleted: true},
		},
		{
			name: "path with spaces",
			line: "7f61d7e00000-7f61d7e21000 r-xp 00001000 fd:01 3146400                    /home/alice/My Libs/lib mpi.so",
			want: Mapping{Start: 0x7f61d7e00000, End: 0x7f61d7e21000, Perms: "r-xp", Offset: 0x1000, Major: 0xfd, Minor: 1, Inode: 3146400, Path: "/home/alice/My Libs/lib mpi.so"},
		},
		{
			name: "heap",
			line: "55b76261e000-55b76263f000 rw-p 00000000 00:00 0                          [heap]",
			want: Mapping{Start: 0x55b76261e000, End: 0x55b76263f000, Perms: "rw-p", Path: "[heap]"},
		},
		{
			name: "vdso",
			line: "7ffd5b9f4000-7ffd5b9f6000 r-xp 00000000 00:00 0                          [vdso]",
			want: Mapping{Start: 0x7ffd5b9f4000, End: 0x7ffd5b9f6000, Perms: "r-xp", Path: "[vdso]"},
		},
		{
			name: "anonymous, with the kernel's trailing space",
			line: "7f255e073000-7f255e095000 rw-p 00000000 00:00 0 ",
			want: Mapping{Start: 0x7f255e073000, End: 0x7f255e095000, Perms: "rw-p"},
		},
		{
			name: "anonymous, trailing space stripped",
			line: "7f255e073000-7f255e095000 rw-p 00000000 00:00 0",
			want: Mapping{Start: 0x7f255e073000, End: 0x7f255e095000, Perms: "rw-p"},
		},
		{
			name: "32-bit layout",
			line: "08048000-08056000 r-xp 00000000 03:0c 64593      /usr/sbin/gpm",
			want: Mapping{Start: 0x08048000, End: 0x08056000, Perms: "r-xp", Major: 3, Minor: 0xc, Inode: 64593, Path: "/usr/sbin/gpm"},
		},
		{
			name: "vsyscall",
			line: "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]",
			want: Mapping{Start: 0xffffffffff600000, End: 0xffffffffff601000, Perms: "--xp", Path: "[vsyscall]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMaps([]byte(tt.line + "\n"))
			if err != nil {
				t.Fatalf("ParseMaps: %v", err)
			}
			if len(got) != 1 || got[0] != tt.want {
				t.Fatalf("ParseMaps:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestMappingStringKernelFormat checks that String reproduces lines exactly
// as a 64-bit kernel prints them.
func TestMappingStringKernelFormat(t *testing.T) {
	lines := []string{
		"55b72cdbe000-55b72cdc0000 r--p 00000000 fe:00 247026                     /usr/bin/cat",
		"55b76261e000-55b76263f000 rw-p 00000000 00:00 0                          [heap]",
		"7f255e073000-7f255e095000 rw-p 00000000 00:00 0 ",
		"7f255e0f0000-7f255e0f1000 r--p 00000000 fe:00 316530                     /usr/lib/locale/C.utf8/LC_MESSAGES/SYS_LC_MESSAGES",
		"7f0b2e600000-7f0b2e7c1000 r-xp 00028000 103:02 5243021                   /usr/lib64/mpich/lib/libmpi.so.12.3.0",
		"7f61d8a00000-7f61d8b9e000 r-xp 00026000 fd:01 3146391                    /home/alice/build/libmpi.so.12 (deleted)",
	}
	for _, line := range lines {
		m, err := ParseMaps([]byte(line))
		if err != nil {
			t.Fatalf("ParseMaps(%q): %v", line, err)
		}
		if got := m[0].String(); got != line {
			t.Errorf("String:\n got %q\nwant %q", got, line)
		}
	}
}

func TestParseMapsMultiple(t *testing.T) {
	data := "55b72cdbe000-55b72cdc0000 r--p 00000000 fe:00 247026                     /usr/bin/cat\n" +
		"55b76261e000-55b76263f000 rw-p 00000000 00:00 0                          [heap]\n" +
		"\n" +
		"7f255e073000-7f255e095000 rw-p 00000000 00:00 0 \n"
	got, err := ParseMaps([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Path != "/usr/bin/cat" || got[1].Path != "[heap]" || got[2].Path != "" {
		t.Fatalf("got %+v", got)
	}
	if got[0].Executable() || !(Mapping{Perms: "r-xp"}).Executable() || (Mapping{}).Executable() {
		t.Fatal("Executable disagrees with Perms")
	}
	if m, err := ParseMaps(nil); err != nil || len(m) != 0 {
		t.Fatalf("ParseMaps(nil) = %v, %v", m, err)
	}
}

func TestParseMapsErrors(t *testing.T) {
	good := "55b72cdbe000-55b72cdc0000 r--p 00000000 fe:00 247026                     /usr/bin/cat\n"
	tests := []struct {
		name, line, want string
	}{
		{"no range", "55b72cdbe000 r--p 00000000 fe:00 1 /x", "bad address range"},
		{"bad start", "zz-55b72cdc0000 r--p 00000000 fe:00 1 /x", "bad start address"},
		{"0x prefix", "0x10-0x20 r--p 00000000 fe:00 1 /x", "bad start address"},
		{"bad end", "10-2g r--p 00000000 fe:00 1 /x", "bad end address"},
		{"overflow", "10-123456789abcdef01 r--p 00000000 fe:00 1 /x", "bad end address"},
		{"start after end", "20-10 r--p 00000000 fe:00 1 /x", "after end"},
		{"bad perms", "10-20 rwz 00000000 fe:00 1 /x", "bad permissions"},
		{"bad offset", "10-20 r--p -1 fe:00 1 /x", "bad offset"},
		{"bad device", "10-20 r--p 00000000 fe00 1 /x", "bad device"},
		{"bad major", "10-20 r--p 00000000 :00 1 /x", "bad device major"},
		{"bad minor", "10-20 r--p 00000000 fe:xy 1 /x", "bad device minor"},
		{"bad inode", "10-20 r--p 00000000 fe:00 ab /x", "bad inode"},
		{"negative inode", "10-20 r--p 00000000 fe:00 -1 /x", "bad inode"},
		{"truncated", "10-20 r--p", "bad offset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseMaps([]byte(good + good + tt.line + "\n" + good))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), "maps line 3: ") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not name line 3 and %q", err, tt.want)
			}
		})
	}
}

func FuzzParseMaps(f *testing.F) {
	f.Add([]byte("55b72cdbe000-55b72cdc0000 r--p 00000000 fe:00 247026                     /usr/bin/cat\n"))
	f.Add([]byte("7f255e073000-7f255e095000 rw-p 00000000 00:00 0 \n55b76261e000-55b76263f000 rw-p 00000000 00:00 0                          [heap]\n"))
	f.Add([]byte("7f61d8a00000-7f61d8b9e000 r-xp 00026000 fd:01 3146391                    /home/a b/libmpi.so.12 (deleted)"))
	f.Add([]byte("7f0b2e600000-7f0b2e7c1000 r-xp 00028000 103:02 5243021                   /x (deleted) (deleted)\n"))
	f.Add([]byte("08048000-08056000 r-xp 00000000 03:0c 64593      /usr/sbin/gpm\n\n"))
	f.Add([]byte("10-20 r--p 0 0:0 0    \t/x\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		maps, err := ParseMaps(data)
		if err != nil {
			return
		}
		for _, m := range maps {
			s := m.String()
			again, err := ParseMaps([]byte(s))
			if err != nil {
				t.Fatalf("re-parse of %q (from %+v): %v", s, m, err)
			}
			if len(again) != 1 || again[0] != m {
				t.Fatalf("round trip of %+v via %q gave %+v", m, s, again)
			}
		}
	})
}
