package session

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/probes"
	"golang.org/x/sys/unix"
)

// TestFollowerAttachesEachFileOnce: a process of the command in another
// root runs a program whose $LD_LIBRARY_PATH holds a private libmpich:
// it is attached at exec, by the path the process sees; the libmpi it maps
// later from elsewhere (dlopen) is attached by the look at its maps, and
// nothing twice; a second process in the same root does not make the root
// be looked at again; a failed attach is tried again at the next look.
func TestFollowerAttachesEachFileOnce(t *testing.T) {
	root, proc := t.TempDir(), t.TempDir()
	write := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "opt/priv/libmpich.so.12"), "mpich")
	write(filepath.Join(root, "opt/other/libmpi.so.40"), "ompi")
	for _, pid := range []string{"42", "43"} {
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(root, filepath.Join(proc, pid, "root")); err != nil {
			t.Fatal(err)
		}
		write(filepath.Join(proc, pid, "environ"), "LD_LIBRARY_PATH=/opt/priv\x00")
		write(filepath.Join(proc, pid, "stat"), pid+" (mpiexec) S 1 "+pid+" "+pid+" 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n")
	}
	// The kernel shows the chrooted process's files from mpiprobe's root.
	write(filepath.Join(proc, "42/maps"),
		"7fab7c000000-7fab7c100000 r-xp 00000000 fe:00 12 "+root+"/opt/priv/libmpich.so.12\n"+
			"7fab7d000000-7fab7d100000 r-xp 00000000 fe:00 13 "+root+"/opt/other/libmpi.so.40\n")

	var log bytes.Buffer
	s := &session{cfg: Config{Proc: procfs.FS{Root: proc}, Log: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))}, cat: probes.DefaultCatalog()}
	var calls [][]string
	var order []string // signals and attaches, in turn
	fail := false
	add := func(ts []probes.Target) error {
		var names []string
		for _, t := range ts {
			names = append(names, t.Display)
		}
		calls = append(calls, names)
		order = append(order, "attach")
		if fail {
			fail = false
			return os.ErrPermission
		}
		return nil
	}
	f := newFollower(s, add, nil)
	f.signal = func(pid int, sig unix.Signal) error {
		order = append(order, fmt.Sprintf("%d %s", pid, unix.SignalName(sig)))
		return nil
	}

	f.exec(42)
	if want := [][]string{{"/opt/priv/libmpich.so.12"}}; !equalCalls(calls, want) {
		t.Fatalf("after exec: attached %q, want %q", calls, want)
	}
	// Held while its new root's and private directory's libraries are attached.
	if want := []string{"42 SIGSTOP", "attach", "42 SIGCONT"}; !slices.Equal(order, want) {
		t.Errorf("exec of a process in a new root: %q, want %q", order, want)
	}
	order = nil
	if _, ok := f.next(); !ok {
		t.Error("no look at the process's maps scheduled after its exec")
	}
	fail = true // the first attempt at the dlopen'ed library fails
	f.scan(42)
	f.scan(42)
	f.exec(43)
	if slices.Contains(order, "43 SIGSTOP") {
		t.Errorf("a process with nothing new to attach was held: %q", order)
	}
	f.scan(42)
	want := [][]string{{"/opt/priv/libmpich.so.12"}, {"/opt/other/libmpi.so.40"}, {"/opt/other/libmpi.so.40"}}
	if !equalCalls(calls, want) {
		t.Errorf("attached %q, want %q", calls, want)
	}
	if n := strings.Count(log.String(), "runs in another root"); n != 1 {
		t.Errorf("the root was looked at %d times, want once:\n%s", n, log.String())
	}
	if got := describeTargets(s.cmdTargets); got != "/opt/priv/libmpich.so.12, /opt/other/libmpi.so.40" {
		t.Errorf("the command's targets: %s", got)
	}
}

func equalCalls(a, b [][]string) bool {
	return slices.EqualFunc(a, b, func(x, y []string) bool { return slices.Equal(x, y) })
}
