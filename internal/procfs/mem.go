package procfs

import (
	"encoding/binary"
	"fmt"
	"os"
)

// Memory reads a process's memory at a runtime address into p, whole or
// not at all. It is the one reader type of the module: the unwinder, the
// layout inference and the decoders of MPI objects all take one, so that
// a test can hand them a byte slice and a live run /proc/PID/mem.
type Memory func(addr uint64, p []byte) error

// U32 reads a little-endian 32-bit word at addr.
func (m Memory) U32(addr uint64) (uint32, bool) {
	var b [4]byte
	if m(addr, b[:]) != nil {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b[:]), true
}

// U64 reads a little-endian 64-bit word at addr.
func (m Memory) U64(addr uint64) (uint64, bool) {
	var b [8]byte
	if m(addr, b[:]) != nil {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[:]), true
}

// maxAddr bounds the addresses Mem reads: user space on x86-64 and arm64
// ends far below it, and pread's offset is signed.
const maxAddr = 1 << 62

// Mem is an open /proc/PID/mem: the only place the module opens one.
type Mem struct {
	f *os.File
}

// OpenMem opens the memory of process pid. Reading another process's
// memory needs ptrace access to it (root, or CAP_SYS_PTRACE).
func (f FS) OpenMem(pid int) (*Mem, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("open the memory of pid %d: invalid pid", pid)
	}
	file, err := os.Open(f.pidPath(pid, "mem"))
	if err != nil {
		return nil, fmt.Errorf("open the memory of pid %d: %w", pid, err)
	}
	return &Mem{f: file}, nil
}

// Read reads len(p) bytes at addr; a short read is an error.
func (m *Mem) Read(addr uint64, p []byte) error {
	if addr > maxAddr {
		return fmt.Errorf("address %#x out of range", addr)
	}
	n, err := m.f.ReadAt(p, int64(addr))
	if n == len(p) {
		return nil
	}
	if err == nil {
		err = fmt.Errorf("short read at %#x", addr)
	}
	return err
}

// Memory returns m's reader.
func (m *Mem) Memory() Memory { return m.Read }

// Close closes the memory file.
func (m *Mem) Close() error { return m.f.Close() }

// Mount is the procfs mount point f reads: Root, or DefaultRoot.
func (f FS) Mount() string { return f.root() }
