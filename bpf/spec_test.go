//go:build (386 || amd64) && linux

package bpf

import (
	"encoding/binary"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// These tests read the embedded object file only: loading a spec needs no
// privileges, so they run without root and without a BPF-capable kernel.

func loadSpec(t *testing.T) *ebpf.CollectionSpec {
	t.Helper()
	spec, err := LoadMpiprobe()
	if err != nil {
		t.Fatalf("LoadMpiprobe: %v", err)
	}
	return spec
}

func TestLoadMpiprobe(t *testing.T) {
	spec := loadSpec(t)
	var specs MpiprobeSpecs
	if err := spec.Assign(&specs); err != nil {
		t.Fatalf("the object file lacks what the generated bindings name: %v", err)
	}
}

func TestPrograms(t *testing.T) {
	spec := loadSpec(t)
	tests := []struct {
		name       string
		typ        ebpf.ProgramType
		attachType ebpf.AttachType
		attachTo   string
	}{
		// Attached as uprobe and uretprobe alike; uprobes are kprobe-type programs.
		{"count_event", ebpf.Kprobe, ebpf.AttachNone, ""},
		{"on_fork", ebpf.Tracing, ebpf.AttachTraceRawTp, "sched_process_fork"},
		{"on_exec", ebpf.Tracing, ebpf.AttachTraceRawTp, "sched_process_exec"},
		{"on_exit", ebpf.Tracing, ebpf.AttachTraceRawTp, "sched_process_exit"},
		{"trace_enter", ebpf.Kprobe, ebpf.AttachNone, ""},
		{"trace_exit", ebpf.Kprobe, ebpf.AttachNone, ""},
		{"trace_fortran_enter", ebpf.Kprobe, ebpf.AttachNone, ""},
		// One link per library: uprobe_multi programs carry their attach type.
		{"trace_enter_multi", ebpf.Kprobe, ebpf.AttachTraceUprobeMulti, ""},
		{"trace_exit_multi", ebpf.Kprobe, ebpf.AttachTraceUprobeMulti, ""},
		{"trace_fortran_enter_multi", ebpf.Kprobe, ebpf.AttachTraceUprobeMulti, ""},
		{"coll_enter", ebpf.Kprobe, ebpf.AttachNone, ""},
		{"coll_exit", ebpf.Kprobe, ebpf.AttachNone, ""},
		{"coll_comm_free", ebpf.Kprobe, ebpf.AttachNone, ""},
		{"coll_enter_multi", ebpf.Kprobe, ebpf.AttachTraceUprobeMulti, ""},
		{"coll_exit_multi", ebpf.Kprobe, ebpf.AttachTraceUprobeMulti, ""},
		{"status_enter", ebpf.Kprobe, ebpf.AttachTraceUprobeMulti, ""},
		{"dump_regs", ebpf.Tracing, ebpf.AttachTraceIter, "task"},
		{"coll_wait_enter", ebpf.Kprobe, ebpf.AttachTraceUprobeMulti, ""},
		{"coll_wait_exit", ebpf.Kprobe, ebpf.AttachTraceUprobeMulti, ""},
		{"coll_wait_enter_single", ebpf.Kprobe, ebpf.AttachNone, ""},
		{"coll_wait_exit_single", ebpf.Kprobe, ebpf.AttachNone, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := spec.Programs[tt.name]
			if !ok {
				t.Fatalf("no program %q; have %v", tt.name, keys(spec.Programs))
			}
			if p.Type != tt.typ {
				t.Errorf("type %v, want %v", p.Type, tt.typ)
			}
			if p.AttachType != tt.attachType {
				t.Errorf("attach type %v, want %v", p.AttachType, tt.attachType)
			}
			if p.AttachTo != tt.attachTo {
				t.Errorf("attaches to %q, want %q", p.AttachTo, tt.attachTo)
			}
			if !strings.HasPrefix(p.License, "Dual BSD/GPL") {
				t.Errorf("license %q: tracing helpers need a GPL-compatible license", p.License)
			}
		})
	}
}

func TestMaps(t *testing.T) {
	spec := loadSpec(t)
	tests := []struct {
		name       string
		typ        ebpf.MapType
		keySize    uint32
		valueSize  uint32
		maxEntries uint32 // 0: not checked
	}{
		{"traced", ebpf.Hash, 4, 4, 0},
		{"counts", ebpf.Hash, 16, 72, 0},
		{"drops", ebpf.PerCPUArray, 4, 8, uint32(MpiprobeDropReasonDROP_MAX)},
		{"proc_events", ebpf.RingBuf, 0, 0, 0},
		{"coll_layouts", ebpf.Array, 4, 72, 1 << MpiprobeCollCookieCOLL_LAYOUT_BITS}, // every layout index a cookie can carry
		{"coll_index", ebpf.Hash, 24, 4, 0},
		{"coll_comms", ebpf.Array, 4, 32, 0},
		{"coll_stats", ebpf.Array, 4, 88, 1 << MpiprobeCollCookieCOLL_INDEX_BITS}, // one slot until the loader resizes it; the last entry's root, count and datatype included
		{"coll_reqs", ebpf.Hash, 16, 16, 0},
		{"coll_pending", ebpf.Array, 4, 8, 1},
		{"coll_free", ebpf.Queue, 0, 4, 0},
		{"coll_gen", ebpf.Array, 4, 8, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := spec.Maps[tt.name]
			if !ok {
				t.Fatalf("no map %q; have %v", tt.name, keys(spec.Maps))
			}
			if m.Type != tt.typ {
				t.Errorf("type %v, want %v", m.Type, tt.typ)
			}
			if m.KeySize != tt.keySize || m.ValueSize != tt.valueSize {
				t.Errorf("key/value size %d/%d, want %d/%d", m.KeySize, m.ValueSize, tt.keySize, tt.valueSize)
			}
			if tt.maxEntries != 0 && m.MaxEntries != tt.maxEntries {
				t.Errorf("max entries %d, want %d", m.MaxEntries, tt.maxEntries)
			}
			if m.MaxEntries == 0 {
				t.Error("max entries 0")
			}
		})
	}
	if rb := spec.Maps["proc_events"]; rb != nil {
		if n := rb.MaxEntries; n&(n-1) != 0 || n%uint32(os.Getpagesize()) != 0 {
			t.Errorf("proc_events: ring buffer size %d must be a power of two and a multiple of the page size", n)
		}
	}
}

// TestIndexEnumsDense checks the enums whose values index an array (the
// drops map, struct startup): dense from 0, with the count last. Go names
// one entry per index, so a gap or a stale count would misname them.
func TestIndexEnumsDense(t *testing.T) {
	spec := loadSpec(t)
	tests := []struct {
		enum, count string
		want        uint64
	}{
		{"drop_reason", "DROP_MAX", uint64(MpiprobeDropReasonDROP_MAX)},
		{"mark", "MARK_MAX", uint64(MpiprobeMarkMARK_MAX)},
	}
	for _, tt := range tests {
		t.Run(tt.enum, func(t *testing.T) {
			var e *btf.Enum
			if err := spec.Types.TypeByName(tt.enum, &e); err != nil {
				t.Fatalf("BTF enum %s: %v", tt.enum, err)
			}
			var n uint64
			count, haveCount := uint64(0), false
			for _, v := range e.Values {
				if v.Name == tt.count {
					count, haveCount = v.Value, true
					continue
				}
				if v.Value != n {
					t.Errorf("%s = %d, want %d (dense from 0)", v.Name, v.Value, n)
				}
				n++
			}
			if !haveCount || count != n {
				t.Errorf("%s = %d, but enum %s has %d values", tt.count, count, tt.enum, n)
			}
			if count != tt.want {
				t.Errorf("%s = %d in the object, %d in the generated Go: run go generate ./bpf", tt.count, count, tt.want)
			}
		})
	}
}

// TestGoTypesMatchBTF checks that the generated Go types have the size and
// field offsets of the C structs, and of the maps' keys and values.
func TestGoTypesMatchBTF(t *testing.T) {
	spec := loadSpec(t)
	tests := []struct {
		cname string
		goVal any
		size  uint32 // map key or value size using it; 0 for the ring buffer record
		ofMap string
	}{
		{"count_key", MpiprobeCountKey{}, spec.Maps["counts"].KeySize, "counts key"},
		{"count_val", MpiprobeCountVal{}, spec.Maps["counts"].ValueSize, "counts value"},
		{"proc_event", MpiprobeProcEvent{}, 24, "proc_events record"},
		{"trace_event", MpiprobeTraceEvent{}, 64, "trace_events record"},
		{"coll_layout", MpiprobeCollLayout{}, spec.Maps["coll_layouts"].ValueSize, "coll_layouts value"},
		{"coll_key", MpiprobeCollKey{}, spec.Maps["coll_index"].KeySize, "coll_index key"},
		{"coll_comm", MpiprobeCollComm{}, spec.Maps["coll_comms"].ValueSize, "coll_comms value"},
		{"coll_stat", MpiprobeCollStat{}, spec.Maps["coll_stats"].ValueSize, "coll_stats value"},
		{"task_regs", MpiprobeTaskRegs{}, 208, "dump_regs record"},
		{"req_key", MpiprobeReqKey{}, spec.Maps["coll_reqs"].KeySize, "coll_reqs key"},
		{"req_val", MpiprobeReqVal{}, spec.Maps["coll_reqs"].ValueSize, "coll_reqs value"},
	}
	for _, tt := range tests {
		t.Run(tt.cname, func(t *testing.T) {
			var st *btf.Struct
			if err := spec.Types.TypeByName(tt.cname, &st); err != nil {
				t.Fatalf("BTF struct %s: %v", tt.cname, err)
			}
			goType := reflect.TypeOf(tt.goVal)
			if got := binary.Size(tt.goVal); got != int(st.Size) {
				t.Errorf("binary.Size(%s) = %d, C struct %s is %d bytes", goType.Name(), got, tt.cname, st.Size)
			}
			if got := goType.Size(); got != uintptr(st.Size) {
				t.Errorf("unsafe.Sizeof(%s) = %d, C struct %s is %d bytes", goType.Name(), got, tt.cname, st.Size)
			}
			if st.Size != tt.size {
				t.Errorf("C struct %s is %d bytes, %s is %d", tt.cname, st.Size, tt.ofMap, tt.size)
			}
			var goFields []string
			for i := range goType.NumField() {
				f := goType.Field(i)
				if f.Name == "_" {
					continue
				}
				goFields = append(goFields, f.Name)
			}
			var cFields []string
			for _, m := range st.Members {
				cFields = append(cFields, camel(m.Name))
				f, ok := goType.FieldByName(camel(m.Name))
				if !ok {
					continue
				}
				if f.Offset != uintptr(m.Offset.Bytes()) {
					t.Errorf("%s.%s at offset %d, C %s.%s at %d", goType.Name(), f.Name, f.Offset, tt.cname, m.Name, m.Offset.Bytes())
				}
				if sz, err := btf.Sizeof(m.Type); err != nil || uintptr(sz) != f.Type.Size() {
					t.Errorf("%s.%s is %d bytes, C %s.%s is %d (%v)", goType.Name(), f.Name, f.Type.Size(), tt.cname, m.Name, sz, err)
				}
			}
			if !slices.Equal(goFields, cFields) {
				t.Errorf("%s has fields %v, C struct %s has %v", goType.Name(), goFields, tt.cname, cFields)
			}
		})
	}

	// The keys the Go side builds for the other maps.
	if got := unsafe.Sizeof(uint32(0)); uint32(got) != spec.Maps["traced"].KeySize || uint32(got) != spec.Maps["drops"].KeySize {
		t.Errorf("traced and drops keys are read as uint32, but their key sizes are %d and %d",
			spec.Maps["traced"].KeySize, spec.Maps["drops"].KeySize)
	}
	if got := unsafe.Sizeof(uint64(0)); uint32(got) != spec.Maps["drops"].ValueSize {
		t.Errorf("drops values are read as uint64, but the value size is %d", spec.Maps["drops"].ValueSize)
	}
}

// TestBindingsNameObject checks that the generated Go bindings name every
// program and map of the embedded object. That the object is what the
// sources build is checked by make check-generate.
func TestBindingsNameObject(t *testing.T) {
	spec := loadSpec(t)
	var names []string
	for name := range spec.Maps {
		if !strings.HasPrefix(name, ".") { // .bss, .data, .rodata
			names = append(names, name)
		}
	}
	names = append(names, keys(spec.Programs)...)
	bound := map[string]bool{}
	for _, v := range []any{MpiprobeProgramSpecs{}, MpiprobeMapSpecs{}} {
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			bound[typ.Field(i).Tag.Get("ebpf")] = true
		}
	}
	for _, name := range names {
		if !bound[name] {
			t.Errorf("%s is in the object but not in the generated Go bindings: run go generate ./bpf", name)
		}
	}
}

// TestTwins checks that each program made by PROBE_TWINS has its twin:
// the same instructions, one for uprobe links and one for uprobe_multi
// links.
func TestTwins(t *testing.T) {
	spec := loadSpec(t)
	tests := []struct{ single, multi string }{
		{"trace_enter", "trace_enter_multi"},
		{"trace_exit", "trace_exit_multi"},
		{"trace_fortran_enter", "trace_fortran_enter_multi"},
		{"coll_enter", "coll_enter_multi"},
		{"coll_exit", "coll_exit_multi"},
		{"coll_wait_enter_single", "coll_wait_enter"},
		{"coll_wait_exit_single", "coll_wait_exit"},
	}
	for _, tt := range tests {
		t.Run(tt.single, func(t *testing.T) {
			s, m := spec.Programs[tt.single], spec.Programs[tt.multi]
			if s == nil || m == nil {
				t.Fatalf("programs %s and %s: have %v", tt.single, tt.multi, keys(spec.Programs))
			}
			if s.AttachType != ebpf.AttachNone || m.AttachType != ebpf.AttachTraceUprobeMulti {
				t.Errorf("%s attaches as %v and %s as %v, want a uprobe and a uprobe_multi", tt.single, s.AttachType, tt.multi, m.AttachType)
			}
			if len(s.Instructions) != len(m.Instructions) {
				t.Fatalf("%s has %d instructions, %s %d", tt.single, len(s.Instructions), tt.multi, len(m.Instructions))
			}
			for i := range s.Instructions {
				if a, b := fmt.Sprint(s.Instructions[i]), fmt.Sprint(m.Instructions[i]); a != b {
					t.Fatalf("instruction %d: %s has %s, %s has %s", i, tt.single, a, tt.multi, b)
				}
			}
		})
	}
}

// camel turns a C member name into bpf2go's Go field name: first_ns → FirstNs.
func camel(s string) string {
	var b strings.Builder
	for _, w := range strings.Split(s, "_") {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
