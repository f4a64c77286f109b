package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/internal/trace/chrometrace/chromecheck"
	"github.com/mpiprobe/mpiprobe/internal/trace/tracefile"
)

// writeTrace writes a trace of two ranks, each a loop of `iters`
// allreduces, and returns its bytes.
func writeTrace(t *testing.T, iters int) []byte {
	t.Helper()
	return writeNodeTrace(t, "n1", "j", 0, 0, iters)
}

// writeNodeTrace writes the trace of node host of job: ranks first and
// first+1 as writeTrace's, recorded from `late` ns after writeTrace's start.
func writeNodeTrace(t *testing.T, host, job string, first int, late time.Duration, iters int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := tracefile.NewWriter(&buf, tracefile.Header{Host: host, Start: time.Unix(1_700_000_000, 0).Add(late), Command: []string{"mpirun", "./app"}})
	if err != nil {
		t.Fatal(err)
	}
	call, _ := w.AddCall("MPI_Allreduce")
	site, _ := w.AddSite(tracefile.Site{Object: "/app", Offset: 0x1234, Function: "main", FuncOffset: 0x34, File: "/src/app.c", Line: 12})
	var evs []tracefile.Event
	for r := range 2 {
		idx, err := w.AddRank(tracefile.Rank{PID: 100 + r, Host: host, Job: job, Rank: string(rune('0' + first + r)), Exe: "/app"})
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
	code := execute(context.Background(), append([]string{"trace", "show", file}, args...), &stdout, &stderr)
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
		"ranks 0-1, all with the same structure (SPMD):\n  (Allreduce0)[10000]\n",
		"ended: exit 0 (rank 0); killed by SIGKILL (rank 1)\n",
		"rank 1 LOST 3 calls",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Count(out, "(Allreduce0)") != 1 {
		t.Errorf("the structure is printed more than once:\n%s", out)
	}
	code, out, _ = showFile(t, writeTrace(t, 3), "--rank", "1", "--detail", "high")
	if code != 0 || strings.Contains(out, "rank 0 (") || !strings.Contains(out, "rank 1 (pid 101, host n1, job j): app, killed by SIGKILL, LOST 3 calls") ||
		!strings.Contains(out, "(CPU0: 660 ns+Allreduce0: 10 ns)[3]: 2.0 µs") {
		t.Errorf("--rank 1 --detail high: exit %d\n%s", code, out)
	}
	code, out, _ = showFile(t, writeTrace(t, 3), "--per-rank")
	if code != 0 || !strings.Contains(out, "rank 0 (pid 100") || !strings.Contains(out, "rank 1 (pid 101") {
		t.Errorf("--per-rank: exit %d\n%s", code, out)
	}
}

func TestShowUsage(t *testing.T) {
	good := writeTrace(t, 3)
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"--rank", "7"}, 2, "mpiprobe trace show: --rank: rank 7 is not in this trace: give a rank in 0-1\nRun 'mpiprobe trace show --help' for usage.\n"},
		{[]string{"--rank", "1", "--per-rank"}, 2, "give --rank N or --per-rank, not both"},
		{[]string{"--detail", "medium"}, 2, "give low or high"},
	} {
		code, out, stderr := showFile(t, good, tc.args...)
		// One line naming the mistake, then the hint to the help.
		if code != tc.code || !strings.Contains(stderr, tc.err) || strings.Count(stderr, "\n") != 2 || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q", tc.args, code, stderr, out)
		}
	}
}

func TestShowJSON(t *testing.T) {
	code, out, stderr := showFile(t, writeTrace(t, 5), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc["schema_version"] != 1.0 || doc["kind"] != "trace_show" || doc["call_count"] != 10.0 || doc["damage"] != nil || len(doc["structures"].([]any)) != 1 {
		t.Errorf("doc:\n%s", out)
	}
}

// TestShowBadFiles: damaged files show what is readable, with one line
// naming the damage; unreadable ones are one line.
func TestShowBadFiles(t *testing.T) {
	good := writeTrace(t, 20000)
	newer := bytes.Clone(good)
	newer[len("MPIPROBE-TRACE\n")] = tracefile.Version + 1
	flipped := bytes.Clone(good)
	for i := range 4 {
		flipped[len(good)/2+i] ^= 0xff
	}
	header := bytes.Clone(good)
	header[20] ^= 0xff
	tests := []struct {
		name    string
		data    []byte
		showing string // what stdout must still show, "" for nothing
		err     string
	}{
		{"cut in half", good[:len(good)/2], "(Allreduce0)[", "unreadable (chunk 42: truncated)"},
		{"cut between chunks", good[:len(good)-chunkTail(t, good)], "(Allreduce0)[20000]", "without its closing record"},
		{"4 bytes flipped", flipped, "of 40000 MPI calls", "read 38980 of 40000 calls in 56 chunks; bytes 79889-83996 unreadable (chunk 42: crc mismatch)"},
		{"corrupted tail", append(bytes.Clone(good[:len(good)/2]), bytes.Repeat([]byte{0xff}, 64)...), "(Allreduce0)[", "damaged trace: read 19"},
		{"20 bytes", good[:20], "", "too short (20 bytes)"},
		{"header flipped", header, "", "header damaged at byte 16 (crc mismatch)"},
		{"newer version", newer, "", "newer than this mpiprobe reads"},
		{"empty", nil, "", "empty"},
		{"not a trace", []byte("hello world, this is not a trace\n"), "", "not an mpiprobe trace file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := showFile(t, tc.data)
			if code != 1 {
				t.Errorf("exit %d for a bad file", code)
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, tc.err) {
				t.Errorf("stderr %q: want one line containing %q", stderr, tc.err)
			}
			if tc.showing == "" && out != "" {
				t.Errorf("stdout for an unreadable file:\n%s", out)
			}
			if tc.showing != "" && !strings.Contains(out, tc.showing) {
				t.Errorf("stdout lacks %q:\n%s", tc.showing, out)
			}
			if strings.Contains(out, "started under mpiprobe trace") || strings.Contains(out, "0001-01-01") {
				t.Errorf("hint or zero header for a damaged file:\n%s", out)
			}
		})
	}
}

// TestShowNodes: the files of two nodes of one job show and export as one
// job; a damaged one shows what was read and names its file; a file of
// another job is refused in one line.
func TestShowNodes(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	b := writeNodeTrace(t, "n2", "j", 2, time.Millisecond, 20)
	n1, n2 := file("n1.trace", writeTrace(t, 20)), file("n2.trace", b)
	cut, other := file("cut.trace", b[:len(b)/2]), file("other.trace", writeNodeTrace(t, "n2", "k", 2, 0, 20))
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := execute(context.Background(), args, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	code, out, stderr := run("trace", "show", n1, n2, "--per-rank")
	for _, w := range []string{"on n1,n2, started", "4 ranks, 80 MPI calls", "rank 1 (pid 101, host n1, job j)", "rank 2 (pid 100, host n2, job j)", "rank 3 (pid 101, host n2, job j)"} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("show n1 n2: exit %d, no %q in\n%s%s", code, w, out, stderr)
		}
	}
	if _, out, _ := run("trace", "show", n1, n2); !strings.Contains(out, "ranks 0-3, all with the same structure (SPMD):\n  (Allreduce0)[20]\n") {
		t.Errorf("show n1 n2: not one SPMD job:\n%s", out)
	}
	code, out, stderr = run("trace", "show", n1, cut)
	// The cut file's calls are lost (one chunk), its ranks still listed.
	if code != 1 || !strings.Contains(out, "4 ranks, 40 MPI calls") || !strings.Contains(out, "no MPI call recorded: ranks 2-3") ||
		!strings.HasPrefix(stderr, "mpiprobe trace show: "+cut+": damaged trace: read ") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("show n1 cut: exit %d, stderr %q, stdout:\n%s", code, stderr, out)
	}
	for _, cmd := range [][]string{{"show"}, {"export", "-o", filepath.Join(dir, "x.json")}} {
		code, out, stderr = run(append(append([]string{"trace"}, cmd...), n1, other)...)
		if code != 1 || out != "" || stderr != "mpiprobe trace "+cmd[0]+": "+other+" holds job \"k\", "+n1+" job \"j\": give the trace files of one job\n" {
			t.Errorf("%s n1 other: exit %d, stdout %q, stderr %q", cmd[0], code, out, stderr)
		}
	}
	json := filepath.Join(dir, "job.json")
	if code, _, stderr := run("trace", "export", "-o", json, n1, n2); code != 0 {
		t.Fatalf("export n1 n2: exit %d: %s", code, stderr)
	}
	f, err := os.Open(json)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if st, err := chromecheck.Check(f); err != nil || st.Processes != 4 || st.Complete != 80 {
		t.Errorf("timeline of n1 n2: %v %+v", err, st)
	}
}

func TestExport(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "x.trace")
	if err := os.WriteFile(file, writeTrace(t, 50), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "x.json")
	var stderr bytes.Buffer
	if code := execute(context.Background(), []string{"trace", "export", "--format", "chrome", "-o", out, file}, io.Discard, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := chromecheck.Check(f)
	if err != nil || st.Complete != 100 || st.Processes != 2 || st.Tracks != 2 {
		t.Fatalf("%+v, %v", st, err)
	}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"export", "-o", out}, "give the trace file"},
		{[]string{"export", "--format", "otf2", "-o", out, file}, "--format otf2: give --format chrome"},
		{[]string{"export", file}, "give the output file with -o"},
		{[]string{"export", "-o", out, filepath.Join(dir, "none")}, "no such file"},
	} {
		stderr.Reset()
		if code := execute(context.Background(), append([]string{"trace"}, tc.args...), io.Discard, &stderr); code == 0 || !strings.Contains(stderr.String(), tc.err) {
			t.Errorf("%v: exit %d, %q", tc.args, code, stderr.String())
		}
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

// export runs `mpiprobe trace export -o out in` and returns its exit
// status and stderr.
func export(out, in string) (int, string) {
	var stderr bytes.Buffer
	code := execute(context.Background(), []string{"trace", "export", "--format", "chrome", "-o", out, in}, io.Discard, &stderr)
	return code, stderr.String()
}

// TestExportOutputIsInput: an output that is the trace read (the same
// path, a symbolic or hard link to it) is refused in one line and the
// trace is left whole; a symbolic link at -o is replaced, not followed; a
// failed export leaves the old output as it was.
func TestExportOutputIsInput(t *testing.T) {
	dir := t.TempDir()
	data := writeTrace(t, 50)
	file := filepath.Join(dir, "x.trace")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sym, hard := filepath.Join(dir, "sym"), filepath.Join(dir, "hard")
	if err := os.Symlink("x.trace", sym); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(file, hard); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{file, sym, hard, filepath.Join(dir, ".", "x.trace")} {
		code, stderr := export(out, file)
		if code == 0 || !strings.Contains(stderr, "is the trace file it reads") || strings.Count(stderr, "\n") != 2 {
			t.Errorf("-o %s: exit %d, %q", out, code, stderr)
		}
		if got, _ := os.ReadFile(file); !bytes.Equal(got, data) {
			t.Fatalf("-o %s: the trace was changed: %d bytes, was %d", out, len(got), len(data))
		}
	}

	// A symbolic link at -o to another file: the link is replaced.
	precious := filepath.Join(dir, "precious")
	if err := os.WriteFile(precious, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "out.json")
	if err := os.Symlink(precious, link); err != nil {
		t.Fatal(err)
	}
	if code, stderr := export(link, file); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got, _ := os.ReadFile(precious); string(got) != "keep" {
		t.Errorf("the target of the -o link was written: %q", got)
	}
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("-o link not replaced by the timeline: %v, %v", fi, err)
	}

	// A trace that cannot be read: the old output stays.
	bad := filepath.Join(dir, "bad.trace")
	if err := os.WriteFile(bad, []byte("not a trace"), 0o644); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(link)
	if code, _ := export(link, bad); code == 0 {
		t.Error("exported an unreadable trace")
	}
	if got, _ := os.ReadFile(link); !bytes.Equal(got, old) {
		t.Errorf("a failed export changed the old output: %d bytes, were %d", len(got), len(old))
	}
}

// TestExportFullFileSystem: a timeline that does not fit is an error of
// one line naming the file and the cause, and no part of it is left.
func TestExportFullFileSystem(t *testing.T) {
	full := mpitest.Tmpfs(t, "64k")
	file := filepath.Join(t.TempDir(), "x.trace")
	if err := os.WriteFile(file, writeTrace(t, 2000), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(full, "x.json")
	code, stderr := export(out, file)
	if code != 1 || stderr != "mpiprobe trace export: write "+out+": no space left on device\n" {
		t.Errorf("exit %d, %q", code, stderr)
	}
	if des, _ := os.ReadDir(full); len(des) != 0 {
		t.Errorf("left in the full file system: %v", des)
	}
}
