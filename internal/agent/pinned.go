package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/kernel"
	"github.com/mpiprobe/mpiprobe/probes"
)

// objects are the parts of the BPF collection the agent uses; loading only
// these keeps the other modes' maps out of the kernel.
type objects struct {
	probes.Programs               // the catalog's probe programs
	StartupMark     *ebpf.Program `ebpf:"startup_mark"`
	OnFork          *ebpf.Program `ebpf:"on_fork"`
	OnExec          *ebpf.Program `ebpf:"on_exec"`
	OnExit          *ebpf.Program `ebpf:"on_exit"`

	Traced     *ebpf.Map `ebpf:"traced"`
	Counts     *ebpf.Map `ebpf:"counts"`
	Drops      *ebpf.Map `ebpf:"drops"`
	ProcEvents *ebpf.Map `ebpf:"proc_events"`
	Startups   *ebpf.Map `ebpf:"startups"`
	Exits      *ebpf.Map `ebpf:"exits"`
	Idents     *ebpf.Map `ebpf:"idents"`
}

// pinnedMaps are the maps that carry the agent's state across a restart:
// they are pinned under <pin dir>/<build>/maps by name.
var pinnedMaps = []string{"traced", "counts", "drops", "proc_events", "startups", "exits", "idents"}

func (o *objects) maps() map[string]*ebpf.Map {
	return map[string]*ebpf.Map{
		"traced": o.Traced, "counts": o.Counts, "drops": o.Drops,
		"proc_events": o.ProcEvents, "startups": o.Startups, "exits": o.Exits,
		"idents": o.Idents,
	}
}

func (o *objects) close() {
	o.Programs.Close()
	for _, p := range []*ebpf.Program{o.StartupMark, o.OnFork, o.OnExec, o.OnExit} {
		if p != nil {
			_ = p.Close()
		}
	}
	for _, m := range o.maps() {
		if m != nil {
			_ = m.Close()
		}
	}
}

// pinned is the agent's BPF side: programs, maps and the links that attach
// them, all pinned under dir so that a restarted agent carries on with
// them instead of losing what was counted meanwhile.
type pinned struct {
	objs objects
	// dir is <pin dir>/<bpf.BuildID()>.
	dir string
	// reused is true when the maps and links came from an earlier agent.
	reused bool
	// attached are the library files (device, inode) whose probes are
	// pinned, by prefix: "c" catalog, "s" startup.
	attached map[string][][2]uint64
	tps      []link.Link
}

// openPinned loads the BPF programs, reusing the maps, tracepoint links and
// uprobe links pinned by an earlier agent of the same build, or pinning new
// ones. State pinned by another build is removed, with a warning.
func openPinned(pinDir string, log *slog.Logger) (*pinned, error) {
	if err := kernel.Preflight(); err != nil {
		return nil, err
	}
	if strings.HasPrefix(pinDir, "/sys/fs/bpf/") {
		if err := kernel.MountBPFFS("/sys/fs/bpf"); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(pinDir, 0o700); err != nil {
		return nil, fmt.Errorf("create pin directory %s: %w (is the BPF file system mounted at /sys/fs/bpf?)", pinDir, err)
	}
	build := bpf.BuildID()
	ents, err := os.ReadDir(pinDir)
	if err != nil {
		return nil, fmt.Errorf("read pin directory %s: %w", pinDir, err)
	}
	for _, e := range ents {
		if e.Name() != build {
			log.Warn("removing BPF state pinned by another mpiprobe build; counts of jobs running across the upgrade restart from zero",
				"dir", filepath.Join(pinDir, e.Name()))
			if err := os.RemoveAll(filepath.Join(pinDir, e.Name())); err != nil {
				return nil, fmt.Errorf("remove stale pins in %s: %w", pinDir, err)
			}
		}
	}
	k := &pinned{dir: filepath.Join(pinDir, build), attached: map[string][][2]uint64{}}
	repl := map[string]*ebpf.Map{}
	mapDir := filepath.Join(k.dir, "maps")
	if _, err := os.Stat(filepath.Join(mapDir, "counts")); err == nil {
		for _, name := range pinnedMaps {
			m, err := ebpf.LoadPinnedMap(filepath.Join(mapDir, name), nil)
			if err != nil {
				for _, m := range repl {
					_ = m.Close()
				}
				return nil, fmt.Errorf("reopen pinned map %s: %w (remove the pins with mpiprobe agent --cleanup)", name, err)
			}
			repl[name] = m
		}
		k.reused = true
	}
	err = kernel.Load(&k.objs, kernel.Options{Variables: map[string]any{"watch_all": uint32(1)}, Replacements: repl})
	for _, m := range repl {
		_ = m.Close() // the loaded objects hold their own reference
	}
	if err != nil {
		return nil, err
	}
	if !k.reused {
		if err := os.MkdirAll(mapDir, 0o700); err != nil {
			k.close(false)
			return nil, fmt.Errorf("create %s: %w", mapDir, err)
		}
		for name, m := range k.objs.maps() {
			if err := m.Pin(filepath.Join(mapDir, name)); err != nil {
				k.close(false)
				return nil, fmt.Errorf("pin map %s: %w", name, err)
			}
		}
	}
	if err := k.attachTracepoints(); err != nil {
		k.close(!k.reused)
		return nil, err
	}
	if err := k.readAttached(); err != nil {
		k.close(!k.reused)
		return nil, err
	}
	return k, nil
}

// attachTracepoints reuses the pinned process tracepoint links or makes
// and pins new ones.
func (k *pinned) attachTracepoints() error {
	dir := filepath.Join(k.dir, "tp")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for name, p := range map[string]*ebpf.Program{"fork": k.objs.OnFork, "exec": k.objs.OnExec, "exit": k.objs.OnExit} {
		pin := filepath.Join(dir, name)
		if l, err := link.LoadPinnedLink(pin, nil); err == nil {
			k.tps = append(k.tps, l)
			continue
		}
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err != nil {
			return kernel.ExplainLoad("attach process tracepoints", err)
		}
		if err := l.Pin(pin); err != nil {
			_ = l.Close()
			return fmt.Errorf("pin tracepoint link %s: %w", name, err)
		}
		k.tps = append(k.tps, l)
	}
	return nil
}

// linkName names the i-th pinned link of a library file attached as its
// library: one file can be several (Open MPI 5.0's libmpi is also its ob1
// and coll components), and each one's links need names of their own.
func linkName(prefix string, t probes.Target, i int) string {
	// The BPF file system takes no dot in a name.
	return fmt.Sprintf("%s-%d-%d-%s_%d", prefix, t.Dev, t.Inode, strings.ReplaceAll(string(t.Library), "-", "_"), i)
}

// parseLinkName is the inverse of linkName.
func parseLinkName(name string) (prefix string, dev, ino uint64, ok bool) {
	f := strings.Split(name, "-")
	if len(f) != 4 {
		return "", 0, 0, false
	}
	var err1, err2, err3 error
	dev, err1 = strconv.ParseUint(f[1], 10, 64)
	ino, err2 = strconv.ParseUint(f[2], 10, 64)
	// LIBRARY_I, or I alone as agents named them before one file could
	// be several libraries.
	_, err3 = strconv.Atoi(f[3][strings.LastIndexByte(f[3], '_')+1:])
	if err1 != nil || err2 != nil || err3 != nil || f[0] == "" {
		return "", 0, 0, false
	}
	return f[0], dev, ino, true
}

// readAttached lists the library files an earlier agent attached.
func (k *pinned) readAttached() error {
	dir := filepath.Join(k.dir, "links")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	seen := map[string]bool{}
	for _, e := range ents {
		prefix, dev, ino, ok := parseLinkName(e.Name())
		key := fmt.Sprintf("%s-%d-%d", prefix, dev, ino)
		if !ok || seen[key] {
			continue
		}
		seen[key] = true
		k.attached[prefix] = append(k.attached[prefix], [2]uint64{dev, ino})
	}
	return nil
}

// pinner returns an OnFile hook that pins a file's links under prefix.
func (k *pinned) pinner(prefix string) func(t probes.Target, links []link.Link) error {
	return func(t probes.Target, links []link.Link) error {
		for i, l := range links {
			if err := l.Pin(filepath.Join(k.dir, "links", linkName(prefix, t, i))); err != nil {
				return fmt.Errorf("pin link of %s: %w", t.Display, err)
			}
		}
		return nil
	}
}

// pinnedLinks counts the links pinned so far (this agent's and earlier ones').
func (k *pinned) pinnedLinks() int {
	ents, err := os.ReadDir(filepath.Join(k.dir, "links"))
	if err != nil {
		return 0
	}
	return len(ents)
}

// close releases the agent's references. With unpin, the pins go too, so
// that the probes detach; without it they keep counting for the next agent.
func (k *pinned) close(unpin bool) {
	for _, l := range k.tps {
		_ = l.Close()
	}
	k.objs.close()
	if unpin {
		_ = os.RemoveAll(k.dir)
	}
}

// Cleanup removes everything the agent pinned under pinDir, which detaches
// its probes, and reports whether there was anything: false, nil when
// pinDir does not exist. It refuses while an agent runs on pinDir (holds
// its lock), naming the agent's pid: that agent would lose every new event.
func Cleanup(pinDir string) (bool, error) {
	if _, err := os.Lstat(pinDir); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	l, who, err := flockDir(pinDir)
	if who != "" {
		return false, fmt.Errorf("an mpiprobe agent (%s) uses pin directory %s: stop it first (systemctl stop mpiprobe); removing its pins would detach its probes while it runs", who, pinDir)
	}
	if err != nil {
		return false, err
	}
	defer l.release()
	if err := os.RemoveAll(pinDir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("remove %s: %w", pinDir, err)
	}
	return true, nil
}
