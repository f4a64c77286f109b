//go:build (386 || amd64) && linux

package bpf

import (
	"encoding/binary"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
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

func readSource(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("mpiprobe.bpf.c")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
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
		{"drops", ebpf.PerCPUArray, 4, 8, dropReasons(t, readSource(t))},
		{"proc_events", ebpf.RingBuf, 0, 0, 0},
		{"coll_layouts", ebpf.Array, 4, 72, 16},
		{"coll_index", ebpf.Hash, 24, 4, 0},
		{"coll_comms", ebpf.Array, 4, 32, 0},
		{"coll_stats", ebpf.Array, 4, 64, 0},
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

// dropReasons returns the number of DROP_* reasons of enum drop_reason, and
// checks that DROP_MAX is that number.
func dropReasons(t *testing.T, src string) uint32 {
	t.Helper()
	body := regexp.MustCompile(`(?s)enum drop_reason \{(.*?)\};`).FindStringSubmatch(src)
	if body == nil {
		t.Fatal("mpiprobe.bpf.c: no enum drop_reason")
	}
	var reasons, max int
	haveMax := false
	for _, m := range regexp.MustCompile(`(DROP_[A-Z_]+)\s*=\s*(\d+)`).FindAllStringSubmatch(body[1], -1) {
		v, _ := strconv.Atoi(m[2])
		if m[1] == "DROP_MAX" {
			max, haveMax = v, true
			continue
		}
		if v != reasons {
			t.Errorf("enum drop_reason: %s = %d, want %d (dense from 0)", m[1], v, reasons)
		}
		reasons++
	}
	if !haveMax || max != reasons {
		t.Errorf("enum drop_reason: DROP_MAX = %d, but there are %d reasons", max, reasons)
	}
	if reasons != 4 {
		t.Errorf("enum drop_reason has %d reasons, want 4", reasons)
	}
	return uint32(reasons)
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
		{"task_regs", MpiprobeTaskRegs{}, 168, "dump_regs record"},
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

// TestObjectMatchesSource checks that the committed object was built from
// the current mpiprobe.bpf.c: the same programs in the same sections, and
// the same maps. Run `go generate ./bpf` when it fails.
func TestObjectMatchesSource(t *testing.T) {
	src := readSource(t)
	spec := loadSpec(t)

	progs := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^SEC\("([^"]+)"\)\s*\nint\s+(?:BPF_PROG\(\s*)?(\w+)`).FindAllStringSubmatch(src, -1) {
		progs[m[2]] = m[1]
	}
	if len(progs) == 0 {
		t.Fatal("mpiprobe.bpf.c: no SEC(...) programs found")
	}
	for name, sec := range progs {
		p, ok := spec.Programs[name]
		if !ok {
			t.Errorf("program %s (SEC %q) is in mpiprobe.bpf.c but not in the object: run go generate ./bpf", name, sec)
			continue
		}
		if p.SectionName != sec {
			t.Errorf("program %s: section %q in the object, %q in mpiprobe.bpf.c: run go generate ./bpf", name, p.SectionName, sec)
		}
	}
	for name := range spec.Programs {
		if _, ok := progs[name]; !ok {
			t.Errorf("program %s is in the object but not in mpiprobe.bpf.c: run go generate ./bpf", name)
		}
	}

	var maps []string
	for _, m := range regexp.MustCompile(`(?m)^\}\s*(\w+)\s+SEC\("\.maps"\);`).FindAllStringSubmatch(src, -1) {
		maps = append(maps, m[1])
	}
	slices.Sort(maps)
	var objMaps []string
	for name := range spec.Maps {
		if !strings.HasPrefix(name, ".") { // .bss, .data, .rodata
			objMaps = append(objMaps, name)
		}
	}
	slices.Sort(objMaps)
	if !slices.Equal(maps, objMaps) {
		t.Errorf("maps in mpiprobe.bpf.c %v, in the object %v: run go generate ./bpf", maps, objMaps)
	}

	// The generated Go bindings name every program and map of the object.
	bound := map[string]bool{}
	for _, v := range []any{MpiprobeProgramSpecs{}, MpiprobeMapSpecs{}} {
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			bound[typ.Field(i).Tag.Get("ebpf")] = true
		}
	}
	for _, name := range append(keys(spec.Programs), objMaps...) {
		if !bound[name] {
			t.Errorf("%s is in the object but not in the generated Go bindings: run go generate ./bpf", name)
		}
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
