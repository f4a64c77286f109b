package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"
)

// pfKthread is PF_KTHREAD from include/linux/sched.h.
const pfKthread = 0x00200000

// Stat holds the fields of /proc/PID/stat that mpiprobe uses.
type Stat struct {
	// PID is the process (or thread) id, field 1.
	PID int
	// PPID is the parent's process id, field 4; 0 for init and kthreadd.
	PPID int
	// Comm is the command name, field 2 without its parentheses. The kernel
	// truncates it to 15 bytes; it may contain spaces and parentheses.
	Comm string
	// State is the one-letter process state, field 3 (R, S, D, Z, ...).
	State byte
	// Flags is the kernel's PF_* flags word, field 9.
	Flags uint64
	// StartTime is the time the process started after boot, in clock
	// ticks, field 22. Together with PID it identifies a process across
	// pid reuse.
	StartTime uint64
	// ExitCode is field 52 (Linux 3.5 and later), the task's exit_code:
	// while it is stopped, the signal that stopped it. 0 when the field is
	// absent, or hidden (the kernel shows it to whom may ptrace the task).
	ExitCode uint64
}

// Stopped reports whether the process is stopped: State is 'T' (by a
// signal: SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU) or 't' (by its tracer, a
// debugger).
func (s Stat) Stopped() bool { return s.State == 'T' || s.State == 't' }

// StopSignal returns the signal that stopped the process, 0 when it is
// not stopped or the signal is not known.
func (s Stat) StopSignal() syscall.Signal {
	if !s.Stopped() {
		return 0
	}
	return syscall.Signal(s.ExitCode & 0x7f)
}

// KernelThread reports whether the process is a kernel thread
// (PF_KTHREAD is set in Flags).
func (s Stat) KernelThread() bool { return s.Flags&pfKthread != 0 }

// Ended reports whether the process has ended and only its entry is left:
// State is 'Z' (zombie, not yet reaped) or 'X' (dead, being reaped).
func (s Stat) Ended() bool { return s.State == 'Z' || s.State == 'X' }

// ParseStat parses the text of /proc/PID/stat. The command name is taken
// from between the first '(' and the last ')', since it may itself contain
// spaces and parentheses.
func ParseStat(data []byte) (Stat, error) {
	var s Stat
	open := bytes.IndexByte(data, '(')
	closing := bytes.LastIndexByte(data, ')')
	if open < 0 || closing < open {
		return s, errors.New("no command name in parentheses")
	}
	pid := string(bytes.TrimSpace(data[:open]))
	v, err := parseDecimal(pid)
	if err != nil || v > 1<<31-1 {
		return s, fmt.Errorf("bad pid %q", pid)
	}
	s.PID = int(v)
	s.Comm = string(data[open+1 : closing])

	// Fields after the command name, numbered from 3 (state).
	f := bytes.Fields(data[closing+1:])
	const need = 22 - 2 // up to starttime, field 22
	if len(f) < need {
		return s, fmt.Errorf("%d fields after the command name, want at least %d", len(f), need)
	}
	if len(f[0]) != 1 {
		return s, fmt.Errorf("bad state %q", f[0])
	}
	s.State = f[0][0]
	if v, err = parseDecimal(string(f[1])); err != nil || v > 1<<31-1 {
		return s, fmt.Errorf("bad ppid %q", f[1])
	}
	s.PPID = int(v)
	if s.Flags, err = parseDecimal(string(f[9-3])); err != nil {
		return s, fmt.Errorf("bad flags %q: %w", f[9-3], err)
	}
	if s.StartTime, err = parseDecimal(string(f[22-3])); err != nil {
		return s, fmt.Errorf("bad start time %q: %w", f[22-3], err)
	}
	if len(f) > 52-3 {
		if s.ExitCode, err = parseDecimal(string(f[52-3])); err != nil {
			return s, fmt.Errorf("bad exit code %q: %w", f[52-3], err)
		}
	}
	return s, nil
}
