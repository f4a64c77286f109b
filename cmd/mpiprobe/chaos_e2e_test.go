package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// The chaos suite (make chaos; a short form in .ci/run) runs real jobs and
// injects faults at random moments, from a seed it prints
// (MPIPROBE_CHAOS_SEED repeats a run): ranks killed under a session,
// sessions killed mid-job, many attach/detach cycles on one running job,
// the agent killed and restarted mid-job, ranks that exit while being
// attached, communicator slots and the trace ring filled, the agent's
// state directory full when a job ends, a job that starts and ends while
// no agent runs, a rank calling MPI_Abort under the agent. After each fault
// it checks the outcome: the job's own output and exit status are those of
// an unprobed run, every BPF link and program mpiprobe held is released
// (looked up by id in the kernel) and no pin is left, the agent's counts
// equal the program's own count, every job gets its summary with its
// identity and how each rank ended, and drops are counted and reported.
//
// Knobs: MPIPROBE_CHAOS_ROUNDS (rounds; unset skips the suite),
// MPIPROBE_CHAOS_ATTACHES (attach/detach cycles on one job, default 100),
// MPIPROBE_CHAOS_SEED.

// chaos is one run of the suite.
type chaos struct {
	t       *testing.T
	rng     *rand.Rand
	bin     string
	ompi    mpitest.Impl
	flood   string
	colls   string
	million string
	hostile string
	soak    string
	// faults counts the faults injected whose outcome checked out.
	faults map[string]int
	mu     sync.Mutex
	// refs caches the normalized output of unprobed runs, by command line.
	refs map[string]jobResult
}

// jobResult is how a job ended and what it printed, normalized.
type jobResult struct {
	code int
	out  string
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a count (a non-negative integer)", name, v)
	}
	return n
}

func TestChaos(t *testing.T) {
	rounds := envInt(t, "MPIPROBE_CHAOS_ROUNDS", -1)
	if rounds < 0 {
		t.Skip("the chaos suite runs with MPIPROBE_CHAOS_ROUNDS set (make chaos)")
	}
	ompi := mpitest.OpenMPI()
	mpitest.RequireE2E(t, ompi)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("MPIPROBE_CHAOS_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("MPIPROBE_CHAOS_SEED=%q: want an unsigned integer", s)
		}
	}
	fmt.Printf("chaos: seed %d (MPIPROBE_CHAOS_SEED=%d repeats this run)\n", seed, seed)
	c := &chaos{
		t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), bin: mpitest.BuildMpiprobe(t), ompi: ompi,
		flood: mpitest.Build(t, ompi, "flood"), colls: mpitest.Build(t, ompi, "colls"),
		million: mpitest.Build(t, ompi, "million"), hostile: mpitest.Build(t, ompi, "hostile"), soak: mpitest.Build(t, ompi, "soak"),
		faults: map[string]int{}, refs: map[string]jobResult{},
	}
	scenarios := []struct {
		name string
		run  func()
	}{
		{"rank killed under a session", c.killRankUnderSession},
		{"session killed mid-job", c.killSessionMidJob},
		{"agent killed and restarted mid-job", c.restartAgentMidJob},
		{"ranks exit while attached", c.ranksExitDuringAttach},
		{"communicator slots full", c.commSlotsFull},
		{"trace ring full", c.traceRingFull},
		{"state directory full at a job's end", c.stateDirFullAtJobEnd},
		{"job entirely while no agent runs", c.jobWhileAgentDown},
		{"MPI_Abort under the agent", c.abortUnderAgent},
	}
	ran := 0
	for r := 1; r <= rounds && !t.Failed(); r++ {
		order := c.rng.Perm(len(scenarios))
		for _, i := range order {
			sc := scenarios[i]
			t.Logf("round %d: %s", r, sc.name)
			sc.run()
		}
		ran = r
	}
	if attaches := envInt(t, "MPIPROBE_CHAOS_ATTACHES", 100); attaches > 0 && !t.Failed() {
		c.attachCycles(attaches)
	}
	total := 0
	var kinds []string
	for k, n := range c.faults {
		total += n
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	fmt.Printf("chaos: seed %d, %d rounds run, %d faults survived (%s)\n", seed, ran, total, strings.Join(kinds, ", "))
}

// survived records a fault whose outcome checked out.
func (c *chaos) survived(kind string) {
	c.mu.Lock()
	c.faults[kind]++
	c.mu.Unlock()
}

// between returns a random duration in [lo, hi).
func (c *chaos) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(c.rng.Int64N(int64(hi-lo)))
}

var secondsRE = regexp.MustCompile(`seconds=[0-9.]+`)

// normalize sorts a job's output lines (ranks print in any order) and
// blanks what varies from run to run (timings).
func normalize(out string) string {
	lines := strings.Split(strings.TrimSpace(secondsRE.ReplaceAllString(out, "seconds=S")), "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// job is an MPI job the suite started, with its own output.
type job struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan struct{}
	res  jobResult
}

func (c *chaos) startJob(argv []string) *job {
	c.t.Helper()
	j := &job{cmd: exec.Command(argv[0], argv[1:]...), done: make(chan struct{})}
	j.cmd.Stdout, j.cmd.Stderr = &j.out, &j.out
	j.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := j.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() {
		err := j.cmd.Wait()
		j.res = jobResult{code: exitCode(err), out: normalize(j.out.String())}
		close(j.done)
	}()
	c.t.Cleanup(func() { _ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL) })
	return j
}

// wait waits for the job, at most 5 minutes.
func (j *job) wait(t *testing.T) jobResult {
	t.Helper()
	select {
	case <-j.done:
	case <-time.After(5 * time.Minute):
		_ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("job %v did not end within 5 minutes:\n%s", j.cmd.Args, j.out.String())
	}
	return j.res
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// reference returns the result of argv run without mpiprobe, once.
func (c *chaos) reference(argv []string) jobResult {
	key := strings.Join(argv, "\x00")
	if r, ok := c.refs[key]; ok {
		return r
	}
	r := c.startJob(argv).wait(c.t)
	c.refs[key] = r
	return r
}

// checkUnchanged fails when a probed job ended otherwise than unprobed.
func (c *chaos) checkUnchanged(what string, argv []string, got jobResult) bool {
	c.t.Helper()
	want := c.reference(argv)
	if got != want {
		c.t.Errorf("%s: the job ended with %d and printed\n%s\nunprobed it ends with %d and prints\n%s", what, got.code, got.out, want.code, want.out)
		return false
	}
	return true
}

// probe is an mpiprobe process the suite started.
type probe struct {
	cmd            *exec.Cmd
	stdout, stderr mpitest.Buffer
	done           chan struct{}
	err            error
	// links and progs are the BPF links and programs it held, sampled
	// from /proc/PID/fdinfo.
	links, progs map[uint32]bool
}

func (c *chaos) startProbe(args ...string) *probe {
	c.t.Helper()
	p := &probe{cmd: exec.Command(c.bin, args...), done: make(chan struct{}), links: map[uint32]bool{}, progs: map[uint32]bool{}}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	c.t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	return p
}

// sample adds the BPF links and programs the process holds now.
func (p *probe) sample() {
	sampleBPF(p.cmd.Process.Pid, p.links, p.progs)
}

// sampleBPF reads /proc/PID/fdinfo for link_id and prog_id lines.
func sampleBPF(pid int, links, progs map[uint32]bool) {
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
			if err != nil {
				continue
			}
			switch k {
			case "link_id":
				links[uint32(id)] = true
			case "prog_id":
				progs[uint32(id)] = true
			}
		}
		f.Close()
	}
}

// waitLog waits until the process's stderr holds s, or it exits.
func (p *probe) waitLog(s string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if strings.Contains(p.stderr.String(), s) {
			return true
		}
		select {
		case <-p.done:
			return strings.Contains(p.stderr.String(), s)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return false
}

// wait waits for mpiprobe to exit, at most 3 minutes.
func (p *probe) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(3 * time.Minute):
		_ = p.cmd.Process.Kill()
		t.Fatalf("mpiprobe %v did not exit within 3 minutes:\n%s", p.cmd.Args, p.stderr.String())
	}
	return exitCode(p.err)
}

// checkReleased fails when a BPF link or program of links/progs still
// exists: the kernel frees them when the last fd or pin goes, shortly
// after the holder exits.
func (c *chaos) checkReleased(what string, links, progs map[uint32]bool) bool {
	c.t.Helper()
	var left []string
	for range 100 {
		left = left[:0]
		for id := range links {
			if l, err := link.NewFromID(link.ID(id)); err == nil {
				l.Close()
				left = append(left, fmt.Sprintf("link %d", id))
			}
		}
		for id := range progs {
			if p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id)); err == nil {
				p.Close()
				left = append(left, fmt.Sprintf("program %d", id))
			}
		}
		if len(left) == 0 {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Errorf("%s: left behind in the kernel: %s", what, strings.Join(left, ", "))
	return false
}

// floodArgv is flood.c under Open MPI with the capped free list.
func (c *chaos) floodArgv(rounds, delayMs int, extra ...string) []string {
	args := append([]string{"-n", strconv.Itoa(floodMessages), "-d", strconv.Itoa(delayMs), "-r", strconv.Itoa(rounds)}, extra...)
	return c.ompi.Command(2, floodMCA(true), c.flood, args...)
}

// ranksOf waits for n ranks of prog that map lib.
func (c *chaos) ranksOf(prog string, n int, lib string) []int {
	c.t.Helper()
	pids, err := mpitest.WaitRanksFor(30*time.Second, prog, n, lib)
	if err != nil {
		c.t.Fatal(err)
	}
	return pids
}

// killRankUnderSession: `mpiprobe -- mpirun flood`, a rank SIGKILLed at
// a random moment. mpiprobe must end with a summary that shows the rank
// killed, and release every link.
func (c *chaos) killRankUnderSession() {
	argv := c.floodArgv(40, 300)
	sumFile := filepath.Join(c.t.TempDir(), "summary.json")
	p := c.startProbe(append([]string{"-v", "--json", "-o", sumFile, "--interval", "100ms", "--"}, argv...)...)
	if !p.waitLog("msg=tracing", 60*time.Second) {
		c.t.Fatalf("mpiprobe did not start tracing:\n%s", p.stderr.String())
	}
	ranks := c.ranksOf(c.flood, 2, "mca_pml_ob1")
	time.Sleep(c.between(300*time.Millisecond, 2*time.Second))
	p.sample()
	victim := ranks[c.rng.IntN(len(ranks))]
	_ = syscall.Kill(victim, syscall.SIGKILL)
	// mpiprobe exits with the command's status (mpirun's, after a rank
	// was killed): what must hold is the summary with what was counted.
	code := p.wait(c.t)
	out, _ := os.ReadFile(sumFile)
	var s summary
	if json.Unmarshal(out, &s) != nil {
		c.t.Errorf("rank killed: mpiprobe exit %d, want a JSON summary in -o FILE:\n%s\n%s", code, out, p.stderr.String())
		return
	}
	found := false
	for _, j := range s.Jobs {
		for _, r := range j.Ranks {
			if r.PID == victim {
				found = r.End.State == "signaled" && r.End.Signal != nil && *r.End.Signal == int(syscall.SIGKILL)
			}
		}
	}
	if !found {
		c.t.Errorf("rank killed: the summary does not show pid %d killed by SIGKILL:\n%s", victim, out)
		return
	}
	if c.checkReleased("rank killed under a session", p.links, p.progs) {
		c.survived("rank killed")
	}
}

// killSessionMidJob: `mpiprobe -p` on a running job, SIGKILLed at a random
// moment. The job must end as unprobed, and every link be released.
func (c *chaos) killSessionMidJob() {
	argv := c.floodArgv(8, 300)
	j := c.startJob(argv)
	ranks := c.ranksOf(c.flood, 2, "mca_pml_ob1")
	p := c.startProbe("-v", "--interval", "100ms", "-p", strconv.Itoa(ranks[0]), "-p", strconv.Itoa(ranks[1]))
	p.waitLog("msg=tracing", c.between(0, 3*time.Second))
	p.sample()
	_ = p.cmd.Process.Kill()
	p.wait(c.t)
	ok := c.checkUnchanged("session killed mid-job", argv, j.wait(c.t))
	if c.checkReleased("session killed mid-job", p.links, p.progs) && ok {
		c.survived("session SIGKILLed")
	}
}

// attachCycles attaches `mpiprobe -p` to one running job n times, each
// stopped at a random moment by SIGINT, SIGTERM or SIGKILL. The job must
// end as unprobed, and every link of every cycle be released.
func (c *chaos) attachCycles(n int) {
	// soak.c queues sends once a second until the stop file exists.
	stop := filepath.Join(c.t.TempDir(), "stop")
	argv := c.ompi.Command(2, floodMCA(true), c.soak, "-f", stop)
	j := c.startJob(argv)
	ranks := c.ranksOf(c.soak, 2, "mca_pml_ob1")
	links, progs := map[uint32]bool{}, map[uint32]bool{}
	sigs := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL}
	clean := 0
	for i := 0; i < n; i++ {
		select {
		case <-j.done:
			c.t.Errorf("the job ended after %d of %d cycles; it must outlast them", i, n)
			n = i
		default:
		}
		if i >= n {
			break
		}
		p := c.startProbe("-v", "--json", "--interval", "100ms", "-p", strconv.Itoa(ranks[0]), "-p", strconv.Itoa(ranks[1]))
		p.waitLog("msg=tracing", c.between(0, 4*time.Second))
		time.Sleep(c.between(0, 500*time.Millisecond))
		p.sample()
		for id := range p.links {
			links[id] = true
		}
		for id := range p.progs {
			progs[id] = true
		}
		sig := sigs[c.rng.IntN(len(sigs))]
		_ = p.cmd.Process.Signal(sig)
		code := p.wait(c.t)
		if sig != syscall.SIGKILL && code != 0 {
			c.t.Errorf("cycle %d: mpiprobe stopped by %v exited %d, want 0:\n%s", i, sig, code, p.stderr.String())
			continue
		}
		if sig != syscall.SIGKILL && strings.Contains(p.stderr.String(), "msg=tracing") && !strings.Contains(p.stdout.String(), `"jobs"`) {
			c.t.Errorf("cycle %d: mpiprobe stopped by %v printed no summary:\n%s", i, sig, p.stdout.String())
			continue
		}
		clean++
	}
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		c.t.Fatal(err)
	}
	res := j.wait(c.t)
	ok := res.code == 0 && regexp.MustCompile(`(?s)^soak rank 0 rounds \d+\nsoak rank 1 rounds \d+$`).MatchString(res.out)
	if !ok {
		c.t.Errorf("%d attach/detach cycles: the job ended with %d and printed\n%s\nwant exit 0 and one line per rank", n, res.code, res.out)
	}
	if c.checkReleased("attach/detach cycles", links, progs) && ok {
		c.mu.Lock()
		c.faults["attach/detach cycle"] += clean
		c.mu.Unlock()
	}
	fmt.Printf("chaos: %d attach/detach cycles on one job, %d links and %d programs released\n", n, len(links), len(progs))
}

// restartAgentMidJob: the agent SIGKILLed and restarted twice at random
// moments of a flood. Its summary must count what the program queued,
// and --cleanup must leave no pin and no link.
func (c *chaos) restartAgentMidJob() {
	d := mpitest.NewAgentDirs(c.t)
	ag := mpitest.StartAgent(c.t, c.bin, d, "")
	links, progs := map[uint32]bool{}, map[uint32]bool{}
	const rounds = 10
	argv := c.floodArgv(rounds, 500)
	j := c.startJob(argv)
	ranks := c.ranksOf(c.flood, 2, "mca_pml_ob1")
	restarts := 0
	for range 2 {
		time.Sleep(c.between(300*time.Millisecond, 2*time.Second))
		sampleBPF(ag.Cmd.Process.Pid, links, progs)
		ag.Stop(c.t, syscall.SIGKILL)
		time.Sleep(c.between(100*time.Millisecond, 1500*time.Millisecond))
		ag = mpitest.StartAgent(c.t, c.bin, d, "")
		restarts++
	}
	res := j.wait(c.t)
	ok := c.checkUnchanged("agent restarted mid-job", argv, res)
	sums := finishedSummaries(c.t, d, ag, ranks)
	want := uint64(rounds * (floodMessages - freeListMax))
	got := sums[0].total("ob1.send_pending.new")
	fmt.Printf("chaos: agent SIGKILLed and restarted %d times mid-job: %d queued sends counted, the program queued %d\n", restarts, got, want)
	if !withinTolerance(got, want) {
		c.t.Errorf("agent restarted %d times: %d sends queued, the program queued %d (± 2%%)\n%s", restarts, got, want, ag.Log(c.t))
		ok = false
	}
	sampleBPF(ag.Cmd.Process.Pid, links, progs)
	// While the agent runs, the lookup by id must see its links, or the
	// check after --cleanup could never fail.
	found := 0
	for id := range links {
		if l, err := link.NewFromID(link.ID(id)); err == nil {
			l.Close()
			found++
		}
	}
	if found == 0 {
		c.t.Errorf("none of the running agent's %d links is found by id: the leftover check is blind", len(links))
		ok = false
	}
	ag.Stop(c.t, syscall.SIGTERM)
	if out, err := exec.Command(c.bin, "agent", "--cleanup", "--config", d.Config, "--state-dir", d.State, "--pin-dir", d.Pin).CombinedOutput(); err != nil {
		c.t.Errorf("agent --cleanup: %v\n%s", err, out)
		ok = false
	}
	if ents, err := os.ReadDir(d.Pin); err == nil && len(ents) > 0 {
		c.t.Errorf("pins left in %s after --cleanup: %d entries", d.Pin, len(ents))
		ok = false
	}
	if c.checkReleased("agent restarted mid-job", links, progs) && ok {
		c.mu.Lock()
		c.faults["agent SIGKILLed and restarted"] += restarts
		c.mu.Unlock()
	}
}

// ranksExitDuringAttach: `mpiprobe -p` on ranks that exit at a random
// moment during discovery or attach. mpiprobe must say the processes
// went away (or trace them to their end), never blame the kernel, and
// release every link; the job ends as unprobed.
func (c *chaos) ranksExitDuringAttach() {
	sleep := c.rng.IntN(600)
	argv := c.ompi.Command(4, nil, c.hostile, "-n", "1", "-s", strconv.Itoa(sleep))
	j := c.startJob(argv)
	ranks := c.ranksOf(c.hostile, 4, "libmpi.so.40")
	args := []string{"--json", "--interval", "100ms"}
	for _, pid := range ranks {
		args = append(args, "-p", strconv.Itoa(pid))
	}
	p := c.startProbe(args...)
	for {
		p.sample()
		select {
		case <-p.done:
		case <-time.After(20 * time.Millisecond):
			continue
		}
		break
	}
	code := p.wait(c.t)
	stderr := p.stderr.String()
	ok := c.checkUnchanged("ranks exit while attached", argv, j.wait(c.t))
	switch {
	case strings.Contains(stderr, "kernel refused"):
		c.t.Errorf("ranks exiting during attach reported as a kernel refusal (exit %d):\n%s", code, stderr)
		ok = false
	case code != 0 && !regexp.MustCompile(`exited while (attaching|examining)|no process with pid`).MatchString(stderr):
		c.t.Errorf("ranks exiting during attach: mpiprobe exit %d without saying the processes went away:\n%s", code, stderr)
		ok = false
	}
	if c.checkReleased("ranks exit while attached", p.links, p.progs) && ok {
		switch {
		case regexp.MustCompile(`exited while (attaching|examining)`).MatchString(stderr):
			c.survived("ranks exited during attach (race reported)")
		case code != 0:
			c.survived("ranks exited during attach (gone before discovery)")
		default:
			c.survived("ranks exited during attach (traced to their end)")
		}
	}
}

// commSlotsFull: --collectives with 2 communicator slots on a program that
// uses 6 communicators. The calls that find no slot must be counted as
// dropped and reported; the job ends as unprobed; the session's pins go.
func (c *chaos) commSlotsFull() {
	argv := c.ompi.Command(2, []string{"--mca", "pml", "ob1", "--mca", "btl", "self,vader"}, c.colls, "2")
	// The summary goes to -o FILE, so stdout is the job's own output.
	sumFile := filepath.Join(c.t.TempDir(), "summary.json")
	p := c.startProbe(append([]string{"-v", "--json", "-o", sumFile, "--interval", "100ms", "--collectives", "--comm-slots", "2", "--"}, argv...)...)
	p.waitLog("msg=tracing", 60*time.Second)
	p.sample()
	code := p.wait(c.t)
	sum, _ := os.ReadFile(sumFile)
	var s summary
	if code != 0 || json.Unmarshal(sum, &s) != nil {
		c.t.Errorf("comm slots full: mpiprobe exit %d, want 0 with a JSON summary in -o FILE:\n%s\n%s", code, sum, p.stderr.String())
		return
	}
	ok := c.checkUnchanged("comm slots full", argv, jobResult{code: 0, out: normalize(p.stdout.String())})
	var dropped uint64
	for _, d := range s.Dropped {
		if strings.Contains(d.What, "communicator slot") {
			dropped += d.Count
		}
	}
	if dropped == 0 {
		c.t.Errorf("comm slots full: no dropped collective calls reported: %+v", s.Dropped)
		ok = false
	}
	if _, err := os.Stat(filepath.Join("/sys/fs/bpf/mpiprobe/coll", strconv.Itoa(p.cmd.Process.Pid))); err == nil {
		c.t.Errorf("comm slots full: the session's collective pins are left behind")
		ok = false
	}
	if c.checkReleased("comm slots full", p.links, p.progs) && ok {
		c.survived("communicator slots full")
	}
}

// traceRingFull: `mpiprobe trace` with the smallest ring on a program of
// many cheap calls. The lost calls must be counted and reported, the job
// ends as unprobed, every link is released.
func (c *chaos) traceRingFull() {
	argv := c.ompi.Command(2, []string{"--mca", "pml", "ob1", "--mca", "btl", "self,vader"}, c.million, "50000")
	file := filepath.Join(c.t.TempDir(), "chaos.mpitrace")
	p := c.startProbe(append([]string{"trace", "-o", file, "--ring", "4K", "--"}, argv...)...)
	go func() {
		for {
			p.sample()
			select {
			case <-p.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	code := p.wait(c.t)
	out := p.stdout.String()
	lost := regexp.MustCompile(`(\d+) calls LOST`).FindStringSubmatch(out)
	ok := true
	if code != 0 || lost == nil {
		c.t.Errorf("trace ring full: mpiprobe exit %d, want 0 and the lost calls reported:\n%s\n%s", code, out, p.stderr.String())
		ok = false
	}
	// The program's own lines come first; mpiprobe's trace line last.
	var prog []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "mpiprobe") && !strings.Contains(l, "LOST") && !strings.HasPrefix(l, "trace") && l != "" {
			prog = append(prog, l)
		}
	}
	if ok && !slices.Equal(strings.Split(normalize(strings.Join(prog, "\n")), "\n"), strings.Split(c.reference(argv).out, "\n")) {
		c.t.Errorf("trace ring full: the program printed\n%s\nunprobed\n%s", strings.Join(prog, "\n"), c.reference(argv).out)
		ok = false
	}
	if c.checkReleased("trace ring full", p.links, p.progs) && ok {
		c.survived("trace ring full")
	}
}

// stateDirFullAtJobEnd: the agent's state directory (a 1 MiB tmpfs) fills
// at a random moment of a job and is freed after the job ended, either
// while the same agent runs or after it was restarted (SIGTERM or
// SIGKILL) while still full. The job's summary is written then, with
// every queued send; the job ends as unprobed.
func (c *chaos) stateDirFullAtJobEnd() {
	d := mpitest.NewAgentDirs(c.t)
	d.State = mpitest.Tmpfs(c.t, "1m")
	c.underAgent("state directory full at a job's end", d, func(ag *mpitest.Agent) (*mpitest.Agent, bool) {
		return c.fillStateDir(d, ag)
	})
}

// fillStateDir is stateDirFullAtJobEnd's fault under agent ag.
func (c *chaos) fillStateDir(d mpitest.AgentDirs, ag *mpitest.Agent) (*mpitest.Agent, bool) {
	rounds := 2 + c.rng.IntN(3)
	argv := c.floodArgv(rounds, 500)
	j := c.startJob(argv)
	ranks := c.ranksOf(c.flood, 2, "mca_pml_ob1")
	time.Sleep(c.between(200*time.Millisecond, time.Second))
	fill(c.t, d.State)
	res := j.wait(c.t)
	ok := c.checkUnchanged("state directory full", argv, res)
	how := "same agent"
	switch c.rng.IntN(3) {
	case 1:
		how = "agent stopped while full"
		ag.Stop(c.t, syscall.SIGTERM)
	case 2:
		how = "agent killed while full"
		ag.Stop(c.t, syscall.SIGKILL)
	}
	time.Sleep(c.between(100*time.Millisecond, 1500*time.Millisecond))
	if err := os.Remove(filepath.Join(d.State, "filler")); err != nil {
		c.t.Fatal(err)
	}
	if how != "same agent" {
		ag = mpitest.StartAgent(c.t, c.bin, d, "")
	}
	s := finishedSummaries(c.t, d, ag, ranks)[0]
	fmt.Printf("chaos: state directory full at a job's end (%s): %d queued sends in the summary written once space returned\n", how, s.total("ob1.send_pending.new"))
	return ag, checkFloodSummary(c.t, "state directory full ("+how+")", s, rounds, ag.Log(c.t)) && ok
}

// underAgent runs fault under an agent of its own on directories d and
// stops the agent the fault ended with; kind counts as survived when the
// fault's outcome checked out.
func (c *chaos) underAgent(kind string, d mpitest.AgentDirs, fault func(ag *mpitest.Agent) (*mpitest.Agent, bool)) {
	ag, ok := fault(mpitest.StartAgent(c.t, c.bin, d, ""))
	ag.Stop(c.t, syscall.SIGTERM)
	if ok {
		c.survived(kind)
	}
}

// jobWhileAgentDown: the agent is stopped (SIGTERM while a long job keeps
// its probes, or SIGKILL) and a job runs from start to end before the next
// agent starts. The next agent writes the job's summary with its job id
// and ranks as /proc named them and every queued send.
func (c *chaos) jobWhileAgentDown() {
	d := mpitest.NewAgentDirs(c.t)
	c.underAgent("job entirely while no agent runs", d, func(ag *mpitest.Agent) (*mpitest.Agent, bool) {
		return c.runWhileDown(d, ag)
	})
}

// runWhileDown is jobWhileAgentDown's fault under agent ag.
func (c *chaos) runWhileDown(d mpitest.AgentDirs, ag *mpitest.Agent) (*mpitest.Agent, bool) {
	how := "agent killed"
	var long *job
	var stop string
	if c.rng.IntN(2) == 0 {
		how = "agent stopped during another job"
		stop = filepath.Join(c.t.TempDir(), "stop")
		long = c.startJob(c.ompi.Command(2, floodMCA(true), c.soak, "-f", stop))
		c.ranksOf(c.soak, 2, "mca_pml_ob1")
		time.Sleep(time.Second) // seen by the agent
		ag.Stop(c.t, syscall.SIGTERM)
	} else {
		ag.Stop(c.t, syscall.SIGKILL)
	}
	rounds := 1 + c.rng.IntN(3)
	argv := c.floodArgv(rounds, 300)
	j := c.startJob(argv)
	ranks := c.ranksOf(c.flood, 2, "mca_pml_ob1")
	want := liveJob(c.t, ranks[0])
	res := j.wait(c.t)
	ok := c.checkUnchanged("job while no agent runs", argv, res)
	time.Sleep(c.between(0, time.Second))
	ag = mpitest.StartAgent(c.t, c.bin, d, "")
	s := finishedSummaries(c.t, d, ag, ranks)[0]
	fmt.Printf("chaos: job entirely while no agent ran (%s): job %q, %d queued sends in the next agent's summary\n", how, s.Jobs[0].Job, s.total("ob1.send_pending.new"))
	if s.Jobs[0].Job != want {
		c.t.Errorf("job while no agent ran (%s): summary names job %q, want %q", how, s.Jobs[0].Job, want)
		ok = false
	}
	ok = checkFloodSummary(c.t, "job while no agent ran ("+how+")", s, rounds, ag.Log(c.t)) && ok
	if long != nil {
		if err := os.WriteFile(stop, nil, 0o600); err != nil {
			c.t.Fatal(err)
		}
		long.wait(c.t)
	}
	return ag, ok
}

// abortUnderAgent: rank 0 of a flood calls MPI_Abort with a random error
// code after a random number of rounds. The agent's summary names
// MPI_Abort and the code for rank 0, and how the launcher ended rank 1;
// the job exits as unprobed.
func (c *chaos) abortUnderAgent() {
	d := mpitest.NewAgentDirs(c.t)
	c.underAgent("MPI_Abort under the agent", d, func(ag *mpitest.Agent) (*mpitest.Agent, bool) {
		return ag, c.abortJob(d, ag)
	})
}

// abortJob is abortUnderAgent's fault under agent ag.
func (c *chaos) abortJob(d mpitest.AgentDirs, ag *mpitest.Agent) bool {
	code := 1 + c.rng.IntN(120)
	argv := c.floodArgv(1+c.rng.IntN(2), 200, "-a", strconv.Itoa(code))
	j := c.startJob(argv)
	ranks := c.ranksOf(c.flood, 2, "mca_pml_ob1")
	res := j.wait(c.t)
	ok := true
	if want := c.reference(argv); res.code != want.code {
		c.t.Errorf("MPI_Abort(%d) under the agent: the job exited %d, unprobed %d", code, res.code, want.code)
		ok = false
	}
	s := finishedSummaries(c.t, d, ag, ranks)[0]
	return checkAbortSummary(c.t, fmt.Sprintf("MPI_Abort(%d) under the agent", code), s, code) && ok
}
