package kernel

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/mpiprobe/mpiprobe/internal/discover"
)

// Kernel features mpiprobe needs, and where their presence shows.
const (
	btfPath       = "/sys/kernel/btf/vmlinux"
	uprobePMUPath = "/sys/bus/event_source/devices/uprobe/type"
)

// Preflight checks, before anything is loaded, that this kernel and this
// process can do what mpiprobe needs. Each error is one line naming the cause
// and the fix.
func Preflight() error {
	if _, err := os.Stat(btfPath); err != nil {
		return fmt.Errorf("kernel has no BTF (%s missing): mpiprobe needs a kernel built with CONFIG_DEBUG_INFO_BTF=y", btfPath)
	}
	if _, err := os.Stat(uprobePMUPath); err != nil {
		return fmt.Errorf("kernel has no uprobe support (%s missing): mpiprobe needs CONFIG_UPROBES=y and CONFIG_UPROBE_EVENTS=y", uprobePMUPath)
	}
	if !privileged() {
		return fmt.Errorf("not allowed to load BPF programs: run mpiprobe as root (sudo) or grant it CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE")
	}
	return nil
}

// privileged reports whether the process has the capabilities it needs:
// CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN on their behalf).
func privileged() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return os.Geteuid() == 0
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	return has(unix.CAP_SYS_ADMIN) || (has(unix.CAP_BPF) && has(unix.CAP_PERFMON))
}

// lockdownPath is where the kernel says whether it is locked down.
const lockdownPath = "/sys/kernel/security/lockdown"

// lockdown returns the kernel's lockdown mode, "" when unknown.
func lockdown() string {
	b, err := os.ReadFile(lockdownPath)
	if err != nil {
		return ""
	}
	return discover.LockdownMode(string(b))
}

// ExplainLoad turns a BPF load or attach failure into a line that says what to do.
func ExplainLoad(what string, err error) error {
	var verr *ebpf.VerifierError
	switch {
	case errors.As(err, &verr): // before EACCES, which the verifier's refusal also carries
		return fmt.Errorf("%s: verifier rejected them (kernel too old?): %w", what, err)
	case (errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)) && lockdown() != "" && lockdown() != "none":
		return fmt.Errorf("%s: permission denied: the kernel is locked down (%s, %s), which refuses BPF programs reading memory: boot without lockdown or with Secure Boot off: %w", what, lockdown(), lockdownPath, err)
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return fmt.Errorf("%s: permission denied: run mpiprobe as root (sudo) or grant it CAP_BPF, CAP_PERFMON and, for uprobes on Linux 6.16 and later, CAP_SYS_ADMIN: %w", what, err)
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL):
		return fmt.Errorf("%s: the kernel refused it (needs uprobes, BTF and BPF tracing programs, Linux 5.15 or later): %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
