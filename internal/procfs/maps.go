package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// deletedSuffix is what the kernel appends to the path of an unlinked file.
const deletedSuffix = " (deleted)"

// pathColumn is the column at which the kernel starts the path of a mapping
// on 64-bit systems: the header is padded to 25+6*8-1 = 72 characters and is
// followed by one more space.
const pathColumn = 25 + 6*8 - 1

// Mapping is one line of /proc/PID/maps: a virtual memory area of a process.
type Mapping struct {
	// Start is the first address of the area.
	Start uint64
	// End is the address just past the area.
	End uint64
	// Offset is the offset of the area in the mapped file.
	Offset uint64
	// Perms is the four-character permission string, e.g. "r-xp".
	Perms string
	// Major is the major device number of the mapped file (hex in the file).
	Major uint32
	// Minor is the minor device number of the mapped file (hex in the file).
	Minor uint32
	// Inode is the inode number of the mapped file, 0 for anonymous memory.
	Inode uint64
	// Path is the mapped file's path as the kernel prints it, a pseudo-path
	// such as "[heap]" or "[vdso]", or "" for anonymous memory. It never
	// carries the " (deleted)" suffix; see Deleted.
	Path string
	// Deleted reports that the kernel marked the file as unlinked
	// (the path ended in " (deleted)").
	Deleted bool
}

// Executable reports whether the area is mapped executable.
func (m Mapping) Executable() bool { return len(m.Perms) > 2 && m.Perms[2] == 'x' }

// String formats m as a line of /proc/PID/maps (without the newline), the
// way a 64-bit kernel does: ParseMaps of the result gives back m.
func (m Mapping) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%08x-%08x %s %08x %02x:%02x %d ",
		m.Start, m.End, m.Perms, m.Offset, m.Major, m.Minor, m.Inode)
	path := m.Path
	if m.Deleted {
		path += deletedSuffix
	}
	if path != "" {
		for b.Len() < pathColumn {
			b.WriteByte(' ')
		}
		b.WriteByte(' ')
		b.WriteString(path)
	}
	return b.String()
}

// ParseMaps parses the text of /proc/PID/maps. Empty lines are skipped.
// A malformed line makes it fail with an error naming the line number.
func ParseMaps(data []byte) ([]Mapping, error) {
	var out []Mapping
	for n := 1; len(data) > 0; n++ {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		if len(line) == 0 {
			continue
		}
		m, err := parseMapsLine(string(line))
		if err != nil {
			return nil, fmt.Errorf("maps line %d: %w", n, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// parseMapsLine parses one line of /proc/PID/maps without its newline.
func parseMapsLine(line string) (Mapping, error) {
	var m Mapping
	rest := line
	field := func() string {
		rest = strings.TrimLeft(rest, " ")
		f, r, _ := strings.Cut(rest, " ")
		rest = r
		return f
	}

	addr := field()
	lo, hi, ok := strings.Cut(addr, "-")
	if !ok {
		return m, fmt.Errorf("bad address range %q", addr)
	}
	var err error
	if m.Start, err = parseHex(lo, 64); err != nil {
		return m, fmt.Errorf("bad start address %q: %w", lo, err)
	}
	if m.End, err = parseHex(hi, 64); err != nil {
		return m, fmt.Errorf("bad end address %q: %w", hi, err)
	}
	if m.Start > m.End {
		return m, fmt.Errorf("start address %#x after end address %#x", m.Start, m.End)
	}

	m.Perms = field()
	if !validPerms(m.Perms) {
		return m, fmt.Errorf("bad permissions %q", m.Perms)
	}

	off := field()
	if m.Offset, err = parseHex(off, 64); err != nil {
		return m, fmt.Errorf("bad offset %q: %w", off, err)
	}

	dev := field()
	maj, min, ok := strings.Cut(dev, ":")
	if !ok {
		return m, fmt.Errorf("bad device %q", dev)
	}
	v, err := parseHex(maj, 32)
	if err != nil {
		return m, fmt.Errorf("bad device major %q: %w", maj, err)
	}
	m.Major = uint32(v)
	if v, err = parseHex(min, 32); err != nil {
		return m, fmt.Errorf("bad device minor %q: %w", min, err)
	}
	m.Minor = uint32(v)

	ino := field()
	if m.Inode, err = parseDecimal(ino); err != nil {
		return m, fmt.Errorf("bad inode %q: %w", ino, err)
	}

	// The rest, after the padding, is the path; it may contain spaces.
	path := strings.TrimLeft(rest, " ")
	if p, ok := strings.CutSuffix(path, deletedSuffix); ok {
		path, m.Deleted = p, true
	}
	m.Path = path
	return m, nil
}

// validPerms reports whether p looks like "rwxp": r or -, w or -, x or -,
// then p (private) or s (shared).
func validPerms(p string) bool {
	return len(p) == 4 &&
		(p[0] == 'r' || p[0] == '-') &&
		(p[1] == 'w' || p[1] == '-') &&
		(p[2] == 'x' || p[2] == '-') &&
		(p[3] == 'p' || p[3] == 's')
}

// parseHex parses unsigned hexadecimal digits only: no sign, no 0x, no '_'.
func parseHex(s string, bits int) (uint64, error) {
	return parseUint(s, 16, bits)
}

// parseDecimal parses unsigned decimal digits only: no sign, no '_'.
func parseDecimal(s string) (uint64, error) {
	return parseUint(s, 10, 64)
}

// parseUint wraps strconv.ParseUint (which takes no sign, and no prefix or
// '_' for a base other than 0) with shorter errors: the callers name the
// offending text themselves.
func parseUint(s string, base, bits int) (uint64, error) {
	if s == "" {
		return 0, errors.New("empty number")
	}
	v, err := strconv.ParseUint(s, base, bits)
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return 0, ne.Err
	}
	return v, err
}
