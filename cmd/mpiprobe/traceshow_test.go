package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/trace/tracefile"
)

// writeTrace writes a trace of two ranks, each a loop of `iters`
// allreduces, and returns its bytes.
func writeTrace(t *testing.T, iters int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := tracefile.NewWriter(&buf, tracefile.Header{Host: "n1", Start: time.Unix(1_700_000_000, 0), Command: []string{"mpirun", "./app"}})
	if err != nil {
		t.Fatal(err)
	}
	call, _ := w.AddCall("MPI_Allreduce")
	site, _ := w.AddSite(tracefile.Site{Object: "/app", Offset: 0x1234, Function: "main", FuncOffset: 0x34, File: "/src/app.c", Line: 12})
	var evs []tracefile.Event
	for r := range 2 {
		idx, err := w.AddRank(tracefile.Rank{PID: 100 + r, Host: "n1", Job: "j", Rank: string(rune('0' + r)), Exe: "/app"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range iters {
			at := int64(i) * 1000
			evs = append(evs, tracefile.Event{Rank: idx, TID: int32(100 + r), Call: call, Site: site, Enter: at, Exit: at + 10,
				Peer: tracefile.NoValue, Root: tracefile.NoValue, Count: 1, ElemSize: 8})
		}
	}
	if err := w.WriteEvents(evs); err != nil {
		t.Fatal(err)
	}
	if err := w.Close([]tracefile.RankEnd{{Rank: 0, End: "exit 0"}, {Rank: 1, Lost: 3, End: "killed by SIGKILL"}}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// chunkTail returns the length of the closing chunk of a trace file: the
// smallest cut that loses only it.
func chunkTail(t *testing.T, data []byte) int {
	t.Helper()
	for n := 1; n < len(data); n++ {
		tr, err := tracefile.Read(bytes.NewReader(data[:len(data)-n]))
		if tr != nil && err != nil && strings.Contains(err.Error(), "closing record") {
			return n
		}
	}
	t.Fatal("no cut loses only the closing record")
	return 0
}

func showFile(t *testing.T, data []byte, args ...string) (int, string, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "x.trace")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := showMain(append([]string{file}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestShowTrace(t *testing.T) {
	code, out, stderr := showFile(t, writeTrace(t, 10000))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{
		"2 ranks, 20000 MPI calls",
		"0  Allreduce            main+0x34 (app.c:12)",
		"rank 0 (pid 100, host n1, job j): app, exit 0\n  (Allreduce0)[10000]\n",
		"rank 1 (pid 101, host n1, job j): app, killed by SIGKILL, LOST 3 calls",
		"all 2 ranks (0-1) have the same structure (SPMD)",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	code, out, _ = showFile(t, writeTrace(t, 3), "--rank", "1", "--detail", "high")
	if code != 0 || strings.Contains(out, "rank 0 (") || !strings.Contains(out, "(CPU0: 0.66+Allreduce0: 0.01)[3]: 2.01") {
		t.Errorf("--rank 1 --detail high: exit %d\n%s", code, out)
	}
}

// TestShowBadFiles: damaged files show what is readable, with one line
// naming the damage; unreadable ones are one line.
func TestShowBadFiles(t *testing.T) {
	good := writeTrace(t, 20000)
	newer := bytes.Clone(good)
	newer[len("MPIPROBE-TRACE\n")] = tracefile.Version + 1
	tests := []struct {
		name    string
		data    []byte
		showing string // what stdout must still show, "" for nothing
		err     string
	}{
		{"truncated in a chunk", good[:len(good)*2/3], "rank 0 (pid 100", "cut off inside a chunk"},
		{"truncated between chunks", good[:len(good)-chunkTail(t, good)], "rank 0 (pid 100", "ends without its closing record"},
		{"corrupted", append(bytes.Clone(good[:len(good)/2]), bytes.Repeat([]byte{0xff}, 64)...), "rank 0 (pid 100", "damaged at byte"},
		{"newer version", newer, "", "newer than this mpiprobe reads"},
		{"empty", nil, "", "empty"},
		{"not a trace", []byte("hello world, this is not a trace\n"), "", "not an mpiprobe trace file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := showFile(t, tc.data)
			if code == 0 {
				t.Errorf("exit 0 for a bad file")
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, tc.err) {
				t.Errorf("stderr %q: want one line containing %q", stderr, tc.err)
			}
			if tc.showing == "" && out != "" {
				t.Errorf("stdout for an unreadable file:\n%s", out)
			}
			if tc.showing != "" && (!strings.Contains(out, tc.showing) || !strings.Contains(out, "incomplete")) {
				t.Errorf("stdout lacks %q and the incomplete warning:\n%s", tc.showing, out)
			}
		})
	}
	if code, _, stderr := showFile(t, good, "--detail", "medium"); code != 2 || !strings.Contains(stderr, "give low or high") {
		t.Errorf("--detail medium: exit %d, %q", code, stderr)
	}
}

func TestParseRingSize(t *testing.T) {
	good := map[string]uint32{"4K": 4096, "4KiB": 4096, "64M": 64 << 20, "64MiB": 64 << 20, "1G": 1 << 30, "8192": 8192, "1m": 1 << 20}
	for in, want := range good {
		if got, err := parseRingSize(in); err != nil || got != want {
			t.Errorf("parseRingSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "3K", "2K", "2G", "lots", "-4K", "1.5M"} {
		if got, err := parseRingSize(in); err == nil {
			t.Errorf("parseRingSize(%q) = %d, want an error", in, got)
		}
	}
}
