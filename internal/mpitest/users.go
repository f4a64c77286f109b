package mpitest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Nobody and Other are the unprivileged users of the tests: nobody, and a
// second uid with no passwd entry, for what one user must not see of
// another's.
var (
	Nobody = &syscall.Credential{Uid: 65534, Gid: 65534}
	Other  = &syscall.Credential{Uid: 65533, Gid: 65533}
)

// AsUser returns the argv that runs argv as cred's uid and gid, without
// supplementary groups (setpriv, util-linux), in /tmp with HOME=/tmp: the
// test's own directories are root's.
func AsUser(cred *syscall.Credential, argv ...string) []string {
	return append([]string{"setpriv", fmt.Sprintf("--reuid=%d", cred.Uid), fmt.Sprintf("--regid=%d", cred.Gid), "--clear-groups", "--",
		"env", "-C", "/tmp", "HOME=/tmp"}, argv...)
}

// OpenToAll lets every user reach path: it makes the directories above it,
// up to the temporary directory, searchable by all (t.TempDir's are 0700).
func OpenToAll(t testing.TB, path string) {
	t.Helper()
	for dir := filepath.Dir(path); dir != os.TempDir() && dir != "/"; dir = filepath.Dir(dir) {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// UserJob is a job another user than root started, with an agent whose
// query socket every user reaches (StartUserJob).
type UserJob struct {
	*Job
	// Query is the agent's query socket.
	Query string
	Agent *Agent
}

// StartUserJob starts an agent of mpiprobe bin with a query socket, and
// the corpus program testdata/deadlock/<name>.c at np ranks of impl as
// cred, and waits until its rank 0 said the hang began ("hung").
func StartUserJob(t testing.TB, bin string, impl Impl, cred *syscall.Credential, name string, np int) UserJob {
	t.Helper()
	if _, err := exec.LookPath("setpriv"); err != nil {
		Require(t, "setpriv (Debian package util-linux)")
	}
	prog := BuildSource(t, impl, filepath.Join(RepoRoot(t), "testdata", "deadlock", name+".c"))
	OpenToAll(t, bin)
	OpenToAll(t, prog)
	sockDir := t.TempDir()
	OpenToAll(t, filepath.Join(sockDir, "x"))
	d := NewAgentDirs(t)
	d.Query = filepath.Join(sockDir, "query.sock")
	u := UserJob{Query: d.Query, Agent: StartAgent(t, bin, d, "")}
	u.Job = StartJob(t, AsUser(cred, impl.Command(np, nil, prog)...), prog, np, impl.Lib)
	u.WaitPrinted(t, "hung", 30*time.Second)
	return u
}
