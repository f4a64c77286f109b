package procfs

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMem reads a fake /proc/1/mem: whole reads succeed, reads past the end
// or beyond the address bound fail, and U32/U64 decode little-endian.
func TestMem(t *testing.T) {
	root := t.TempDir()
	b := make([]byte, 0x200)
	for i := range b {
		b[i] = byte(i % 251)
	}
	if err := os.Mkdir(filepath.Join(root, "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "1", "mem"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	fs := FS{Root: root}
	m, err := fs.OpenMem(1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got := make([]byte, 16)
	if err := m.Read(0x10, got); err != nil || got[0] != 0x10 || got[15] != 0x1f {
		t.Errorf("Read(0x10) = % x, %v; want 10 .. 1f", got, err)
	}
	for _, addr := range []uint64{0x1f8, 0x200, maxAddr + 1, 1<<63 + 1, ^uint64(0)} {
		if err := m.Read(addr, got); err == nil {
			t.Errorf("Read(%#x, 16 bytes) of a 0x200-byte memory succeeded", addr)
		}
	}
	mem := m.Memory()
	if v, ok := mem.U32(4); !ok || v != 0x07060504 {
		t.Errorf("U32(4) = %#x, %v", v, ok)
	}
	if v, ok := mem.U64(8); !ok || v != 0x0f0e0d0c0b0a0908 {
		t.Errorf("U64(8) = %#x, %v", v, ok)
	}
	if _, ok := mem.U64(0x1fc); ok {
		t.Error("U64 across the end succeeded")
	}
	for _, pid := range []int{0, -1, 2} {
		if _, err := fs.OpenMem(pid); err == nil {
			t.Errorf("OpenMem(%d) succeeded", pid)
		}
	}
	if fs.Mount() != root || (FS{}).Mount() != DefaultRoot {
		t.Errorf("Mount() = %q, %q", fs.Mount(), (FS{}).Mount())
	}
}
