package discover

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// accessFacts are what decides whether mpiprobe may read another
// process's /proc files, as gathered by readAccessFacts. explainAccess
// turns them into the one cause to report; it is pure, for table tests.
type accessFacts struct {
	// Root is mpiprobe's effective uid being 0; PtraceCap its holding
	// CAP_SYS_PTRACE.
	Root, PtraceCap bool
	// OwnPIDNS is false when the procfs mpiprobe reads belongs to another
	// PID namespace than mpiprobe's own (its "self" is not mpiprobe's pid).
	OwnPIDNS bool
	// OtherUserNS is set when the target's user namespace differs from
	// mpiprobe's (both links readable and not equal).
	OtherUserNS bool
	// NonDumpable is set when the target's /proc files are owned by root
	// although it runs as another user: the kernel's sign of a process
	// made non-dumpable (prctl PR_SET_DUMPABLE 0, setuid programs).
	NonDumpable bool
	// UID is the target's real uid (-1 unknown).
	UID int
	// YamaScope is kernel.yama.ptrace_scope (-1 without Yama).
	YamaScope int
	// Lockdown is the kernel lockdown mode ("none", "integrity",
	// "confidentiality"; "" unknown).
	Lockdown string
	// LSM is mpiprobe's own security label (/proc/self/attr/current),
	// e.g. "docker-default (enforce)"; "" or "unconfined" when none.
	LSM string
	// Modules are the active security modules
	// (/sys/kernel/security/lsm, e.g. "capability,yama,bpf"); "" unknown.
	Modules string
}

// explainAccess returns the cause and fix of a permission error on
// /proc/PID/what, one line.
func explainAccess(pid int, what string, f accessFacts) string {
	head := fmt.Sprintf("read /proc/%d/%s: permission denied", pid, what)
	switch {
	case !f.OwnPIDNS:
		return head + ": mpiprobe's /proc belongs to another PID namespace than its own, so pid " + strconv.Itoa(pid) +
			" is not a pid of mpiprobe's namespace: run mpiprobe in the PID namespace of the job (on the host for a container's ranks, with the host's /proc)"
	case f.OtherUserNS:
		return head + fmt.Sprintf(": pid %d belongs to another user namespace than mpiprobe, whose root has no rights over it: run mpiprobe in the user namespace that owns the job (on the host for a container's ranks)", pid)
	case !f.PtraceCap && f.Root:
		return head + ": mpiprobe runs as root but without CAP_SYS_PTRACE (a container's default capability set drops it): grant it (docker run --cap-add SYS_PTRACE, or CapabilityBoundingSet in the unit)"
	case !f.PtraceCap:
		return head + ": mpiprobe lacks CAP_SYS_PTRACE and the process is not its user's: run mpiprobe as root or grant it CAP_SYS_PTRACE"
	case f.NonDumpable:
		return head + fmt.Sprintf(": pid %d made itself non-dumpable (prctl PR_SET_DUMPABLE 0 or a setuid program) and so refuses to be read: start the job without that setting", pid)
	case f.LSM != "" && f.LSM != "unconfined" && !strings.HasPrefix(f.LSM, "unconfined"):
		return head + ": mpiprobe runs confined by the security module profile " + text.Quote(f.LSM) +
			", which denies reading other processes: run it unconfined (docker run --security-opt apparmor=unconfined, or a policy that allows ptrace read)"
	case f.YamaScope == 3:
		return head + ": kernel.yama.ptrace_scope is 3, which forbids ptrace access to every process until reboot: boot with a lower scope"
	case f.Lockdown != "" && f.Lockdown != "none":
		return head + ": the kernel is locked down (" + f.Lockdown + "): boot without lockdown=" + f.Lockdown + " or with Secure Boot off"
	}
	modules := ""
	if f.Modules != "" {
		modules = " (active security modules: " + text.Line(f.Modules) + ")"
	}
	return head + ": mpiprobe holds CAP_SYS_PTRACE in the same namespaces, so a security policy refused it" + modules +
		": check the audit log (journalctl -k | grep -i denied) for the module that did, e.g. a BPF LSM or a sandbox guarding the process"
}

// explainPermission returns the one-line error for a permission error on
// /proc/PID/what, naming the real cause.
func explainPermission(pfs procfs.FS, pid int, what string) error {
	return fmt.Errorf("%s", explainAccess(pid, what, readAccessFacts(pfs, pid)))
}

// readAccessFacts gathers accessFacts from pfs and the kernel.
func readAccessFacts(pfs procfs.FS, pid int) accessFacts {
	root := pfs.Root
	if root == "" {
		root = procfs.DefaultRoot
	}
	f := accessFacts{Root: os.Geteuid() == 0, PtraceCap: hasCap(unix.CAP_SYS_PTRACE), OwnPIDNS: true, UID: -1, YamaScope: -1, LSM: readTrim("/proc/self/attr/current")}
	if self, err := os.Readlink(filepath.Join(root, "self")); err == nil && self != strconv.Itoa(os.Getpid()) {
		f.OwnPIDNS = false
	}
	mine, err1 := os.Readlink("/proc/self/ns/user")
	theirs, err2 := os.Readlink(filepath.Join(root, strconv.Itoa(pid), "ns", "user"))
	f.OtherUserNS = err1 == nil && err2 == nil && mine != theirs
	if b, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "status")); err == nil {
		f.UID = procfs.StatusUID(b)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(root, strconv.Itoa(pid), "maps"), &st); err == nil && f.UID > 0 && st.Uid == 0 {
		f.NonDumpable = true
	}
	if s := readTrim("/proc/sys/kernel/yama/ptrace_scope"); s != "" {
		if v, err := strconv.Atoi(s); err == nil {
			f.YamaScope = v
		}
	}
	f.Lockdown = LockdownMode(readTrim("/sys/kernel/security/lockdown"))
	f.Modules = readTrim("/sys/kernel/security/lsm")
	return f
}

// LockdownMode returns the active mode of a /sys/kernel/security/lockdown
// text ("none [integrity] confidentiality" gives "integrity"); "" when
// there is none.
func LockdownMode(s string) string {
	i, j := strings.IndexByte(s, '['), strings.IndexByte(s, ']')
	if i < 0 || j < i {
		return ""
	}
	return s[i+1 : j]
}

func readTrim(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.TrimRight(string(b), "\x00"))
}

// hasCap reports whether mpiprobe holds capability c (effective).
func hasCap(c uint) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return os.Geteuid() == 0
	}
	return data[c/32].Effective&(1<<(c%32)) != 0
}
