package elfx

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

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
	for _, path := range []string{
		"/usr/lib/x86_64-linux-gnu/libmpi.so.40",
		"/usr/lib/x86_64-linux-gnu/libmpich.so.12",
		"/usr/lib/x86_64-linux-gnu/libopen-pal.so.40",
	} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			if _, err := os.Stat(path); err != nil {
				mpitest.Require(t, err.Error())
				return
			}
			want := readelfBuildID(t, path)
			f, err := elf.Open(path)
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
		})
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
