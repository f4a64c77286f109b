package session

import (
	"os"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/discover"
	"github.com/mpiprobe/mpiprobe/probes"
	"golang.org/x/sys/unix"
)

// A command's ranks find their MPI where they run, which need not be where
// mpiprobe runs: a chroot, a container, unshare --root, a private
// directory on $LD_LIBRARY_PATH or dlopen. The host's linker cache, looked
// at before the command starts, is only the fast path (SystemTargets).
// follower looks, for every process of the command that runs a new
// program, at its root once (the root's own linker cache: its files are
// attached before the ranks start, as the host's are), then at the
// libraries it maps, a few times while it starts and then at each reading
// of the counters; each new library file, by device and inode, is attached
// with the mode's attacher. Counting and trace mode use it alike.
type follower struct {
	s *session
	// add is the mode's attacher's Add.
	add func([]probes.Target) error
	// added is called after add with the new targets, e.g. to report the
	// events the counting attacher could not attach in them.
	added func([]probes.Target)
	// roots are the root directories looked at, by device and inode.
	roots map[[2]uint64]bool
	// files are the library files attached, as which library.
	files map[fileAs]bool
	// due are the pending looks at a process's maps after it ran a new
	// program.
	due map[int][]time.Time
	// signal sends a signal to a process (unix.Kill; tests replace it).
	signal func(pid int, sig unix.Signal) error
}

type fileAs struct {
	dev, ino uint64
	lib      probes.Library
}

// scanAfter are the looks at a process's maps after its exec: the
// dynamic linker maps the libraries at once, MPI_Init opens components
// within the first seconds.
var scanAfter = []time.Duration{20 * time.Millisecond, 200 * time.Millisecond, time.Second, 3 * time.Second}

func newFollower(s *session, add func([]probes.Target) error, added func([]probes.Target)) *follower {
	f := &follower{s: s, add: add, added: added, roots: map[[2]uint64]bool{}, files: map[fileAs]bool{}, due: map[int][]time.Time{}, signal: unix.Kill}
	// mpiprobe's own root was looked at ahead of time.
	if r, err := discover.RootOf(s.cfg.Proc, os.Getpid()); err == nil {
		f.roots[[2]uint64{r.Dev, r.Inode}] = true
	}
	for _, t := range s.cmdTargets {
		f.files[fileAs{t.Dev, t.Inode, t.Library}] = true
	}
	return f
}

// exec is told that a process of the command runs a new program. Its
// dynamic linker has barely started: what it will map is looked for where
// it will look (its root's linker cache, its $LD_LIBRARY_PATH, its
// program's prefix) and attached now, before the program can call MPI;
// what it maps from elsewhere (dlopen) the looks at its maps find.
//
// While files new to the session are attached, the process is held
// (SIGSTOP, then SIGCONT): attaching takes tens of milliseconds, in which
// a launcher's ranks could start and call MPI_Init unseen. That happens
// once per root or private library directory, to a process that has just
// run a new program; one stopped by someone else is left alone.
func (f *follower) exec(pid int) {
	r, err := discover.RootOf(f.s.cfg.Proc, pid)
	if err != nil {
		return // gone already
	}
	held := false
	hold := func() {
		if !held {
			held = f.hold(pid)
		}
	}
	defer func() {
		if held {
			_ = f.signal(pid, unix.SIGCONT)
		}
	}()
	if root := [2]uint64{r.Dev, r.Inode}; !f.roots[root] {
		f.roots[root] = true
		hold()
		targets, err := discover.RootTargets(f.s.cfg.Proc, pid, f.s.cat.Libraries())
		if err != nil {
			f.s.cfg.Log.Warn("libraries of a process's root", "pid", pid, "root", r.Link, "err", err)
		}
		f.s.cfg.Log.Debug("a process of the command runs in another root", "pid", pid, "root", r.Link, "libraries", len(targets))
		f.attach(pid, targets)
	}
	targets, _ := discover.ExecTargets(f.s.cfg.Proc, pid, f.s.cat.Libraries())
	for _, t := range targets {
		if !f.files[fileAs{t.Dev, t.Inode, t.Library}] {
			hold()
			break
		}
	}
	f.attach(pid, targets)
	now := time.Now()
	due := make([]time.Time, len(scanAfter))
	for i, d := range scanAfter {
		due[i] = now.Add(d)
	}
	f.due[pid] = due
}

// hold stops process pid while its libraries are attached (discover.Hold).
func (f *follower) hold(pid int) bool { return discover.Hold(f.s.cfg.Proc, pid, f.signal) }

// next returns when the next look at a process is due; ok is false when
// none is.
func (f *follower) next() (at time.Time, ok bool) {
	for _, due := range f.due {
		if len(due) > 0 && (!ok || due[0].Before(at)) {
			at, ok = due[0], true
		}
	}
	return at, ok
}

// scanDue looks at the processes whose look is due.
func (f *follower) scanDue() {
	now := time.Now()
	for pid, due := range f.due {
		if len(due) == 0 || now.Before(due[0]) {
			continue
		}
		f.due[pid] = due[1:]
		if len(f.due[pid]) == 0 {
			delete(f.due, pid)
		}
		if !f.scan(pid) {
			delete(f.due, pid)
		}
	}
}

// scanAll looks at every process of the command still running.
func (f *follower) scanAll(pids []int) {
	for _, pid := range pids {
		f.scan(pid)
	}
}

// scan attaches the library files process pid maps that are not attached
// yet; it returns false when the process is gone.
func (f *follower) scan(pid int) bool {
	maps, err := f.s.cfg.Proc.Maps(pid)
	if err != nil {
		return false
	}
	targets, errs, ok := discover.ScanMaps(f.s.cfg.Proc, pid, maps, f.s.cat.Libraries())
	if !ok {
		return true
	}
	for _, err := range errs {
		f.s.cfg.Log.Debug("library not attachable", "pid", pid, "err", err)
	}
	f.attach(pid, targets)
	return true
}

// attach attaches the targets not attached before.
func (f *follower) attach(pid int, targets []probes.Target) {
	var fresh []probes.Target
	for _, t := range targets {
		k := fileAs{t.Dev, t.Inode, t.Library}
		if !f.files[k] {
			f.files[k] = true
			fresh = append(fresh, t)
		}
	}
	if len(fresh) == 0 {
		return
	}
	if err := f.add(fresh); err != nil {
		f.s.cfg.Log.Warn("cannot attach to the libraries of a process of the command", "pid", pid, "libraries", describeTargets(fresh), "err", err)
		for _, t := range fresh {
			delete(f.files, fileAs{t.Dev, t.Inode, t.Library}) // to be tried again
		}
		return
	}
	f.s.cmdTargets = append(f.s.cmdTargets, fresh...)
	f.s.cfg.Log.Debug("attached to libraries of a process of the command", "pid", pid, "libraries", describeTargets(fresh))
	if f.added != nil {
		f.added(fresh)
	}
}

// forget drops the pending looks at an ended process.
func (f *follower) forget(pid int) { delete(f.due, pid) }
