// Package ps lists the MPI processes of this node grouped by job, for
// `mpiprobe ps`: who each rank is (internal/identity), which MPI library
// it maps (discover.Discover), and whether an mpiprobe agent or session
// traces it.
//
// Whether a process is traced is read from the kernel, not guessed: every
// mpiprobe session and the agent keep the pids they trace in a BPF hash
// map named "traced" (bpf/mpiprobe.bpf.c). ps walks the kernel's BPF maps,
// reads those, and finds which process holds each map through
// /proc/PID/fdinfo (map_id). A map that no process holds but that is
// pinned under the agent's pin directory belongs to a stopped agent whose
// pinned probes still count. Walking the kernel's maps needs
// CAP_SYS_ADMIN: without it ps says that it cannot know.
package ps

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/mpiprobe/mpiprobe/internal/discover"
	"github.com/mpiprobe/mpiprobe/internal/identity"
	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/probes"
)

// Process is one MPI process on this node.
type Process struct {
	// PID is the process id.
	PID int
	// Rank is the rank in MPI_COMM_WORLD, identity.Unknown if unknown.
	Rank string
	// Host is the process's node: the host name of its UTS namespace
	// (identity.Resolve), which differs from List.Host for a process of a
	// container or a simulated node.
	Host string
	// User owns the process (a name, or the uid when it has none).
	User string
	// Command is the process's command line, arguments joined by spaces.
	Command string
	// MPI is "Open MPI" or "MPICH".
	MPI string
	// Library is the path of the MPI library the process maps.
	Library string
	// TracedBy lists what traces the process; empty when nothing does or
	// it cannot be known (List.TracedKnown).
	TracedBy []Tracer
}

// Tracer is an mpiprobe process that traces a process.
type Tracer struct {
	// Kind is "agent", "session", or "pinned" for the probes an agent
	// left pinned when it stopped (they still count; PID is 0).
	Kind string
	// PID is the mpiprobe process, 0 for pinned probes.
	PID int
}

// String shows a tracer as "agent 1234", "session 5678" or "pinned
// (no agent running)".
func (t Tracer) String() string {
	if t.Kind == KindPinned {
		return "pinned (no agent running)"
	}
	return t.Kind + " " + strconv.Itoa(t.PID)
}

// The kinds of Tracer.
const (
	KindAgent   = "agent"
	KindSession = "session"
	KindPinned  = "pinned"
)

// Job is the ranks of one job on this node.
type Job struct {
	// ID is the job id as mpiprobe --job and status --job take it.
	ID string
	// Launcher is where the id came from: openmpi, hydra, slurm or "".
	Launcher string
	// Size is the world size, identity.Unknown if unknown.
	Size string
	// Procs are the job's processes by rank.
	Procs []Process
}

// List is what ps found.
type List struct {
	// Host is this node.
	Host string
	// Jobs are ordered by job id.
	Jobs []Job
	// TracedKnown is false when whether processes are traced could not be
	// read; TracedNote then says why.
	TracedKnown bool
	TracedNote  string
}

// Options say where ps looks.
type Options struct {
	// Proc reads /proc.
	Proc procfs.FS
	// Host names this node.
	Host string
	// PinDirs are the agents' pin directories (the agent's pin_dir).
	PinDirs []string
	// Self is skipped (mpiprobe's own pid).
	Self int
}

// Find lists the MPI processes readable in o.Proc: those that map Open
// MPI's libmpi or MPICH's libmpich. Processes whose memory map cannot be
// read (another user's, without root) are left out.
func Find(o Options) (List, error) {
	l := List{Host: o.Host}
	pids, err := o.Proc.PIDs()
	if err != nil {
		return l, err
	}
	byJob := map[[2]string]*Job{}
	for _, pid := range pids {
		if pid == o.Self {
			continue
		}
		p, id, ok := process(o.Proc, pid, o.Host)
		if !ok {
			continue
		}
		key := [2]string{id.Launcher, id.Job}
		j := byJob[key]
		if j == nil {
			j = &Job{ID: id.Job, Launcher: id.Launcher, Size: id.Size}
			byJob[key] = j
		}
		j.Procs = append(j.Procs, p)
	}
	for _, j := range byJob {
		slices.SortFunc(j.Procs, func(a, b Process) int {
			return cmp.Or(cmp.Compare(rankNumber(a.Rank), rankNumber(b.Rank)), cmp.Compare(a.PID, b.PID))
		})
		l.Jobs = append(l.Jobs, *j)
	}
	slices.SortFunc(l.Jobs, func(a, b Job) int { return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Launcher, b.Launcher)) })

	tracers, err := Tracers(o.Proc, o.PinDirs)
	if err != nil {
		l.TracedNote = "whether mpiprobe traces them cannot be known: " + err.Error()
		return l, nil
	}
	l.TracedKnown = true
	for i := range l.Jobs {
		for k := range l.Jobs[i].Procs {
			p := &l.Jobs[i].Procs[k]
			p.TracedBy = tracers[p.PID]
		}
	}
	return l, nil
}

// rankNumber orders ranks numerically, unknown ones last.
func rankNumber(r string) int {
	n, err := strconv.Atoi(r)
	if err != nil {
		return 1 << 30
	}
	return n
}

// process reads one process; ok is false when it is not an MPI process
// or cannot be read.
func process(pfs procfs.FS, pid int, host string) (Process, identity.Identity, bool) {
	maps, err := pfs.Maps(pid)
	if err != nil {
		return Process{}, identity.Identity{}, false
	}
	libs := discover.Discover(discover.SeenMaps(pfs, pid, maps)) // a rank in a chroot: its own paths
	p := Process{PID: pid}
	for _, m := range libs {
		switch m.Library {
		case probes.OMPILibMPI:
			p.MPI, p.Library = "Open MPI", m.Mapping.Path
		case probes.MPICHLib:
			p.MPI, p.Library = "MPICH", m.Mapping.Path
		}
	}
	if p.MPI == "" {
		return Process{}, identity.Identity{}, false
	}
	id := identity.Resolve(pid, pfs, host)
	p.Rank, p.Host = id.Rank, id.Host
	p.User = owner(pfs, pid)
	p.Command = cmdline(pfs, pid)
	return p, id, true
}

// owner names the user of a process.
func owner(pfs procfs.FS, pid int) string {
	fi, err := os.Stat(filepath.Join(root(pfs), strconv.Itoa(pid)))
	if err != nil {
		return identity.Unknown
	}
	uid := strconv.FormatUint(uint64(uidOf(fi)), 10)
	if u, err := user.LookupId(uid); err == nil {
		return u.Username
	}
	return uid
}

// cmdline returns a process's arguments joined by spaces, or its command
// name when they cannot be read.
func cmdline(pfs procfs.FS, pid int) string {
	data, err := os.ReadFile(filepath.Join(root(pfs), strconv.Itoa(pid), "cmdline"))
	if err != nil || len(data) == 0 {
		c, _ := pfs.Comm(pid)
		return c
	}
	return strings.Join(strings.Split(strings.TrimRight(string(data), "\x00"), "\x00"), " ")
}

// root is the directory pfs reads.
func root(pfs procfs.FS) string {
	if pfs.Root == "" {
		return procfs.DefaultRoot
	}
	return pfs.Root
}

// tracedMap is the name of the BPF map of traced pids in every mpiprobe
// session and the agent (bpf/mpiprobe.bpf.c).
const tracedMap = "traced"

// Tracers returns, by pid, what traces each process: the "traced" maps of
// running mpiprobe sessions and agents, and those pinned under pinDirs. It
// needs CAP_SYS_ADMIN to walk the kernel's maps.
func Tracers(pfs procfs.FS, pinDirs []string) (map[int][]Tracer, error) {
	members := map[ebpf.MapID][]int{}
	var id ebpf.MapID
	for {
		next, err := ebpf.MapGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			if errors.Is(err, os.ErrPermission) {
				return nil, errors.New("run mpiprobe ps as root to see which processes mpiprobe traces")
			}
			return nil, fmt.Errorf("list BPF maps: %w", err)
		}
		id = next
		pids, ok := tracedPIDs(id)
		if ok {
			members[id] = pids
		}
	}
	holders := mapHolders(pfs, members)
	pinned := pinnedMaps(pinDirs)
	out := map[int][]Tracer{}
	for mid, pids := range members {
		ts := holders[mid]
		if len(ts) == 0 && pinned[mid] {
			ts = []Tracer{{Kind: KindPinned}}
		}
		for _, pid := range pids {
			for _, t := range ts {
				if !slices.Contains(out[pid], t) {
					out[pid] = append(out[pid], t)
				}
			}
		}
	}
	for pid := range out {
		slices.SortFunc(out[pid], func(a, b Tracer) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.PID, b.PID)) })
	}
	return out, nil
}

// tracedPIDs returns the pids in map id if it is a "traced" map.
func tracedPIDs(id ebpf.MapID) ([]int, bool) {
	m, err := ebpf.NewMapFromID(id)
	if err != nil {
		return nil, false
	}
	defer m.Close()
	info, err := m.Info()
	if err != nil || info.Name != tracedMap || info.Type != ebpf.Hash || info.KeySize != 4 || info.ValueSize != 4 {
		return nil, false
	}
	var pids []int
	var k, v uint32
	it := m.Iterate()
	for it.Next(&k, &v) {
		pids = append(pids, int(k))
	}
	return pids, true
}

// mapHolders finds the processes that hold each of the maps by an fd,
// from /proc/PID/fdinfo's map_id lines, and tells agents from sessions by
// their command line.
func mapHolders(pfs procfs.FS, maps map[ebpf.MapID][]int) map[ebpf.MapID][]Tracer {
	out := map[ebpf.MapID][]Tracer{}
	if len(maps) == 0 {
		return out
	}
	pids, err := pfs.PIDs()
	if err != nil {
		return out
	}
	for _, pid := range pids {
		dir := filepath.Join(root(pfs), strconv.Itoa(pid))
		fds, err := os.ReadDir(filepath.Join(dir, "fd"))
		if err != nil {
			continue
		}
		var kind string
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
			if err != nil || link != "anon_inode:bpf-map" {
				continue
			}
			info, err := os.ReadFile(filepath.Join(dir, "fdinfo", fd.Name()))
			if err != nil {
				continue
			}
			mid, ok := fdinfoMapID(string(info))
			if _, ours := maps[mid]; !ok || !ours {
				continue
			}
			if kind == "" {
				kind = tracerKind(cmdline(pfs, pid))
			}
			t := Tracer{Kind: kind, PID: pid}
			if !slices.Contains(out[mid], t) {
				out[mid] = append(out[mid], t)
			}
		}
	}
	return out
}

// fdinfoMapID reads the "map_id:" line of a BPF map fd's fdinfo.
func fdinfoMapID(info string) (ebpf.MapID, bool) {
	for _, line := range strings.Split(info, "\n") {
		v, ok := strings.CutPrefix(line, "map_id:")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
		return ebpf.MapID(n), err == nil
	}
	return 0, false
}

// tracerKind tells the agent ("mpiprobe [flags] agent ...") from a
// session by the command line of the process holding the map.
func tracerKind(cmd string) string {
	for _, a := range strings.Fields(cmd) {
		if a == "--" {
			break
		}
		if a == "agent" {
			return KindAgent
		}
	}
	return KindSession
}

// pinnedMaps returns the ids of the "traced" maps pinned under the pin
// directories (DIR/BUILD/maps/traced).
func pinnedMaps(dirs []string) map[ebpf.MapID]bool {
	out := map[ebpf.MapID]bool{}
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "*", "maps", tracedMap))
		for _, f := range files {
			m, err := ebpf.LoadPinnedMap(f, &ebpf.LoadPinOptions{ReadOnly: true})
			if err != nil {
				continue
			}
			if info, err := m.Info(); err == nil {
				if id, ok := info.ID(); ok {
					out[id] = true
				}
			}
			_ = m.Close()
		}
	}
	return out
}
