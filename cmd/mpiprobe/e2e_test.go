package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/probes"
)

// The flood settings of the end-to-end tests: with the vader BTL's send
// free list capped at freeListMax fragments, the first freeListMax of a
// round's nonblocking sends get a fragment and every later one is queued as
// pending while the receiver sleeps, so a round queues messages-freeListMax
// sends (the shared notes measured 1936 for 2000 messages).
const (
	floodMessages = 2000
	freeListMax   = 64
)

// tolerance is how far a measured count of new queueings may be from the
// count the program's shape implies: 2%, for fragments the BTL may hand out
// beyond the cap (for instance to the collective traffic of MPI_Barrier).
func withinTolerance(got, want uint64) bool {
	d := float64(got) - float64(want)
	return d <= 0.02*float64(want) && -d <= 0.02*float64(want)
}

func floodMCA(capped bool) []string {
	opts := []string{"--mca", "pml", "ob1", "--mca", "btl", "self,vader"}
	if capped {
		opts = append(opts, "--mca", "btl_vader_free_list_max", strconv.Itoa(freeListMax))
	}
	return opts
}

// summary is the part of `mpiprobe --json` the tests read.
type summary struct {
	Jobs []struct {
		Job   string        `json:"job"`
		Ranks []summaryRank `json:"ranks"`
	} `json:"jobs"`
	Dropped []struct {
		What  string `json:"what"`
		Count uint64 `json:"count"`
	} `json:"dropped"`
}

// jsonRankNum is a rank as every --json writes it: a number, or null when
// unknown (read as "?"). A rank written as a string fails to decode.
type jsonRankNum string

// UnmarshalJSON reads a JSON number or null.
func (r *jsonRankNum) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*r = "?"
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("rank %s: want a number or null: %w", b, err)
	}
	*r = jsonRankNum(strconv.Itoa(n))
	return nil
}

// summaryRank is one rank of a summary.
type summaryRank struct {
	Rank jsonRankNum `json:"rank"`
	PID  int         `json:"pid"`
	End  struct {
		State  string `json:"state"`
		Code   *int   `json:"code"`
		Signal *int   `json:"signal"`
		Text   string `json:"text"`
	} `json:"end"`
	Events []summaryEvent `json:"events"`
}

// summaryEvent is one event total of one rank, one per detail.
type summaryEvent struct {
	Event  string `json:"event"`
	Detail string `json:"detail"`
	Count  uint64 `json:"count"`
	Peak   uint64 `json:"peak"`
}

// events returns the totals of event in rank, one per detail, and whether the rank exists.
func (s summary) events(rank, event string) ([]summaryEvent, bool) {
	for _, j := range s.Jobs {
		for _, r := range j.Ranks {
			if string(r.Rank) != rank {
				continue
			}
			var out []summaryEvent
			for _, e := range r.Events {
				if e.Event == event {
					out = append(out, e)
				}
			}
			return out, true
		}
	}
	return nil, false
}

// count returns the total of event in the given rank over all its details,
// and whether the rank exists.
func (s summary) count(rank, event string) (uint64, bool) {
	es, ok := s.events(rank, event)
	var n uint64
	for _, e := range es {
		n += e.Count
	}
	return n, ok
}

// warning is one line mpiprobe printed by the C/T rule.
type warning struct {
	at     time.Time
	rank   string
	pid    int
	count  uint64
	window bool // "(in T)": held back by T
	final  bool // "At finalize"
	text   string
}

var warningLine = regexp.MustCompile(`^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\] host=\S+ job=\S+ rank=(\S+) pid=(\d+): (?:At finalize : ([\d,]+) times?|([\d,]+) warnings?( \(in [^)]*\))?) : (.+)$`)

func parseWarnings(t *testing.T, out string) []warning {
	t.Helper()
	var ws []warning
	for _, line := range strings.Split(out, "\n") {
		m := warningLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, err := time.ParseInLocation("2006-01-02 15:04:05.000", m[1], time.Local)
		if err != nil {
			t.Fatalf("time in %q: %v", line, err)
		}
		pid, _ := strconv.Atoi(m[3])
		n := m[4] + m[5]
		count, err := strconv.ParseUint(strings.ReplaceAll(n, ",", ""), 10, 64)
		if err != nil {
			t.Fatalf("count in %q: %v", line, err)
		}
		ws = append(ws, warning{at: at, rank: m[2], pid: pid, count: count, window: m[6] != "", final: m[4] != "", text: m[7]})
	}
	return ws
}

// result is one finished mpiprobe run.
type result struct {
	sum    summary
	stderr string
	stdout string
	code   int
}

// runMpiprobe runs the mpiprobe binary with --json, which must exit 0, and
// returns its parsed summary and its stderr, where the warnings and the
// command's own output go in --json mode.
func runMpiprobe(t *testing.T, bin string, args ...string) result {
	t.Helper()
	return runMpiprobeExit(t, bin, 0, args...)
}

// runMpiprobeExit is runMpiprobe for a run that must exit with code, or
// with any non-zero status when code is negative (a command whose rank is
// killed: mpiprobe exits with the launcher's status). stdout must be the
// JSON summary alone.
func runMpiprobeExit(t *testing.T, bin string, code int, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append([]string{"--json"}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		t.Fatalf("mpiprobe %s: %v", strings.Join(args, " "), err)
	}
	if got != code && !(code < 0 && got != 0) {
		t.Fatalf("mpiprobe %s: exit %d, want %d\nstderr:\n%s", strings.Join(args, " "), got, code, stderr.String())
	}
	out := stdout.String()
	var s summary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatalf("stdout is not the JSON summary alone: %v\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	return result{sum: s, stderr: stderr.String(), stdout: out, code: got}
}

// TestFloodWarnsByCT runs a flood whose sender queues sends in each of four
// rounds, 600 ms apart, and checks the counts against the program's shape
// and the warnings against C and T.
func TestFloodWarnsByCT(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	flood := mpitest.Build(t, impl, "flood")
	const rounds, c, period = 4, 100, time.Second

	job := impl.Command(2, floodMCA(true), flood, "-n", strconv.Itoa(floodMessages), "-d", "600", "-r", strconv.Itoa(rounds))
	res := runMpiprobe(t, bin, append([]string{"-C", strconv.Itoa(c), "-T", period.String(), "--interval", "100ms", "--"}, job...)...)

	want := uint64(rounds * (floodMessages - freeListMax))
	got, ok := res.sum.count("0", "ob1.send_pending.new")
	if !ok || !withinTolerance(got, want) {
		t.Errorf("rank 0 new pending sends = %d (rank found: %v), want %d ± 2%%\n%s", got, ok, want, res.stderr)
	}
	if n, ok := res.sum.count("1", "ob1.send_pending.new"); !ok || n != 0 {
		t.Errorf("rank 1 (the receiver) new pending sends = %d (found: %v), want 0", n, ok)
	}
	if n, _ := res.sum.count("0", "ob1.send_pending.drain"); n == 0 {
		t.Errorf("rank 0 shows no pass over the pending queue, yet %d sends were queued", got)
	}

	var sum uint64
	var last time.Time
	windows := 0
	for _, w := range parseWarnings(t, res.stderr) {
		if w.rank != "0" || !strings.HasPrefix(w.text, "send request queued as pending") {
			continue
		}
		sum += w.count
		if w.final {
			continue
		}
		if w.count < c {
			t.Errorf("warning of %d < C=%d: %+v", w.count, c, w)
		}
		if !last.IsZero() && w.at.Sub(last) < period {
			t.Errorf("two warnings %v apart, T=%v", w.at.Sub(last), period)
		}
		if w.window {
			windows++
		}
		last = w.at
	}
	if sum != got {
		t.Errorf("warnings add up to %d, summary says %d\n%s", sum, got, res.stderr)
	}
	if windows == 0 {
		t.Errorf("no T-limited warning \"(in 1 second)\", though rounds come 600 ms apart with T=1s\n%s", res.stderr)
	}
}

// TestPromptReceiverStaysQuiet: with the default free list (512 fragments)
// and fewer messages than that in flight, no send can be queued, so even
// C=1 prints nothing.
func TestPromptReceiverStaysQuiet(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	flood := mpitest.Build(t, impl, "flood")

	job := impl.Command(2, floodMCA(false), flood, "-n", "400", "-d", "0", "-r", "3")
	res := runMpiprobe(t, bin, append([]string{"-C", "1", "-T", "1ms", "--interval", "100ms", "--"}, job...)...)
	// Only the queueing events must stay silent: a barrier message may
	// arrive before its receive is posted (ob1.unexpected.late_recv).
	sendInfo, _, _ := probes.Full().Lookup("ob1.send_pending.new")
	drainInfo, _, _ := probes.Full().Lookup("ob1.send_pending.drain")
	for _, w := range parseWarnings(t, res.stderr) {
		if w.text == sendInfo.Message || w.text == drainInfo.Message {
			t.Errorf("warning from a job that cannot queue a send:\n%s", res.stderr)
		}
	}
	for _, rank := range []string{"0", "1"} {
		n, ok := res.sum.count(rank, "ob1.send_pending.new")
		if !ok || n != 0 {
			t.Errorf("rank %s: new pending = %d (rank in summary: %v), want 0 and present", rank, n, ok)
		}
	}
}

// TestAttachToRunningRanks starts a job on its own, attaches with -p to its
// two ranks while they pause after MPI_Init, and follows them to the end.
func TestAttachToRunningRanks(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	flood := mpitest.Build(t, impl, "flood")
	const rounds = 2

	args := impl.Command(2, floodMCA(true), flood, "-n", strconv.Itoa(floodMessages), "-d", "300", "-r", strconv.Itoa(rounds), "-p", "3000")
	job := mpitest.StartJob(t, args, flood, 2, "mca_pml_ob1")
	res := runMpiprobe(t, bin, "-C", "100", "-T", "1s", "--interval", "100ms", "-p", strconv.Itoa(job.Ranks[0]), "-p", strconv.Itoa(job.Ranks[1]))
	job.Wait(t)

	want := uint64(rounds * (floodMessages - freeListMax))
	if got, ok := res.sum.count("0", "ob1.send_pending.new"); !ok || !withinTolerance(got, want) {
		t.Errorf("rank 0 new pending = %d (found: %v), want %d ± 2%%\n%s", got, ok, want, res.stderr)
	}
	for _, j := range res.sum.Jobs {
		for _, r := range j.Ranks {
			if r.End.State != "exited" || r.End.Code == nil || *r.End.Code != 0 {
				t.Errorf("rank %s pid %d ended %+v, want exited 0", r.Rank, r.PID, r.End)
			}
		}
	}
}

// TestKilledRankKeepsCounts kills rank 0 with SIGKILL once its sends are
// queued; the summary must still show its counts and how it ended.
func TestKilledRankKeepsCounts(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	flood := mpitest.Build(t, impl, "flood")
	marker := filepath.Join(t.TempDir(), "rank0.pid")

	killed := make(chan error, 1)
	go func() {
		// Rank 0 writes its pid once its sends are posted, then holds for 20 s.
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			b, err := os.ReadFile(marker)
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil {
				time.Sleep(300 * time.Millisecond)
				killed <- syscall.Kill(pid, syscall.SIGKILL)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		killed <- fmt.Errorf("rank 0 never wrote %s", marker)
	}()
	job := impl.Command(2, floodMCA(true), flood, "-n", strconv.Itoa(floodMessages), "-d", "20000", "-m", marker, "-h", "20000")
	// The launcher reports the killed rank in its status, which mpiprobe passes on.
	res := runMpiprobeExit(t, bin, -1, append([]string{"-C", "100000", "--interval", "100ms", "--"}, job...)...)
	if err := <-killed; err != nil {
		t.Fatal(err)
	}

	want := uint64(floodMessages - freeListMax)
	got, ok := res.sum.count("0", "ob1.send_pending.new")
	if !ok || !withinTolerance(got, want) {
		t.Errorf("killed rank 0: new pending = %d (found: %v), want %d ± 2%%\n%s", got, ok, want, res.stderr)
	}
	found := false
	for _, j := range res.sum.Jobs {
		for _, r := range j.Ranks {
			if r.Rank == "0" {
				found = true
				if r.End.State != "signaled" || r.End.Signal == nil || *r.End.Signal != int(syscall.SIGKILL) {
					t.Errorf("rank 0 ended %+v, want signaled by SIGKILL", r.End)
				}
			}
		}
	}
	if !found {
		t.Fatalf("rank 0 missing from the summary:\n%s", res.stdout)
	}
	var final uint64
	for _, w := range parseWarnings(t, res.stderr) {
		if w.rank == "0" && w.final && strings.HasPrefix(w.text, "send request queued") {
			final += w.count
		}
	}
	if final != got {
		t.Errorf("\"At finalize\" line for rank 0 says %d, summary %d (C=100000 was never reached)\n%s", final, got, res.stderr)
	}
}
