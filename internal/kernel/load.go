package kernel

import (
	"fmt"
	"maps"
	"slices"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/mpiprobe/mpiprobe/bpf"
)

// Options says how a mode's load differs from the object as built.
type Options struct {
	// MaxEntries resizes maps, by name (e.g. the trace ring buffer, the
	// collective-tracking maps).
	MaxEntries map[string]uint32
	// Variables sets global variables of the BPF programs, by name, before
	// loading (e.g. watch_all for the agent).
	Variables map[string]any
	// Replacements are maps to use instead of creating new ones, by name:
	// the agent's maps pinned by an earlier agent. Load does not take them
	// over: the caller still closes its references.
	Replacements map[string]*ebpf.Map
}

// Load loads the programs and maps that objs names (a pointer to a struct
// of ebpf-tagged fields, as bpf.MpiprobeObjects or probes.Programs) from
// mpiprobe's BPF object, changed as opts says. Only what objs names, and
// the maps its programs use, is loaded. Call Preflight first for a clear
// error on a kernel or process that cannot load BPF at all.
func Load(objs any, opts Options) error {
	spec, err := bpf.LoadMpiprobe()
	if err != nil {
		return fmt.Errorf("read the BPF object: %w", err)
	}
	if err := prepare(spec, opts); err != nil {
		return fmt.Errorf("load BPF programs: %w", err)
	}
	err = spec.LoadAndAssign(objs, &ebpf.CollectionOptions{MapReplacements: opts.Replacements})
	// The kernel's BTF is needed while loading only: free it.
	btf.FlushKernelSpec()
	if err != nil {
		return ExplainLoad("load BPF programs", err)
	}
	return nil
}

// prepare applies the map sizes and variables of opts to spec.
func prepare(spec *ebpf.CollectionSpec, opts Options) error {
	for _, name := range slices.Sorted(maps.Keys(opts.MaxEntries)) {
		m, ok := spec.Maps[name]
		if !ok {
			return fmt.Errorf("BPF object has no %s map: regenerate bpf/ (make generate)", name)
		}
		m.MaxEntries = opts.MaxEntries[name]
	}
	for _, name := range slices.Sorted(maps.Keys(opts.Variables)) {
		v, ok := spec.Variables[name]
		if !ok {
			return fmt.Errorf("BPF object has no %s variable: regenerate bpf/ (make generate)", name)
		}
		if err := v.Set(opts.Variables[name]); err != nil {
			return fmt.Errorf("set %s: %w", name, err)
		}
	}
	return nil
}
