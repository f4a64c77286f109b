package jobstore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/atomicfile"
)

// hostile are job ids users could set to escape the directory or confuse
// a listing.
var hostile = []string{"../../etc/passwd", "a/b", "\n", ".", "..", ".hidden", "/", "a\x00b", "%", "%2F", "x.json",
	"ü", "\xff", "a b", "-rf", "100", "12345@0", "job.0+1_a-Z"}

func TestFileName(t *testing.T) {
	for job, want := range map[string]string{
		"../../etc/passwd": "%2E.%2F..%2Fetc%2Fpasswd",
		"a/b":              "a%2Fb",
		"\n":               "%0A",
		"":                 "",
		".":                "%2E",
		"..":               "%2E.",
		".hidden":          "%2Ehidden",
		"a.b":              "a.b",
		"%":                "%25",
		"%2F":              "%252F",
		"ü":                "%C3%BC",
		"a b":              "a%20b",
		"12345@0":          "12345@0",
		"job.0+1_a-Z":      "job.0+1_a-Z",
		"x.json":           "x.json",
		"a\\b:c*?":         "a%5Cb%3Ac%2A%3F",
		"-rf":              "%2Drf",
		"a-b":              "a-b",
	} {
		if got := FileName(job); got != want {
			t.Errorf("FileName(%q) = %q, want %q", job, got, want)
		}
	}
	for _, job := range hostile {
		checkName(t, job)
	}
}

// checkName checks FileName's promises for job.
func checkName(t *testing.T, job string) {
	t.Helper()
	name := FileName(job)
	if strings.ContainsAny(name, "/\x00") || name == "." || name == ".." || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "-") {
		t.Errorf("FileName(%q) = %q: not a plain file name", job, name)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !safe(c) && c != '%' {
			t.Errorf("FileName(%q) = %q has byte %q", job, name, c)
		}
	}
	if job == "" {
		return
	}
	if got, ok := JobOf(name + ".json"); !ok || got != job {
		t.Errorf("JobOf(%q) = %q, %v; want %q", name+".json", got, ok, job)
	}
}

func TestJobOfRejects(t *testing.T) {
	for _, name := range []string{
		"", ".json", "x", "x.js", "x.json.tmp", ".mpiprobe-123.tmp", ".mpiprobe-1.json", ".x.json",
		"%2e.json", "%41.json", "a%2E.json", "%2.json", "%.json", "%G0.json", "a/b.json", "a b.json", "a\n.json",
		"-rf.json", "a%2D.json",
	} {
		if job, ok := JobOf(name); ok {
			t.Errorf("JobOf(%q) = %q, true; want false", name, job)
		}
	}
	if job, ok := JobOf("%2E.json"); !ok || job != "." {
		t.Errorf(`JobOf("%%2E.json") = %q, %v`, job, ok)
	}
}

func FuzzFileName(f *testing.F) {
	for _, job := range hostile {
		f.Add(job)
		f.Add(FileName(job) + ".json")
	}
	f.Add("")
	f.Add("%2e%2E..json")
	f.Fuzz(func(t *testing.T, s string) {
		checkName(t, s)
		// JobOf accepts exactly the names FileName makes.
		if job, ok := JobOf(s); ok && (job == "" || FileName(job)+".json" != s) {
			t.Errorf("JobOf(%q) = %q, but FileName(%q) = %q", s, job, job, FileName(job))
		}
	})
}

// withUmask runs f under umask m.
func withUmask(m int, f func()) {
	old := syscall.Umask(m)
	defer syscall.Umask(old)
	f()
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func TestSaveLoad(t *testing.T) {
	for _, umask := range []int{0, 0o022, 0o077, 0o777} {
		t.Run(fmt.Sprintf("umask %03o", umask), func(t *testing.T) {
			s := Store{Dir: filepath.Join(t.TempDir(), "state", "jobs")}
			withUmask(umask, func() {
				if err := s.Save("100", []byte("one")); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(s.Path("100"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := s.Save("100", []byte("two")); err != nil { // replaces, mode again 0640
					t.Fatal(err)
				}
			})
			if m := mode(t, s.Dir); m != fs.ModeDir|0o750 {
				t.Errorf("dir mode %v, want drwxr-x---", m)
			}
			if m := mode(t, s.Path("100")); m != 0o640 {
				t.Errorf("file mode %v, want -rw-r-----", m)
			}
			got, err := s.Load("100")
			if err != nil || string(got) != "two" {
				t.Errorf("Load = %q, %v; want two", got, err)
			}
		})
	}
}

// TestSaveKeepsDirMode: an existing directory is not changed.
func TestSaveKeepsDirMode(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	if err := os.Chmod(s.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Save("1", nil); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, s.Dir); m != fs.ModeDir|0o755 {
		t.Errorf("dir mode %v, want drwxr-xr-x", m)
	}
	if got, err := s.Load("1"); err != nil || len(got) != 0 {
		t.Errorf("Load = %q, %v; want empty", got, err)
	}
}

func TestHostileJobs(t *testing.T) {
	root := t.TempDir()
	s := Store{Dir: filepath.Join(root, "a", "jobs")}
	for _, job := range hostile {
		if err := s.Save(job, []byte(job)); err != nil {
			t.Fatalf("Save(%q): %v", job, err)
		}
	}
	for _, job := range hostile {
		got, err := s.Load(job)
		if err != nil || string(got) != job {
			t.Errorf("Load(%q) = %q, %v", job, got, err)
		}
	}
	// Every file is directly in Dir.
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && filepath.Dir(path) != s.Dir {
			t.Errorf("file outside the store: %s", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for _, e := range entries {
		jobs = append(jobs, e.Job)
		if filepath.Dir(e.Path) != s.Dir {
			t.Errorf("entry %q outside the store: %s", e.Job, e.Path)
		}
	}
	slices.Sort(jobs)
	want := slices.Clone(hostile)
	slices.Sort(want)
	if !reflect.DeepEqual(jobs, want) {
		t.Errorf("listed %q, want %q", jobs, want)
	}
}

func TestBadJobs(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	long := strings.Repeat("x", 251)
	for _, tc := range []struct{ job, want string }{
		{"", `jobstore: save "": empty job id`},
		{long, `jobstore: save ` + long + `: job id too long for a file name (251 bytes escaped, at most 250)`},
		{strings.Repeat(" ", 84), `jobstore: save "` + strings.Repeat(" ", 84) + `": job id too long for a file name (252 bytes escaped, at most 250)`},
		{strings.Repeat("/", 84), `jobstore: save ` + strings.Repeat("/", 84) + `: job id too long for a file name (252 bytes escaped, at most 250)`},
	} {
		if err := s.Save(tc.job, nil); err == nil || err.Error() != tc.want {
			t.Errorf("Save(%q) = %v, want %s", tc.job, err, tc.want)
		}
	}
	if err := s.Save(strings.Repeat("x", 250), []byte("ok")); err != nil {
		t.Errorf("Save of a 250-byte id: %v", err)
	}
	if _, err := s.Load(""); err == nil || err.Error() != `jobstore: load "": empty job id` {
		t.Errorf("Load(\"\") = %v", err)
	}
	if err := (Store{}).Save("1", nil); err == nil || err.Error() != "jobstore: save 1: no directory" {
		t.Errorf("Save without a directory = %v", err)
	}
	if _, err := (Store{}).List(); err == nil || err.Error() != "jobstore: list: no directory" {
		t.Errorf("List without a directory = %v", err)
	}
}

func TestLoadMissing(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	_, err := s.Load("a b/c")
	var nf *NotFoundError
	if !errors.As(err, &nf) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want a NotFoundError", err)
	}
	want := `jobstore: no summary of job "a b/c" in ` + s.Dir + ` (mpiprobe jobs lists the jobs there)`
	if err.Error() != want {
		t.Errorf("err = %s\nwant %s", err, want)
	}
}

func TestSaveErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := Store{Dir: file}.Save("7", []byte("x"))
	if err == nil || !strings.HasPrefix(err.Error(), "jobstore: save 7: ") || !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("Save into a file: %v", err)
	}
	// A directory in the way of the job's file: the rename fails and no
	// temporary file stays behind.
	s := Store{Dir: dir}
	if err := os.Mkdir(s.Path("8"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.Save("8", []byte("x")); err == nil || !strings.HasPrefix(err.Error(), "jobstore: save 8: write "+s.Path("8")+": ") {
		t.Errorf("Save over a directory: %v", err)
	}
	des, _ := os.ReadDir(dir)
	for _, de := range des {
		if atomicfile.IsTemp(de.Name()) {
			t.Errorf("temporary file left: %s", de.Name())
		}
	}
}

// TestAtomic: readers see a whole summary, never part of one, while
// writers replace it.
func TestAtomic(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	big := bytes.Repeat([]byte("a"), 1<<20)
	small := []byte("b")
	if err := s.Save("9", small); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				data := small
				if (i+w)%2 == 0 {
					data = big
				}
				if err := s.Save("9", data); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	deadline := time.Now().Add(300 * time.Millisecond)
	reads := 0
	for time.Now().Before(deadline) {
		got, err := s.Load("9")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, small) && !bytes.Equal(got, big) {
			t.Fatalf("read %d bytes, neither summary", len(got))
		}
		entries, err := s.List()
		if err != nil || len(entries) != 1 || entries[0].Job != "9" {
			t.Fatalf("List = %+v, %v; want job 9 only", entries, err)
		}
		reads++
	}
	close(stop)
	wg.Wait()
	t.Logf("%d reads", reads)
	des, _ := os.ReadDir(s.Dir)
	if len(des) != 1 {
		t.Errorf("%d files left, want 1", len(des))
	}
}

// setAge writes job's file, last modified at t.
func setAge(t *testing.T, s Store, job string, at time.Time) {
	t.Helper()
	if err := s.Save(job, []byte(job)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(s.Path(job), at, at); err != nil {
		t.Fatal(err)
	}
}

// TestCrash: a temporary file left by a crashed Save is not listed, and
// Prune removes it once it is an hour old.
func TestCrash(t *testing.T) {
	now := time.Now()
	s := Store{Dir: t.TempDir(), Now: func() time.Time { return now }}
	setAge(t, s, "1", now)
	tmp := filepath.Join(s.Dir, atomicfile.TempPrefix+"123456"+atomicfile.TempSuffix)
	if err := os.WriteFile(tmp, []byte(`{"host": "n1", "jo`), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(s.Dir, "notes.txt") // not ours: never touched
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(other, now.Add(-48*time.Hour), now.Add(-48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	entries, err := s.List()
	if err != nil || len(entries) != 1 || entries[0].Job != "1" {
		t.Fatalf("List = %+v, %v; want job 1 only", entries, err)
	}
	if err := os.Chtimes(tmp, now.Add(-59*time.Minute), now.Add(-59*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if removed, err := s.Prune(nil); err != nil || len(removed) != 0 {
		t.Fatalf("Prune = %q, %v", removed, err)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Errorf("young temporary file removed: %v", err)
	}
	now = now.Add(2 * time.Minute)
	if removed, err := s.Prune(nil); err != nil || len(removed) != 0 {
		t.Fatalf("Prune = %q, %v", removed, err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale temporary file not removed: %v", err)
	}
	for _, p := range []string{other, s.Path("1")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

func TestPrune(t *testing.T) {
	base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	running := func(job string) bool { return job == "j1" || job == "j8" }
	tests := []struct {
		name   string
		keep   int
		maxAge time.Duration
		isKept func(string) bool
		want   []string // removed, newest first
	}{
		{name: "no limits", want: nil},
		{name: "by count", keep: 3, want: []string{"j3", "j4", "j5", "j6", "j7", "j8", "j9"}},
		{name: "by count, running jobs kept and not counted", keep: 3, isKept: running, want: []string{"j4", "j5", "j6", "j7", "j9"}},
		{name: "by age", maxAge: 4*time.Hour + 30*time.Minute, want: []string{"j5", "j6", "j7", "j8", "j9"}},
		{name: "by age, running jobs kept", maxAge: 4*time.Hour + 30*time.Minute, isKept: running, want: []string{"j5", "j6", "j7", "j9"}},
		{name: "age exactly MaxAge is kept", maxAge: 9 * time.Hour, want: nil},
		{name: "both", keep: 2, maxAge: time.Hour + time.Minute, isKept: running, want: []string{"j2", "j3", "j4", "j5", "j6", "j7", "j9"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Store{Dir: t.TempDir(), Keep: tc.keep, MaxAge: tc.maxAge, Now: func() time.Time { return base }}
			var all []string
			for i := range 10 {
				job := fmt.Sprintf("j%d", i)
				setAge(t, s, job, base.Add(-time.Duration(i)*time.Hour))
				all = append(all, job)
			}
			removed, err := s.Prune(tc.isKept)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(removed, tc.want) {
				t.Errorf("removed %q, want %q", removed, tc.want)
			}
			entries, err := s.List()
			if err != nil {
				t.Fatal(err)
			}
			var left []string
			for _, e := range entries {
				left = append(left, e.Job)
			}
			var want []string
			for _, j := range all {
				if !slices.Contains(tc.want, j) {
					want = append(want, j)
				}
			}
			if !reflect.DeepEqual(left, want) {
				t.Errorf("left %q, want %q (newest first)", left, want)
			}
		})
	}
}

func TestListMissingDir(t *testing.T) {
	s := Store{Dir: filepath.Join(t.TempDir(), "none")}
	entries, err := s.List()
	if err != nil || entries != nil {
		t.Errorf("List = %v, %v; want nothing", entries, err)
	}
	if removed, err := s.Prune(nil); err != nil || removed != nil {
		t.Errorf("Prune = %v, %v; want nothing", removed, err)
	}
}

func TestListSkipsOthers(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	setAge(t, s, "b", time.Unix(2000, 0))
	setAge(t, s, "a", time.Unix(2000, 0))
	setAge(t, s, "c", time.Unix(3000, 0))
	if err := os.Mkdir(filepath.Join(s.Dir, "d.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(s.Dir, "e.json")); err != nil {
		t.Fatal(err)
	}
	entries, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Job+"@"+fmt.Sprint(e.Modified.Unix()))
	}
	if want := []string{"c@3000", "a@2000", "b@2000"}; !reflect.DeepEqual(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
}

func TestJobsDir(t *testing.T) {
	if got := JobsDir(DefaultStateDir); got != "/var/lib/mpiprobe/jobs" {
		t.Errorf("JobsDir = %s", got)
	}
}

func TestKey(t *testing.T) {
	long := strings.Repeat("/", 100) // 300 bytes once escaped
	for _, job := range []string{"812.3", "-rf", "a b"} {
		if got := Key(job); got != job {
			t.Errorf("Key(%q) = %q, want it unchanged", job, got)
		}
	}
	seen := map[string]string{}
	for _, job := range []string{"pid-4242", "pid-", "job-0011223344556677", long, long + "x"} {
		k := Key(job)
		if !strings.HasPrefix(k, "job-") || len(k) != 4+16 || k == job {
			t.Errorf("Key(%q) = %q, want job- and 16 hex digits", job, k)
		}
		if other, ok := seen[k]; ok {
			t.Errorf("Key(%q) = Key(%q) = %q", job, other, k)
		}
		seen[k] = job
		if Key(k) == k {
			t.Errorf("Key(Key(%q)) = %q: a key is taken for an id", job, k)
		}
	}
}

// TestNoSymlinks plants symbolic links in the store: one in place of a
// job's file, one in place of the directory itself. Neither is followed:
// Load does not read the file the link names, and Save, Load, List and
// Prune refuse a linked directory, naming it, without touching its target.
func TestNoSymlinks(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := Store{Dir: t.TempDir()}
	if err := os.Symlink(secret, s.Path("j")); err != nil {
		t.Fatal(err)
	}
	if data, err := s.Load("j"); !errors.Is(err, atomicfile.ErrNotRegular) {
		t.Errorf("Load through a linked file = %q, %v; want ErrNotRegular", data, err)
	}

	target := t.TempDir()
	if err := os.WriteFile(filepath.Join(target, "k.json"), []byte("other"), 0o600); err != nil {
		t.Fatal(err)
	}
	linked := Store{Dir: filepath.Join(t.TempDir(), "jobs"), Keep: 1}
	if err := os.Symlink(target, linked.Dir); err != nil {
		t.Fatal(err)
	}
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, ErrLinkedDir) || !strings.Contains(err.Error(), linked.Dir) {
			t.Errorf("%s in a linked directory: %v; want ErrLinkedDir naming %s", op, err, linked.Dir)
		}
	}
	check("Save", linked.Save("j", []byte("x")))
	_, err := linked.Load("k")
	check("Load", err)
	_, err = linked.List()
	check("List", err)
	_, err = linked.Prune(nil)
	check("Prune", err)
	des, err := os.ReadDir(target)
	if err != nil || len(des) != 1 {
		t.Errorf("the link's target holds %d files (%v), want only its own", len(des), err)
	}
}
