package mpitest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// CheckWithPromtool runs "promtool check metrics" on text, a page in the
// Prometheus text exposition format, and fails the test on any complaint:
// a parse error or a lint problem (promtool prints them and exits
// non-zero), or any other output. Without promtool (Debian package
// prometheus) it skips the test, or fails it when MPIPROBE_E2E=require.
func CheckWithPromtool(t testing.TB, text []byte) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		Require(t, "promtool (Debian package prometheus)")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if err == nil && strings.TrimSpace(out.String()) == "" {
		return
	}
	var page strings.Builder
	for i, line := range strings.SplitAfter(string(text), "\n") {
		if line != "" {
			fmt.Fprintf(&page, "%4d  %q\n", i+1, strings.TrimSuffix(line, "\n"))
		}
	}
	t.Errorf("promtool check metrics: %v\n%s\npage (line numbers as promtool counts them):\n%s", err, strings.TrimSpace(out.String()), page.String())
}
