package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	configfile "github.com/mpiprobe/mpiprobe/internal/config"
)

// TestScopePrecedence: --scope wins over MPIPROBE_SCOPE, which wins over
// the configuration file's scope key; host when none is given; a bad
// value names where it came from.
func TestScopePrecedence(t *testing.T) {
	fileDefault, fileNetns := configfile.Default(), configfile.Default()
	fileNetns.Scope, fileNetns.Lines["scope"] = "netns", 3
	tests := []struct {
		name    string
		args    []string
		env     string // "-": unset
		file    *configfile.Config
		netns   bool
		wantErr string
	}{
		{"nothing", nil, "-", nil, false, ""},
		{"default file", nil, "-", &fileDefault, false, ""},
		{"file", nil, "-", &fileNetns, true, ""},
		{"variable over file", nil, "host", &fileNetns, false, ""},
		{"variable", nil, "netns", nil, true, ""},
		{"flag over variable", []string{"--scope", "host"}, "netns", &fileNetns, false, ""},
		{"flag", []string{"--scope=netns"}, "host", nil, true, ""},
		{"bad variable", nil, "pod", nil, false, `MPIPROBE_SCOPE "pod": give host`},
		{"bad flag over good variable", []string{"--scope", "x"}, "netns", nil, false, `--scope "x": give host`},
		{"empty variable", nil, "", nil, false, `MPIPROBE_SCOPE "": give host`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "-" {
				t.Setenv(scopeEnv, tt.env)
			}
			var s scopeFlag
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			s.register(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			pfs, err := s.proc(tt.file)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("proc: %v, want %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case (pfs.Net != nil) != tt.netns:
				t.Fatalf("scoped to a network namespace: %v, want %v", pfs.Net != nil, tt.netns)
			}
		})
	}
}

// TestScopeRoot: the counting mode scopes -p and --job, from the flag or
// its --config file, and follows a command's processes wherever they run.
func TestScopeRoot(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "c.conf")
	if err := os.WriteFile(conf, []byte("scope = netns\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		netns bool
	}{
		{[]string{"-p", "1"}, false},
		{[]string{"--scope", "netns", "-p", "1"}, true},
		{[]string{"--scope", "netns", "--job", "j"}, true},
		{[]string{"--config", conf, "--job", "j"}, true},
		{[]string{"--config", conf, "--scope", "host", "--job", "j"}, false},
		{[]string{"--scope", "netns", "--", "mpirun", "./a"}, false},
	} {
		cfg, err := parseRootArgs(tc.args, 16<<30)
		if err != nil {
			t.Fatalf("parseRootArgs(%q): %v", tc.args, err)
		}
		if got := cfg.monitor.Proc.Net != nil; got != tc.netns {
			t.Errorf("parseRootArgs(%q): scoped to a network namespace %v, want %v", tc.args, got, tc.netns)
		}
	}
}
