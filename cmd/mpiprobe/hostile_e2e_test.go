package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// hostileJobs are job ids given to real MPICH singletons as
// PMIX_NAMESPACE (with PMIX_RANK=0, the identity of "another PMIx
// launcher"). accepted says whether mpiprobe takes the id as it is (it
// refuses control characters, invalid UTF-8 and ids over 255 bytes, and
// the job is then unknown).
var hostileJobs = []struct {
	name, id string
	accepted bool
}{
	{"quotes", `q"uo'te`, true},
	{"path traversal", "../../../etc/passwd", true},
	{"dot", ".", true},
	{"dotdot", "..", true},
	{"label syntax", `x"} 1 fake_metric{a="b`, true},
	{"space comma equals backslash", `a b,c=d\e`, true},
	{"bidi override", "\u202eevil\u202c", true},
	{"zero width", "a\u200bb", true},
	{"shell", "$(touch /tmp/mpiprobe-pwned);rm -rf", true},
	{"printf", "%s%n%x%p", true},
	{"leading dash", "-rf", true},
	{"json", `{"job":"x"}`, true},
	{"slashes only", strings.Repeat("/", 200), true},
	{"newline injection", "a\nINJECTED line", false},
	{"ansi escape", "\x1b[2J\x1b[31mred", false},
	{"osc title", "\x1b]0;owned\x07", false},
	{"invalid utf-8", "bad\xff\xfe", false},
	{"too long", strings.Repeat("j", 300), false},
	{"carriage return", "ok\rINJECTED", false},
}

// hostileComm is the communicator name the program sets (MPI_Comm_set_name).
const hostileComm = "comm\n\x1b[31mINJECTED\"/../\xff"

// hostileAPI is the function name under which the program hands one more
// error to MPICH's error path (HOSTILE_API): the instance name mpiprobe
// reads for it, "MPI_ERR_RANK in <hostileAPI>", comes from the traced
// process. It fits the 39 bytes the BPF side copies.
const hostileAPI = "api\n\x1b[31mINJECTED\r\u202e\"/..\xff"

// hostileDetail is the instance name of the hostileAPI error as it is
// read; hostileErrors is how many mpi.error a hostile singleton counts:
// its 3 failed sends and the hostileAPI error.
const (
	hostileDetail = "MPI_ERR_RANK in " + hostileAPI
	hostileErrors = 4
)

// storedDetail is hostileDetail as a JSON summary keeps it: its invalid
// byte is U+FFFD.
var storedDetail = strings.ToValidUTF8(hostileDetail, "\uFFFD")

// checkDetailShown fails unless out shows the instance name detail
// (hostileDetail as read, or storedDetail from a JSON summary) escaped, as
// text.Escape writes it (form: the text around it, e.g. "[%s]" in a
// warning line).
func checkDetailShown(t *testing.T, what, out, form, detail string) {
	t.Helper()
	if w := fmt.Sprintf(form, text.Escape(detail)); !strings.Contains(out, w) {
		t.Errorf("%s does not show the instance name as %s:\n%s", what, w, out)
	}
}

// hostileHost is the node's name in the UTS namespace mpiprobe runs in.
const hostileHost = `h\033[31m"/..\377`

// checkShown fails when out, something mpiprobe printed or wrote (JSON and
// the metrics page included), holds a
// character that a terminal or a line-based reader would interpret: an
// escape, a carriage return, a bidi control, invalid UTF-8, or a line an
// injected newline began.
func checkShown(t *testing.T, what string, out []byte) {
	t.Helper()
	if !utf8.Valid(out) {
		t.Errorf("%s: invalid UTF-8 reaches the output", what)
	}
	for _, r := range string(out) {
		if r != '\n' && r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)) {
			t.Errorf("%s: raw control character %U in the output:\n%q", what, r, out)
			return
		}
	}
	if regexp.MustCompile(`(?m)^INJECTED`).Match(out) {
		t.Errorf("%s: an injected line starts a line of output:\n%s", what, out)
	}
}

// requireUnshare fails or skips (mpitest.Require) without util-linux's unshare.
func requireUnshare(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		mpitest.Require(t, "unshare (util-linux)")
	}
}

// inUTS returns the command line that runs argv in a new UTS namespace
// whose hostname is hostileHost.
func inUTS(argv ...string) []string {
	return append([]string{"unshare", "--uts", "--", "sh", "-c", `printf '` + hostileHost + `' > /proc/sys/kernel/hostname && exec "$@"`, "sh"}, argv...)
}

// hostileEnv is the environment of a hostile rank with job id id.
func hostileEnv(id string) []string {
	return append(os.Environ(), "PMIX_RANK=0", "PMIX_NAMESPACE="+id, "HOSTILE_COMM="+hostileComm, "HOSTILE_API="+hostileAPI,
		"SLURM_JOB_ID=1\nINJECTED", "OMPI_COMM_WORLD_SIZE=\x1b[2J", "MPI_LOCALRANKID=../x")
}

// TestHostileStringsSession runs MPICH singletons with hostile job ids,
// communicator names, environment and host name, one after the other,
// under one `mpiprobe --json --collectives --` in a UTS namespace: the
// terminal output (the warning lines included) escapes them, the JSON
// summary keeps them exactly, and its table (`mpiprobe report --merge`)
// escapes them.
func TestHostileStringsSession(t *testing.T) {
	mpich := mpitest.MPICH()
	mpitest.RequireE2E(t, mpich)
	requireUnshare(t)
	bin := mpitest.BuildMpiprobe(t)
	prog := mpitest.Build(t, mpich, "hostile")
	// The ids travel as arguments (any byte but NUL), each set as
	// PMIX_NAMESPACE of one singleton.
	script := `p=$1; shift; for id in "$@"; do PMIX_NAMESPACE=$id "$p" -n 3 || exit 1; done`
	argv := inUTS(bin, "--json", "-C", "1", "-T", "0", "--interval", "100ms", "--collectives", "--", "sh", "-c", script, "sh", prog)
	for _, hj := range hostileJobs {
		argv = append(argv, hj.id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = hostileEnv("unused")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("mpiprobe: %v\n%s", err, stderr.String())
	}
	checkShown(t, "stderr", stderr.Bytes())
	checkShown(t, "stdout (the programs' lines and the JSON summary)", stdout.Bytes())
	i := strings.Index(stdout.String(), "{\n")
	if i < 0 {
		t.Fatalf("no JSON summary:\n%s", stdout.String())
	}
	var s struct {
		Hosts []string `json:"hosts"`
		Jobs  []struct {
			Job   string `json:"job"`
			Ranks []struct {
				Events []summaryEvent `json:"events"`
			} `json:"ranks"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(stdout.Bytes()[i:], &s); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, stdout.String()[i:])
	}
	if want := strings.ToValidUTF8("h\x1b[31m\"/..\xff", "\uFFFD"); len(s.Hosts) != 1 || s.Hosts[0] != want {
		t.Errorf("JSON hosts %q, want [%q]", s.Hosts, want)
	}
	errs := map[string]uint64{}
	var total, hostile uint64
	for _, j := range s.Jobs {
		for _, r := range j.Ranks {
			for _, e := range r.Events {
				if e.Event == "mpi.error" {
					errs[j.Job] += e.Count
					total += e.Count
					if e.Detail == storedDetail {
						hostile += e.Count
					}
				}
			}
		}
	}
	if hostile != uint64(len(hostileJobs)) {
		t.Errorf("JSON: %d mpi.error with the instance name %q, want one per job (%d)", hostile, hostileDetail, len(hostileJobs))
	}
	// The warning lines (on stderr with --json) show the instance name escaped.
	checkDetailShown(t, "warning lines", stderr.String(), "[%s]", hostileDetail)
	for _, hj := range hostileJobs {
		n, ok := errs[hj.id]
		switch {
		case hj.accepted && n != hostileErrors:
			t.Errorf("job %q: mpi.error = %d (job found: %v), want the program's %d", hj.id, n, ok, hostileErrors)
		case !hj.accepted && ok:
			t.Errorf("job %q: a job id with control characters, invalid UTF-8 or over 255 bytes was taken", hj.id)
		}
	}
	if want := uint64(hostileErrors * len(hostileJobs)); total != want {
		t.Errorf("mpi.error over all jobs = %d, want %d", total, want)
	}

	// The same summary as a table, of the first job.
	file := filepath.Join(t.TempDir(), "summary.json")
	if err := os.WriteFile(file, stdout.Bytes()[i:], 0o644); err != nil {
		t.Fatal(err)
	}
	table, err := exec.Command(bin, "report", "--merge", "--job="+hostileJobs[0].id, file).CombinedOutput()
	if err != nil {
		t.Fatalf("mpiprobe report --merge: %v\n%s", err, table)
	}
	checkShown(t, "mpiprobe report --merge (table)", table)
	checkDetailShown(t, "mpiprobe report --merge (table)", string(table), "mpi.error (%s)", storedDetail)
}

// TestHostileStringsAgent runs the same hostile singletons under an agent
// in a namespace with a hostile host name: its log, journal fields,
// metrics page (promtool), state file names, warning lines (journal
// MESSAGE), `mpiprobe jobs` (table and JSON) and a stored summary's table
// (`mpiprobe report --merge`) show every string escaped or exactly, and
// nothing is written outside the state directory.
func TestHostileStringsAgent(t *testing.T) {
	mpich := mpitest.MPICH()
	mpitest.RequireE2E(t, mpich)
	requireUnshare(t)
	bin := mpitest.BuildMpiprobe(t)
	prog := mpitest.Build(t, mpich, "hostile")
	d := mpitest.NewAgentDirs(t)
	socket, entries := listenJournal(t)
	ag := mpitest.StartAgent(t, bin, d, socket, inUTS()...)
	parent := filepath.Dir(d.State)
	before, _ := os.ReadDir(parent)

	var pids []int
	for _, hj := range hostileJobs {
		cmd := exec.Command(prog, "-n", "3")
		cmd.Env = hostileEnv(hj.id)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", hj.name, err, out.String())
		}
		pids = append(pids, cmd.Process.Pid)
	}
	// Every rank's job has a finished summary (the node's other jobs,
	// which the agent also sees, are left out): accepted ids their own,
	// refused ones a job per process.
	type stored struct {
		file, job string
	}
	byPID := map[int]stored{}
	deadline := time.Now().Add(60 * time.Second)
	for len(byPID) < len(pids) && time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(d.State, "jobs", "*.json"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			var s struct {
				Jobs []struct {
					Job   string `json:"job"`
					Ranks []struct {
						PID int `json:"pid"`
						End struct {
							State string `json:"state"`
						} `json:"end"`
					} `json:"ranks"`
				} `json:"jobs"`
			}
			if err := json.Unmarshal(b, &s); err != nil || len(s.Jobs) != 1 {
				t.Fatalf("%s: not one job's JSON summary: %v", f, err)
			}
			for _, r := range s.Jobs[0].Ranks {
				if slices.Contains(pids, r.PID) && r.End.State != "running" {
					byPID[r.PID] = stored{file: filepath.Base(f), job: s.Jobs[0].Job}
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	files := map[string]bool{}
	for i, hj := range hostileJobs {
		st, ok := byPID[pids[i]]
		if !ok {
			t.Errorf("job %q (pid %d): no finished summary", hj.id, pids[i])
			continue
		}
		if files[st.file] {
			t.Errorf("job %q shares the summary file %q with another job", hj.id, st.file)
		}
		files[st.file] = true
		if hj.accepted && st.job != hj.id {
			t.Errorf("summary %s: job %q, want %q exactly", st.file, st.job, hj.id)
		}
		if !hj.accepted && st.job == hj.id {
			t.Errorf("summary %s: a job id with control characters or invalid UTF-8 was taken", st.file)
		}
		if !utf8.ValidString(st.file) || strings.ContainsFunc(st.file, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }) ||
			strings.HasPrefix(st.file, ".") || strings.Contains(st.file, "/") {
			t.Errorf("state file name %q is not a safe file name", st.file)
		}
	}
	after, _ := os.ReadDir(parent)
	if len(after) != len(before) {
		t.Errorf("the agent created files next to its state dir: %d entries before, %d after", len(before), len(after))
	}
	if _, err := os.Stat("/tmp/mpiprobe-pwned"); err == nil {
		t.Errorf("a job id was run by a shell")
	}

	page := ag.Scrape(t) // promtool checks it
	// Label values are escaped by text.Escape: no control, bidi override
	// or invalid byte is left for a dashboard to interpret.
	checkShown(t, "metrics page", []byte(page))
	for _, hj := range hostileJobs {
		if v, ok := mpitest.MetricValue(page, "mpiprobe_events_total", map[string]string{"mpi_job": text.Escape(hj.id), "event": "mpi.error"}); hj.accepted && (!ok || v != hostileErrors) {
			t.Errorf("metrics: job %q mpi.error = %v (found %v), want %d", hj.id, v, ok, hostileErrors)
		}
	}
	checkShown(t, "agent log", []byte(ag.Log(t)))
	es := entries()
	if len(es) == 0 {
		t.Errorf("no journal entries")
	}
	var messages strings.Builder
	for _, e := range es {
		for k, v := range e {
			if !regexp.MustCompile(`^[A-Z0-9][A-Z0-9_]*$`).MatchString(k) {
				t.Errorf("journal field name %q", k)
			}
			if k == "MESSAGE" {
				checkShown(t, "journal MESSAGE", []byte(v))
				messages.WriteString(v + "\n")
			}
		}
	}
	checkDetailShown(t, "journal MESSAGEs (warning lines)", messages.String(), "[%s]", hostileDetail)

	out, err := exec.Command(bin, "jobs", "--state-dir", d.State).CombinedOutput()
	if err != nil {
		t.Fatalf("mpiprobe jobs: %v\n%s", err, out)
	}
	checkShown(t, "mpiprobe jobs", out)
	out, err = exec.Command(bin, "jobs", "--state-dir", d.State, "--json").Output()
	if err != nil || !json.Valid(out) {
		t.Errorf("mpiprobe jobs --json: %v, valid JSON %v", err, json.Valid(out))
	}
	checkShown(t, "mpiprobe jobs --json", out)
	if st, ok := byPID[pids[0]]; ok {
		out, err = exec.Command(bin, "report", "--merge", filepath.Join(d.State, "jobs", st.file)).CombinedOutput()
		if err != nil {
			t.Fatalf("mpiprobe report --merge %s: %v\n%s", st.file, err, out)
		}
		checkShown(t, "mpiprobe report --merge (table)", out)
		checkDetailShown(t, "mpiprobe report --merge (table)", string(out), "mpi.error (%s)", storedDetail)
	}
	ag.Stop(t, syscall.SIGTERM)
}

// TestHostileCommName: rank 0 of a real MPICH job waits in an allreduce
// on a communicator named with newlines, escapes, quotes, a path and an
// invalid byte while rank 1 sleeps; `mpiprobe status` (text and JSON),
// with the session's collective history, shows the name escaped.
func TestHostileCommName(t *testing.T) {
	mpich := mpitest.MPICH()
	mpitest.RequireE2E(t, mpich)
	bin := mpitest.BuildMpiprobe(t)
	prog := mpitest.Build(t, mpich, "hostile")
	argv := append([]string{bin, "--collectives", "--"}, mpich.Command(2, nil, prog, "-n", "1", "-s", "15000")...)
	sess := exec.Command(argv[0], argv[1:]...)
	sess.Env = append(os.Environ(), "HOSTILE_COMM="+hostileComm)
	var sessOut bytes.Buffer
	sess.Stdout, sess.Stderr = &sessOut, &sessOut
	if err := sess.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Process.Kill() })
	ranks, err := mpitest.WaitRanksFor(30*time.Second, prog, 2, "libmpich")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // rank 0 is inside the last allreduce
	args := []string{"status"}
	for _, pid := range ranks {
		args = append(args, "-p", strconv.Itoa(pid))
	}
	text, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("mpiprobe status: %v\n%s", err, text)
	}
	checkShown(t, "mpiprobe status", text)
	if want := strconv.Quote("comm\n\x1b[31mINJECTED\"/../\xff"); !strings.Contains(string(text), want) {
		t.Errorf("mpiprobe status does not show the communicator name as %s:\n%s", want, text)
	}
	js, err := exec.Command(bin, append(args, "--json")...).Output()
	if err != nil || !json.Valid(js) {
		t.Fatalf("mpiprobe status --json: %v, valid JSON %v", err, json.Valid(js))
	}
	checkShown(t, "mpiprobe status --json", js)
	if !strings.Contains(string(js), `"comm_name": "comm\n\u001b[31mINJECTED\"/../\ufffd"`) {
		t.Errorf("mpiprobe status --json does not hold the communicator name (invalid byte as U+FFFD):\n%s", js)
	}
	if err := sess.Wait(); err != nil {
		t.Errorf("session: %v\n%s", err, sessOut.String())
	}
	checkShown(t, "session output", sessOut.Bytes())
}
