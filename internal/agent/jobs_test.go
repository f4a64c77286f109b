package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/probes"
)

func proc(pid int, job, rank string) agg.Proc {
	return agg.Proc{PID: pid, Identity: identity.Identity{Host: "n1", Job: job, Rank: rank, Size: "2"}}
}

func TestTrackerJobEnds(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tr := newTracker()
	tr.add(proc(10, "j1", "0"), 100, time.Time{}, t0)
	tr.add(proc(11, "j1", "1"), 101, time.Time{}, t0)
	tr.add(proc(20, "j2", "0"), 200, time.Time{}, t0)
	if _, isNew := tr.add(proc(10, "j1", "0"), 100, time.Time{}, t0); isNew {
		t.Fatal("the same process added twice counts as new")
	}
	if j := tr.end(10, agg.End{Kind: agg.Exited, At: t0.Add(time.Second)}); j != nil {
		t.Fatalf("job j1 finished with rank 1 running: %+v", j)
	}
	if j := tr.end(10, agg.End{Kind: agg.Exited}); j != nil {
		t.Fatal("a second end of the same process finished its job")
	}
	j := tr.end(11, agg.End{Kind: agg.Signaled, Signal: 9, At: t0.Add(2 * time.Second)})
	if j == nil || j.Key != "j1" || !j.Finished.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("last rank of j1 ended: got %+v", j)
	}
	if got := tr.running(); len(got) != 1 || got[0].Key != "j2" {
		t.Fatalf("running jobs = %+v, want j2", got)
	}
	// A late rank of a finished job reopens it.
	tr.add(proc(12, "j1", "2"), 102, time.Time{}, t0.Add(3*time.Second))
	if got := tr.running(); len(got) != 2 {
		t.Fatalf("a new rank did not reopen j1: running %+v", got)
	}
	tr.forget(tr.jobs["j2"])
	if _, ok := tr.procs[20]; ok || tr.jobs["j2"] != nil {
		t.Fatal("forget left the job or its process")
	}
}

func TestTrackerUnknownJobAndPidReuse(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tr := newTracker()
	tr.add(proc(30, identity.Unknown, identity.Unknown), 300, time.Time{}, t0)
	tr.add(proc(31, identity.Unknown, identity.Unknown), 301, time.Time{}, t0)
	if len(tr.jobs) != 2 || tr.jobs["pid-30"] == nil {
		t.Fatalf("processes without a job identity must be jobs of their own: %v", tr.jobs)
	}
	tr.end(30, agg.End{Kind: agg.Exited})
	// pid 30 reused by another process (other start time) of job j3.
	p, isNew := tr.add(proc(30, "j3", "0"), 999, time.Time{}, t0)
	if !isNew || p.Job != "j3" || tr.jobs["pid-30"] != nil {
		t.Fatalf("pid reuse: got %+v new=%v, jobs %v", p, isNew, tr.jobs)
	}
}

// A job a user named like the agent's own keys stays a job of its own.
func TestTrackerJobNamedLikeAPid(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tr := newTracker()
	tr.add(proc(42, identity.Unknown, identity.Unknown), 420, time.Time{}, t0)
	tr.add(proc(43, "pid-42", "0"), 430, time.Time{}, t0)
	tr.add(proc(44, "job-"+strings.Repeat("0", 16), "0"), 440, time.Time{}, t0)
	if len(tr.jobs) != 3 {
		t.Fatalf("a job named pid-42 or job-00… merged with another: jobs %v", tr.jobs)
	}
	if j := tr.end(42, agg.End{Kind: agg.Exited}); j == nil || len(j.PIDs) != 1 {
		t.Fatalf("the unidentified process 42 is not a job of its own: %+v", j)
	}
}

func TestStartupOf(t *testing.T) {
	wall := func(ns uint64) time.Time { return time.Unix(0, int64(ns)) }
	var ompi, mpich, partial, bogus [probes.NumMarks]uint64
	ompi[probes.MarkInitEnter], ompi[probes.MarkInitExit] = 1000, 9000
	ompi[probes.MarkPMIxStart], ompi[probes.MarkPMIxEnd] = 2000, 2500
	ompi[probes.MarkFinEnter], ompi[probes.MarkFinExit] = 20000, 20700
	mpich[probes.MarkInitEnter], mpich[probes.MarkInitExit] = 1000, 9000
	mpich[probes.MarkUCXStart], mpich[probes.MarkUCXEnd] = 3000, 4000
	partial[probes.MarkInitExit] = 9000 // attached in the middle of MPI_Init
	partial[probes.MarkFinEnter] = 20000
	bogus[probes.MarkInitEnter], bogus[probes.MarkInitExit] = 1000, 2000
	bogus[probes.MarkUCXStart], bogus[probes.MarkUCXEnd] = 1500, 9000 // longer than MPI_Init
	tests := []struct {
		name string
		ns   [probes.NumMarks]uint64
		want agg.Startup
	}{
		{"open mpi", ompi, agg.Startup{InitStart: wall(1000), Init: 8000, Modex: 500, ModexVia: "PMIx fence", Finalize: 700}},
		{"mpich", mpich, agg.Startup{InitStart: wall(1000), Init: 8000, Modex: 1000, ModexVia: "UCX address exchange"}},
		{"partial", partial, agg.Startup{}},
		{"modex longer than init", bogus, agg.Startup{InitStart: wall(1000), Init: 1000}},
	}
	for _, tt := range tests {
		if got := startupOf(tt.ns, wall); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestLinkNames(t *testing.T) {
	// One file as two libraries (Open MPI 5.0's libmpi is also ob1): the
	// names differ, and each gives the file back.
	mpi := probes.Target{Library: probes.OMPILibMPI, Dev: 2049, Inode: 123456}
	ob1 := mpi
	ob1.Library = probes.OMPIPmlOb1
	pal := mpi
	pal.Library = probes.Library("libopen-pal")
	if strings.Contains(linkName("c", pal, 0), ".") {
		t.Errorf("link name %q has a dot, which the BPF file system refuses", linkName("c", pal, 0))
	}
	if linkName("c", mpi, 0) == linkName("c", ob1, 0) {
		t.Errorf("libmpi and ob1 of one file share the link name %q", linkName("c", mpi, 0))
	}
	for _, name := range []string{linkName("c", mpi, 7), linkName("c", ob1, 7), linkName("c", pal, 7), "c-2049-123456-7"} {
		prefix, dev, ino, ok := parseLinkName(name)
		if !ok || prefix != "c" || dev != 2049 || ino != 123456 {
			t.Fatalf("parseLinkName(%q) = %q %d %d %v", name, prefix, dev, ino, ok)
		}
	}
	for _, bad := range []string{"", "c-1-2", "c-x-2-3", "-1-2-3", "c-1-2-3-4", "c-1-2-x", "c-1-2-libmpi_x"} {
		if _, _, _, ok := parseLinkName(bad); ok {
			t.Errorf("parseLinkName(%q) accepted", bad)
		}
	}
}

func TestParseLocks(t *testing.T) {
	const locks = `1: POSIX  ADVISORY  WRITE 812 00:1a:977 0 EOF
2: FLOCK  ADVISORY  WRITE 4242 00:1f:1093 0 EOF
2: -> FLOCK  ADVISORY  WRITE 5151 00:1f:1093 0 EOF
3: FLOCK  ADVISORY  WRITE 77 103:02:1093 0 EOF
`
	tests := []struct {
		major, minor uint32
		ino          uint64
		want         int
	}{
		{0, 0x1f, 1093, 4242}, // the holder, not the waiter
		{0x103, 0x02, 1093, 77},
		{0, 0x1a, 977, 0}, // a POSIX lock is not an agent's flock
		{0, 0x1f, 1094, 0},
	}
	for _, tc := range tests {
		if got := parseLocks([]byte(locks), tc.major, tc.minor, tc.ino); got != tc.want {
			t.Errorf("parseLocks(%x:%x:%d) = %d, want %d", tc.major, tc.minor, tc.ino, got, tc.want)
		}
	}
}

// TestLockPinDir: a second lock of the same directory fails naming the
// holder (this process, as /proc/locks shows it) and the config file.
func TestLockPinDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pins")
	l, err := lockPinDir(dir, " (in /etc/x.conf, or with --state-dir and --pin-dir)")
	if err != nil {
		t.Fatal(err)
	}
	defer l.release()
	_, err = lockPinDir(dir, " (in /etc/x.conf, or with --state-dir and --pin-dir)")
	want := "another mpiprobe agent (pid " + strconv.Itoa(os.Getpid()) + ") already uses pin directory " + dir
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "/etc/x.conf") {
		t.Errorf("second lock: %v, want %q", err, want)
	}
	l.release()
	l2, err := lockPinDir(dir, "")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.release()
}

// TestJobStartedFromRanks: a job starts when its first rank started, not
// when an agent (perhaps restarted mid-job) first saw it.
func TestJobStartedFromRanks(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		started []time.Time // of the ranks, in the order seen
		now     time.Time
		want    time.Time
	}{
		{"unknown start: first seen", []time.Time{{}, {}}, t0, t0},
		{"rank start before the agent came", []time.Time{t0.Add(-90 * time.Minute)}, t0, t0.Add(-90 * time.Minute)},
		{"earliest rank wins, whatever the order", []time.Time{t0.Add(-time.Minute), t0.Add(-time.Hour), t0.Add(-2 * time.Minute)}, t0, t0.Add(-time.Hour)},
		{"a start in the future is not believed", []time.Time{t0.Add(time.Hour)}, t0, t0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTracker()
			for i, s := range tc.started {
				tr.add(proc(10+i, "j1", strconv.Itoa(i)), uint64(100+i), s, tc.now)
			}
			if got := tr.jobs["j1"].Started; !got.Equal(tc.want) {
				t.Errorf("Started = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStartedAt(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		ticks  uint64
		uptime time.Duration
		want   time.Time
	}{
		{100, 11 * time.Second, now.Add(-10 * time.Second)},
		{150, 2 * time.Second, now.Add(-500 * time.Millisecond)},
		{500, time.Second, now}, // clock skew: not after now
	} {
		if got := startedAt(tc.ticks, tc.uptime, now); !got.Equal(tc.want) {
			t.Errorf("startedAt(%d, %v) = %v, want %v", tc.ticks, tc.uptime, got, tc.want)
		}
	}
}
