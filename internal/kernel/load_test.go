package kernel

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/mpiprobe/mpiprobe/bpf"
)

// TestPrepare checks that the load options change the object's spec as
// asked, and that a name the object lacks is refused with the fix.
func TestPrepare(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		sizes   map[string]uint32 // map sizes wanted after prepare
		wantErr string
	}{
		{name: "nothing to change"},
		{name: "ring buffer and slots", opts: Options{MaxEntries: map[string]uint32{"trace_events": 1 << 20, "coll_comms": 7}},
			sizes: map[string]uint32{"trace_events": 1 << 20, "coll_comms": 7}},
		{name: "variable", opts: Options{Variables: map[string]any{"watch_all": uint32(1)}}},
		{name: "unknown map", opts: Options{MaxEntries: map[string]uint32{"no_such_map": 1}}, wantErr: "no no_such_map map: regenerate bpf/"},
		{name: "unknown variable", opts: Options{Variables: map[string]any{"no_such_var": uint32(1)}}, wantErr: "no no_such_var variable: regenerate bpf/"},
		{name: "variable of the wrong size", opts: Options{Variables: map[string]any{"watch_all": uint64(1)}}, wantErr: "set watch_all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := bpf.LoadMpiprobe()
			if err != nil {
				t.Fatalf("LoadMpiprobe: %v", err)
			}
			before := map[string]uint32{}
			for name, m := range spec.Maps {
				before[name] = m.MaxEntries
			}
			err = prepare(spec, tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("prepare = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("prepare: %v", err)
			}
			for name, m := range spec.Maps {
				want, ok := tt.sizes[name]
				if !ok {
					want = before[name]
				}
				if m.MaxEntries != want {
					t.Errorf("map %s has %d entries, want %d", name, m.MaxEntries, want)
				}
			}
			for name, val := range tt.opts.Variables {
				var got uint32
				if err := spec.Variables[name].Get(&got); err != nil {
					t.Fatalf("get %s: %v", name, err)
				}
				if want := val.(uint32); got != want {
					t.Errorf("%s = %d, want %d", name, got, want)
				}
			}
		})
	}
}

// TestExplainLoad checks that each kind of load failure says what to do,
// and keeps the cause.
func TestExplainLoad(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("load program: %w", unix.EPERM), "run mpiprobe as root"},
		{fmt.Errorf("load program: %w", unix.EACCES), "run mpiprobe as root"},
		{&ebpf.VerifierError{Cause: unix.EACCES}, "verifier rejected them"},
		{fmt.Errorf("attach: %w", unix.EOPNOTSUPP), "Linux 5.15 or later"},
		{fmt.Errorf("attach: %w", unix.ENOENT), "Linux 5.15 or later"},
		{errors.New("something else"), "load BPF programs: something else"},
	}
	for _, tt := range tests {
		got := ExplainLoad("load BPF programs", tt.err)
		if !strings.Contains(got.Error(), tt.want) || !strings.HasPrefix(got.Error(), "load BPF programs: ") {
			t.Errorf("ExplainLoad(%v) = %q, want it to start with the action and contain %q", tt.err, got, tt.want)
		}
		if !errors.Is(got, tt.err) {
			t.Errorf("ExplainLoad(%v) lost its cause", tt.err)
		}
		if strings.Contains(got.Error(), "\n") {
			t.Errorf("ExplainLoad(%v) = %q, want one line", tt.err, got)
		}
	}
}
