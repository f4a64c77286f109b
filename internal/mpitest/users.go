package mpitest

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
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
