package ps

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
)

func TestFdinfoMapID(t *testing.T) {
	tests := []struct {
		info string
		id   ebpf.MapID
		ok   bool
	}{
		{"pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\nmap_type:\t1\nkey_size:\t4\nvalue_size:\t4\nmax_entries:\t8192\nmap_flags:\t0x0\nmap_extra:\t0x0\nmemlock:\t65536\nmap_id:\t187\nfrozen:\t0\n", 187, true},
		{"pos:\t0\nflags:\t02000002\n", 0, false},
		{"map_id:\tx\n", 0, false},
	}
	for _, tc := range tests {
		id, ok := fdinfoMapID(tc.info)
		if id != tc.id || ok != tc.ok {
			t.Errorf("fdinfoMapID(%q) = %d, %v; want %d, %v", tc.info, id, ok, tc.id, tc.ok)
		}
	}
}

func TestTracerKind(t *testing.T) {
	tests := map[string]string{
		"/usr/bin/mpiprobe agent":                     KindAgent,
		"mpiprobe -v agent --config /x":               KindAgent,
		"mpiprobe -p 4242":                            KindSession,
		"mpiprobe -- ./agent":                         KindSession,
		"mpiprobe -- sh -c agent":                     KindSession,
		"mpiprobe trace -o agent.trace -- mpirun ./a": KindSession,
	}
	for cmd, want := range tests {
		if got := tracerKind(cmd); got != want {
			t.Errorf("tracerKind(%q) = %s, want %s", cmd, got, want)
		}
	}
}

func TestWrite(t *testing.T) {
	l := List{Host: "n1", TracedKnown: true, Jobs: []Job{
		{ID: "1469448193", Launcher: "openmpi", Size: "2", Procs: []Process{
			{PID: 10, Rank: "0", User: "alice", Command: "./app -n 3", MPI: "Open MPI", Library: "/usr/lib/libmpi.so.40", TracedBy: []Tracer{{Kind: KindAgent, PID: 7}}},
			{PID: 11, Rank: "1", User: "alice", Command: "./app -n 3", MPI: "Open MPI", Library: "/usr/lib/libmpi.so.40"},
		}},
	}}
	var b bytes.Buffer
	if err := Write(&b, l, 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, w := range []string{"1469448193 (openmpi)", "agent 7", "Open MPI /usr/lib/libmpi.so.40", "./app -n 3", "│ -         │"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Count(out, "1469448193") != 1 {
		t.Errorf("the job id is repeated on every rank:\n%s", out)
	}
	l.TracedKnown, l.TracedNote = false, "whether mpiprobe traces them cannot be known: run mpiprobe ps as root"
	b.Reset()
	if err := Write(&b, l, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "unknown") || !strings.Contains(b.String(), "TRACED BY: whether mpiprobe traces them cannot be known: run mpiprobe ps as root") {
		t.Errorf("unknown tracing not said:\n%s", b.String())
	}
	b.Reset()
	if err := Write(&b, List{Host: "n1"}, 0); err != nil || !strings.Contains(b.String(), "No MPI process found on n1") {
		t.Errorf("empty list: %v\n%s", err, b.String())
	}
}
