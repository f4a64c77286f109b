package discover

import (
	"strings"
	"testing"
)

// TestExplainAccess: a permission error on /proc/PID names its real cause,
// and says "run as root" to nobody who is root already.
func TestExplainAccess(t *testing.T) {
	ok := accessFacts{Root: true, PtraceCap: true, OwnPIDNS: true, UID: 1000, YamaScope: 1, Lockdown: "none", LSM: "unconfined"}
	with := func(f func(*accessFacts)) accessFacts { c := ok; f(&c); return c }
	for _, tc := range []struct {
		name  string
		facts accessFacts
		want  string
	}{
		{"another PID namespace's /proc", with(func(f *accessFacts) { f.OwnPIDNS = false }), "another PID namespace"},
		{"another user namespace", with(func(f *accessFacts) { f.OtherUserNS = true }), "another user namespace"},
		{"root without CAP_SYS_PTRACE", with(func(f *accessFacts) { f.PtraceCap = false }), "without CAP_SYS_PTRACE"},
		{"user without CAP_SYS_PTRACE", with(func(f *accessFacts) { f.PtraceCap, f.Root = false, false }), "run mpiprobe as root or grant it CAP_SYS_PTRACE"},
		{"non-dumpable target", with(func(f *accessFacts) { f.NonDumpable = true }), "non-dumpable"},
		{"AppArmor profile", with(func(f *accessFacts) { f.LSM = "docker-default (enforce)" }), `profile "docker-default (enforce)"`},
		{"hostile LSM label", with(func(f *accessFacts) { f.LSM = "x\n\x1b[2J" }), `profile "x\n\x1b[2J"`},
		{"Yama scope 3", with(func(f *accessFacts) { f.YamaScope = 3 }), "ptrace_scope is 3"},
		{"lockdown", with(func(f *accessFacts) { f.Lockdown = "confidentiality" }), "locked down (confidentiality)"},
		{"nothing known", ok, "a security policy refused it: check the audit log"},
		{"security modules known", with(func(f *accessFacts) { f.Modules = "capability,landlock,bpf" }), "(active security modules: capability,landlock,bpf)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := explainAccess(1, "maps", tc.facts)
			if !strings.HasPrefix(got, "read /proc/1/maps: permission denied: ") || !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want it to contain %q", got, tc.want)
			}
			if strings.ContainsAny(got, "\n\x1b") {
				t.Errorf("not one plain line: %q", got)
			}
			if tc.facts.Root && strings.Contains(got, "run mpiprobe as root") {
				t.Errorf("tells root to run as root: %q", got)
			}
		})
	}
}

func TestLockdownMode(t *testing.T) {
	for in, want := range map[string]string{
		"[none] integrity confidentiality\n": "none",
		"none [integrity] confidentiality":   "integrity",
		"none integrity [confidentiality]":   "confidentiality",
		"":                                   "",
		"]broken[":                           "",
	} {
		if got := LockdownMode(in); got != want {
			t.Errorf("LockdownMode(%q) = %q, want %q", in, got, want)
		}
	}
}
