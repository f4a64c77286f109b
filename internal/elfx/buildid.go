package elfx

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// BuildID returns the GNU build id of an ELF file in hex.
func BuildID(f *elf.File) (string, error) {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		data, err := s.Data()
		if err != nil {
			return "", fmt.Errorf("read %s: %w", s.Name, err)
		}
		if id, ok := findBuildID(data, f.ByteOrder); ok {
			return id, nil
		}
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		if p.Filesz > maxNotes {
			continue // not a note segment anyone writes; a corrupt size
		}
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err != nil {
			return "", fmt.Errorf("read PT_NOTE: %w", err)
		}
		if id, ok := findBuildID(data, f.ByteOrder); ok {
			return id, nil
		}
	}
	return "", errors.New("no GNU build id note")
}

// findBuildID scans ELF notes for NT_GNU_BUILD_ID.
func findBuildID(b []byte, bo binary.ByteOrder) (string, bool) {
	for len(b) >= 12 {
		namesz, descsz, typ := bo.Uint32(b), bo.Uint32(b[4:]), bo.Uint32(b[8:])
		b = b[12:]
		nlen, dlen := align4(namesz), align4(descsz)
		if nlen+dlen > uint64(len(b)) {
			return "", false
		}
		name := b[:namesz]
		desc := b[nlen : nlen+uint64(descsz)]
		b = b[nlen+dlen:]
		if typ == 3 && bytes.Equal(bytes.TrimRight(name, "\x00"), []byte("GNU")) && descsz > 0 {
			return hex.EncodeToString(desc), true
		}
	}
	return "", false
}

// align4 rounds a note field size up to 4 bytes, in 64 bits so that a
// corrupt size near 4 GiB cannot wrap to 0.
func align4(n uint32) uint64 { return (uint64(n) + 3) &^ 3 }

// maxNotes bounds the note segment BuildID reads.
const maxNotes = 1 << 20
