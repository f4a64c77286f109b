package discover

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"syscall"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/text"
	"github.com/mpiprobe/mpiprobe/probes"
)

// Proc is one process Select chose: who it was when it was examined and
// the library files to attach to in it.
type Proc struct {
	PID int
	// Comm is the command name read at discovery.
	Comm string
	// StartTime is /proc/PID/stat's start time (clock ticks after boot)
	// at discovery: with the pid it names this process and no later one.
	StartTime uint64
	// Maps is the memory map read at discovery, Libs the MPI libraries
	// in it: later readers take them from here instead of reading
	// /proc/PID/maps again.
	Maps []procfs.Mapping
	Libs []Mapped
	// Targets are the files to attach to, opened through the process.
	Targets []probes.Target
}

// RaceError says that a process stopped being a target while mpiprobe was
// looking at it or attaching to it: it exited, ran another program, or
// unmapped a library. It is no failure of mpiprobe or of the kernel.
type RaceError struct {
	PID  int
	Comm string
	// What happened: "exited", "ran another program (exec)", "unmapped
	// /usr/lib/…/libmpi.so.40".
	What string
	// During is what mpiprobe was doing: "examining", "attaching".
	During string
	// Alive says the process is still the one chosen and still maps an
	// MPI library: it only unmapped one of the files read (a component
	// Open MPI closes in MPI_Init, say). Looking at it again (Select)
	// gives its targets as they are now.
	Alive bool
}

// Error is one line: "pid 7512 (flood) exited while attaching".
func (e *RaceError) Error() string {
	who := fmt.Sprintf("pid %d", e.PID)
	if e.Comm != "" {
		who += " (" + text.Line(e.Comm) + ")"
	}
	return fmt.Sprintf("%s %s while %s", who, e.What, e.During)
}

// IsRace reports whether err says that a target went away under mpiprobe.
func IsRace(err error) bool {
	var r *RaceError
	return errors.As(err, &r)
}

// gone reports whether err is what reading /proc/PID/... or opening
// /proc/PID/map_files/... gives once the process is gone: ENOENT or ESRCH.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) || errors.Is(err, syscall.ENOENT)
}

// Recheck looks at a process again after something failed on it while
// mpiprobe was doing during ("attaching", "examining"). It returns a
// *RaceError when the process is no longer the one Select chose: it
// exited (its pid is gone, is a zombie, or names a process started
// later), ran another program (it maps no MPI library now), or unmapped
// one of its MPI libraries. It returns nil when the process is still there
// as it was: then the failure was a real one and must be reported as such.
func Recheck(pfs procfs.FS, p Proc, during string) error {
	race := func(what string) error { return &RaceError{PID: p.PID, Comm: p.Comm, What: what, During: during} }
	st, err := pfs.Stat(p.PID)
	if err != nil {
		if gone(err) {
			return race("exited")
		}
		return nil
	}
	if st.Ended() || (p.StartTime != 0 && st.StartTime != p.StartTime) {
		return race("exited")
	}
	maps, err := pfs.Maps(p.PID)
	if err != nil {
		if gone(err) {
			return race("exited")
		}
		return nil
	}
	if len(maps) == 0 {
		// The memory is released first on exit, before the zombie state.
		return race("exited")
	}
	now := Discover(maps)
	if !IsMPI(now) {
		return race("ran another program (exec)")
	}
	for _, m := range p.Libs {
		if !slices.ContainsFunc(now, func(n Mapped) bool {
			return n.Mapping.Start == m.Mapping.Start && n.Mapping.End == m.Mapping.End && n.Mapping.Inode == m.Mapping.Inode
		}) {
			r := race("unmapped " + text.Line(m.Mapping.Path)).(*RaceError)
			r.Alive = true
			return r
		}
	}
	return nil
}

// RecheckAll rechecks every process after a failure that concerned them
// all (one attach call over the targets of several processes): it returns
// the processes still there and the races of the others. A process that
// only unmapped a file (RaceError.Alive) is looked at again with Select
// (want as there) and kept with its targets as they are now, its race
// returned in changed instead; it is a race only when that look fails.
func RecheckAll(pfs procfs.FS, ps []Proc, during string, want []probes.Library) (kept []Proc, races, changed []error) {
	for _, p := range ps {
		err := Recheck(pfs, p, during)
		if err == nil {
			kept = append(kept, p)
			continue
		}
		var r *RaceError
		if errors.As(err, &r) && r.Alive {
			if sel := Select(pfs, []int{p.PID}, want); len(sel.Procs) == 1 {
				kept = append(kept, sel.Procs[0])
				changed = append(changed, err)
				continue
			}
		}
		races = append(races, err)
	}
	return kept, races, changed
}
