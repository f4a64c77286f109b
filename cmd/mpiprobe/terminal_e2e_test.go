package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// runOnTerminal runs mpiprobe with its stdout on a pseudo-terminal cols
// columns wide and returns what it printed there.
func runOnTerminal(t *testing.T, bin string, cols uint16, args ...string) string {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		mpitest.Require(t, "a pseudo-terminal: "+err.Error())
	}
	defer master.Close()
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: cols}); err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(master) // ends with EIO once the slave is closed
		out <- string(b)
	}()
	var stderr strings.Builder
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = slave, &stderr
	err = cmd.Run()
	slave.Close()
	got := strings.ReplaceAll(<-out, "\r\n", "\n")
	if err != nil {
		t.Fatalf("mpiprobe %s: %v\n%s%s", strings.Join(args, " "), err, got, stderr.String())
	}
	return got
}

// widest is the widest line of s, in runes (box characters are one
// column each).
func widest(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		n = max(n, utf8.RuneCountInString(l))
	}
	return n
}

// TestTablesFitTerminal: ps and probes on a terminal 90 columns wide print
// tables no wider (their cells wrap), and as wide as their cells with
// --wide or into a pipe.
func TestTablesFitTerminal(t *testing.T) {
	bin, job := pausedFlood(t)
	const cols = 90
	for _, args := range [][]string{{"ps"}, {"probes", "-p", strconv.Itoa(job.Ranks[0])}} {
		name := strings.Join(args, " ")
		fit := runOnTerminal(t, bin, cols, args...)
		if w := widest(fit); w > cols || !strings.Contains(fit, "┌") {
			t.Errorf("mpiprobe %s on a %d-column terminal: a line of %d:\n%s", name, cols, w, fit)
		}
		wide := runOnTerminal(t, bin, cols, append(args, "--wide")...)
		code, piped, stderr := runOutput(t, bin, nil, args...)
		// Other processes of the node may come and go between the runs:
		// each is compared with the terminal's width, not with the other.
		if code != 0 || widest(wide) <= cols || widest(piped) <= cols {
			t.Errorf("mpiprobe %s: --wide %d columns, into a pipe %d (exit %d, %s); want both as wide as the cells, over %d",
				name, widest(wide), widest(piped), code, stderr, cols)
		}
	}
}
