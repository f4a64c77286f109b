package probes

import (
	"slices"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/bpf"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
)

// TestTargetDebugDirs: the configured directories first, then for a file
// found in a process's namespace the system's debug directory inside it.
func TestTargetDebugDirs(t *testing.T) {
	tests := []struct {
		name   string
		target Target
		dirs   []string
		want   []string
	}{
		{"default", Target{}, nil, []string{"/usr/lib/debug"}},
		{"configured", Target{}, []string{"/opt/debug", "/usr/lib/debug"}, []string{"/opt/debug", "/usr/lib/debug"}},
		{"container", Target{Root: "/proc/42/root"}, nil, []string{"/usr/lib/debug", "/proc/42/root/usr/lib/debug"}},
		{"container and configured", Target{Root: "/proc/42/root"}, []string{"/opt/debug"}, []string{"/opt/debug", "/proc/42/root/usr/lib/debug"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.target.DebugDirs(tt.dirs); !slices.Equal(got, tt.want) {
				t.Errorf("debugDirs(%q) = %q, want %q", tt.dirs, got, tt.want)
			}
		})
	}
}

// TestTargetSibling: where the libmpi.so beside a libopen-pal target is
// opened, for a file of the system, of a process, and of a container.
func TestTargetSibling(t *testing.T) {
	for _, tt := range []struct {
		name   string
		target Target
		want   string
	}{
		{"system file", Target{Path: "/opt/ompi/lib/libopen-pal.so.40.20.7", Display: "/opt/ompi/lib/libopen-pal.so.40.20.7"}, "/opt/ompi/lib/libmpi.so.40"},
		{"a process's mapping", Target{Path: "/proc/42/map_files/7f00-7f10", Display: "/opt/ompi/lib/libopen-pal.so.40.20.7"}, "/opt/ompi/lib/libmpi.so.40"},
		{"container", Target{Path: "/proc/42/map_files/7f00-7f10", Display: "/usr/lib/libopen-pal.so.40", Root: "/proc/42/root"}, "/proc/42/root/usr/lib/libmpi.so.40"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.target.Sibling(mpiabi.LibMPIName); got != tt.want {
				t.Errorf("sibling = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestFreeListLayoutOperand checks the cookie packing against the decoding
// of the FL_* macros of bpf/counters.h, and its limits.
func TestFreeListLayoutOperand(t *testing.T) {
	decode := func(op int32) mpiabi.FreeListLayout {
		c, err := cookieParam(0, Condition{Value: op}, 0)
		if err != nil {
			t.Fatal(err)
		}
		fl := func(shift bpf.MpiprobeFreeListLayout) uint32 {
			return uint32(field(c, uint32(bpf.MpiprobeCookieLayoutCOOKIE_OPERAND_SHIFT)+uint32(shift), bpf.MpiprobeFreeListLayoutFL_FIELD_BITS)) * mpiabi.FreeListWord
		}
		return mpiabi.FreeListLayout{
			MaxToAlloc:   fl(bpf.MpiprobeFreeListLayoutFL_MAX_TO_ALLOC_SHIFT),
			NumAllocated: fl(bpf.MpiprobeFreeListLayoutFL_NUM_ALLOCATED_SHIFT),
			FragClass:    fl(bpf.MpiprobeFreeListLayoutFL_FRAG_CLASS_SHIFT),
		}
	}
	for _, l := range []mpiabi.FreeListLayout{
		{MaxToAlloc: 80, NumAllocated: 88, FragClass: 144},
		{MaxToAlloc: 0, NumAllocated: 8, FragClass: 16},
		{MaxToAlloc: mpiabi.MaxFreeListOffset, NumAllocated: mpiabi.MaxFreeListOffset - 8, FragClass: mpiabi.MaxFreeListOffset},
		{MaxToAlloc: 104, NumAllocated: 112, FragClass: 176}, // a debug build's larger objects
	} {
		op, err := l.Operand()
		if err != nil {
			t.Fatalf("%+v: %v", l, err)
		}
		if got := decode(op); got != l {
			t.Errorf("operand(%+v) decodes to %+v", l, got)
		}
	}
	for _, l := range []mpiabi.FreeListLayout{{MaxToAlloc: 81, NumAllocated: 88, FragClass: 144}, {MaxToAlloc: 80, NumAllocated: 88, FragClass: mpiabi.MaxFreeListOffset + 8}} {
		if _, err := l.Operand(); err == nil || !strings.Contains(err.Error(), "want a multiple of 8") {
			t.Errorf("operand(%+v): err %v, want a range error", l, err)
		}
	}
}
