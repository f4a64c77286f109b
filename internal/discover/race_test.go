package discover

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/probes"
)

// raceProc writes a /proc tree with one process 50 whose stat (state,
// start time) and maps are given; "" leaves the file out.
func raceProc(t *testing.T, state string, start string, maps string) procfs.FS {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{}
	if state != "" {
		files["50/stat"] = "50 (rank) " + state + " 1 50 50 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 " + start + " 0 0\n"
	}
	if maps != "" {
		files["50/maps"] = maps
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return procfs.FS{Root: root}
}

const (
	mpiMaps = "7fab7c000000-7fab7c100000 r-xp 00000000 fe:00 12 " + libmpi + "\n" +
		"7fab7d000000-7fab7d100000 r-xp 00000000 fe:00 15 " + ob1File + "\n"
	noOb1Maps = "7fab7c000000-7fab7c100000 r-xp 00000000 fe:00 12 " + libmpi + "\n"
	bashMaps  = "7fab7e000000-7fab7e100000 r-xp 00000000 fe:00 14 " + libDir + "/libc.so.6\n"
)

// TestRecheck: after a failure on a process, Recheck tells a process that
// went away (exited, pid reused, zombie, exec, unmapped library) from one
// that is still there, whose failure is then a real one.
func TestRecheck(t *testing.T) {
	was := Proc{PID: 50, Comm: "rank", StartTime: 100, Libs: Discover(mustParse(t, mpiMaps))}
	for _, tc := range []struct {
		name, state, start, maps string
		want                     string // "" for no race
	}{
		{"still there", "S", "100", mpiMaps, ""},
		{"exited, no /proc entry", "", "", "", "pid 50 (rank) exited while attaching"},
		{"zombie", "Z", "100", "", "exited while attaching"},
		{"dead", "X", "100", "", "exited while attaching"},
		{"pid reused by a later process", "S", "4711", mpiMaps, "exited while attaching"},
		{"stat there, maps gone", "S", "100", "", "exited while attaching"},
		{"exiting: memory released, not yet a zombie", "S", "100", "\n", "exited while attaching"},
		{"exec of a program without MPI", "S", "100", bashMaps, "ran another program (exec) while attaching"},
		{"component unmapped", "S", "100", noOb1Maps, "unmapped " + ob1File + " while attaching"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Recheck(raceProc(t, tc.state, tc.start, tc.maps), was, "attaching")
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Recheck = %v, want nil (the process is still there)", err)
				}
				return
			}
			if err == nil || !IsRace(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Recheck = %v, want a race error containing %q", err, tc.want)
			}
		})
	}
}

// TestSelectRaces: a process that goes away between the reads of
// discovery is reported as gone, not as an error of mpiprobe.
func TestSelectRaces(t *testing.T) {
	for _, tc := range []struct {
		name, state, maps string
		gone              bool
		skipped           string
	}{
		{"maps vanished after stat", "S", "", true, ""},
		{"zombie", "Z", "", true, ""},
		{"no MPI", "S", bashMaps, false, "maps no MPI library"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel := Select(raceProc(t, tc.state, "100", tc.maps), []int{50}, []probes.Library{probes.OMPIPmlOb1})
			if tc.gone != (len(sel.Gone) == 1) {
				t.Fatalf("Gone = %v, want gone=%v", sel.Gone, tc.gone)
			}
			if len(sel.Skipped) != 1 || tc.skipped != "" && !strings.Contains(sel.Skipped[0].Error(), tc.skipped) {
				t.Fatalf("Skipped = %v, want %q", sel.Skipped, tc.skipped)
			}
			if len(sel.Live) != 0 {
				t.Fatalf("Live = %v, want none", sel.Live)
			}
		})
	}
	// A library whose map_files token and root path are gone: the
	// process exited between reading maps and opening the file.
	pfs := raceProc(t, "S", "100", mpiMaps)
	sel := Select(pfs, []int{50}, nil)
	if len(sel.Live) != 1 || len(sel.Gone) != 0 {
		t.Fatalf("live process with unopenable files: Live %v Gone %v, want it live (its files are just not attachable)", sel.Live, sel.Gone)
	}
	if err := os.RemoveAll(filepath.Join(pfs.Root, "50")); err != nil {
		t.Fatal(err)
	}
	if err := Recheck(pfs, sel.Procs[0], "attaching"); !IsRace(err) {
		t.Fatalf("Recheck after exit = %v, want a race", err)
	}
	var r *RaceError
	if err := Recheck(pfs, sel.Procs[0], "attaching"); !errors.As(err, &r) || r.PID != 50 || r.What != "exited" {
		t.Fatalf("RaceError = %+v", r)
	}
}

// TestRecheckAll keeps the processes still there and names the others.
func TestRecheckAll(t *testing.T) {
	pfs := raceProc(t, "S", "100", mpiMaps)
	libs := Discover(mustParse(t, mpiMaps))
	kept, races, changed := RecheckAll(pfs, []Proc{{PID: 50, StartTime: 100, Libs: libs}, {PID: 51, StartTime: 7, Libs: libs}}, "attaching", nil)
	if len(kept) != 1 || kept[0].PID != 50 || len(races) != 1 || !strings.HasPrefix(races[0].Error(), "pid 51 exited while attaching") || len(changed) != 0 {
		t.Fatalf("kept %v, races %v, changed %v", kept, races, changed)
	}
}

// TestRecheckAllComponentUnmapped: a rank that closed a component while
// it was attached to (Open MPI does in MPI_Init) is no race: it is looked
// at again and kept with the libraries it maps now.
func TestRecheckAllComponentUnmapped(t *testing.T) {
	was := Proc{PID: 50, StartTime: 100, Libs: Discover(mustParse(t, mpiMaps))}
	pfs := raceProc(t, "S", "100", noOb1Maps)
	kept, races, changed := RecheckAll(pfs, []Proc{was}, "attaching", nil)
	if len(races) != 0 || len(changed) != 1 || !strings.Contains(changed[0].Error(), "unmapped "+ob1File) {
		t.Fatalf("races %v, changed %v: want the unmapping as a change, no race", races, changed)
	}
	if len(kept) != 1 || kept[0].PID != 50 || len(kept[0].Libs) != 1 || kept[0].Libs[0].Mapping.Path != libmpi {
		t.Fatalf("kept %+v, want pid 50 with only %s", kept, libmpi)
	}
	// Its MPI library itself gone (exec into a program without MPI): a race.
	kept, races, changed = RecheckAll(raceProc(t, "S", "100", bashMaps), []Proc{was}, "attaching", nil)
	if len(kept) != 0 || len(races) != 1 || len(changed) != 0 {
		t.Fatalf("exec: kept %v, races %v, changed %v", kept, races, changed)
	}
}

// TestRaceErrorHostileComm: a command name with control characters is
// shown escaped in the one line.
func TestRaceErrorHostileComm(t *testing.T) {
	msg := (&RaceError{PID: 1, Comm: "a\nb\x1b[31m", What: "exited", During: "attaching"}).Error()
	if strings.ContainsAny(msg, "\n\x1b") {
		t.Fatalf("RaceError shows control characters: %q", msg)
	}
}
