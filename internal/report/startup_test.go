package report

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/identity"
)

const ms = time.Millisecond

// startupJob is job 5 on host with one rank per startup, ranks numbered
// from first and pids from 300+first.
func startupProcs(host string, first int, sus ...agg.Startup) []agg.Proc {
	var procs []agg.Proc
	for i, su := range sus {
		procs = append(procs, agg.Proc{PID: 300 + first + i, Comm: "app", Startup: su,
			Identity: identity.Identity{Host: host, Job: "5", Rank: strconv.Itoa(first + i)}})
	}
	return procs
}

func TestWriteTableStartup(t *testing.T) {
	fence := func(init, modex, fin time.Duration) agg.Startup {
		return agg.Startup{InitStart: at(0), Init: init, Modex: modex, ModexVia: "PMIx fence", Finalize: fin}
	}
	procs := startupProcs("n1", 0,
		fence(1200*ms, 400*ms, 2500*time.Microsecond),
		fence(1250*ms, 416666*time.Microsecond, 0),
		agg.Startup{},
		fence(4*time.Second+3*ms, 1333*ms, 12*ms),
		fence(1300*ms, 0, 1500*time.Microsecond),
	)
	procs[1].End = agg.End{Kind: agg.Signaled, Signal: 9, At: at(900)}
	procs[4].End = agg.End{Kind: agg.Exited, At: at(990)}
	samples := []agg.Sample{{PID: 301, Event: "ob1.rndv.fallback", Count: 2, First: at(500), Last: at(600)}}
	var buf bytes.Buffer
	if err := WriteTable(&buf, agg.Build("n1", t0, at(1000), procs, samples, catalog, nil)); err != nil {
		t.Fatal(err)
	}
	want := `mpiprobe on n1, 12:00:00.000 to 12:00:01.000 (1s)

Job 5 on n1 — 5 ranks
┌───────┬───────┬───────────────────┬───────┬──────────────┬──────────────┬────────┐
│ LAYER │ RANKS │       EVENT       │ COUNT │    FIRST     │     LAST     │ ADVICE │
├───────┼───────┼───────────────────┼───────┼──────────────┼──────────────┼────────┤
│ -     │ 1     │ ob1.rndv.fallback │     2 │ 12:00:00.500 │ 12:00:00.600 │ [1]    │
│ -     │ 0,2-4 │ -                 │     0 │ -            │ -            │        │
└───────┴───────┴───────────────────┴───────┴──────────────┴──────────────┴────────┘
COUNT is per rank: a row for several ranks means each of them counted that many.
┌───────┬─────────────┬───────────────────┐
│ RANKS │    PIDS     │       ENDED       │
├───────┼─────────────┼───────────────────┤
│ 0,2-3 │ 300,302-303 │ running           │
│ 1     │ 301         │ killed by SIGKILL │
│ 4     │ 304         │ exit 0            │
└───────┴─────────────┴───────────────────┘
[1] ob1.rndv.fallback: eager send fell back to rendezvous

Startup (MPI_Init, of which modex; MPI_Finalize):
  RANK  PID  ENDED              MPI_INIT  MODEX  FINALIZE
     0  300  running                1.2s  400ms     2.5ms
     1  301  killed by SIGKILL     1.25s  417ms         -
     2  302  running                   -      -         -
     3  303  running                  4s  1.33s      12ms
     4  304  exit 0                 1.3s      -     1.5ms
  MODEX: time inside PMIx fence
  Slowest MPI_Init: rank 3 (pid 303), 4s, 2.73s slower than the median of 4 ranks (1.28s).

Totals over all ranks:
  2  ob1.rndv.fallback  eager send fell back to rendezvous
`
	if got := buf.String(); got != want {
		t.Errorf("output =\n%s\nwant\n%s", got, want)
	}
}

// startupSection is the startup section of WriteTable's output for s, up
// to the next blank line.
func startupSection(t *testing.T, s agg.Summary) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteTable(&buf, s); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	i := strings.Index(out, "Startup (")
	if i < 0 {
		return ""
	}
	sec, _, _ := strings.Cut(out[i:], "\n\n")
	return strings.TrimSuffix(sec, "\n")
}

func TestStartupSection(t *testing.T) {
	tests := []struct {
		name  string
		procs []agg.Proc
		want  string
	}{
		{
			name:  "no startup data, no section",
			procs: startupProcs("n1", 0, agg.Startup{}, agg.Startup{}),
		},
		{
			name: "three ranks: no slowest line; modex by two means; finalize only",
			procs: startupProcs("n1", 0,
				agg.Startup{Init: 2 * time.Second, Modex: time.Second, ModexVia: "PMIx fence"},
				agg.Startup{Finalize: 80 * time.Microsecond},
				agg.Startup{Init: 20 * time.Second, Modex: 19 * time.Second, ModexVia: "UCX address exchange"}),
			want: `Startup (MPI_Init, of which modex; MPI_Finalize):
  RANK  PID  ENDED    MPI_INIT  MODEX  FINALIZE
     0  300  running        2s     1s         -
     1  301  running         -      -      80µs
     2  302  running       20s    19s         -
  MODEX: time inside PMIx fence (rank 0), UCX address exchange (rank 2)`,
		},
		{
			name: "equal times: nobody is slowest",
			procs: startupProcs("n1", 0,
				agg.Startup{Init: time.Second}, agg.Startup{Init: time.Second},
				agg.Startup{Init: time.Second}, agg.Startup{Init: time.Second}),
			want: `Startup (MPI_Init, of which modex; MPI_Finalize):
  RANK  PID  ENDED    MPI_INIT  MODEX  FINALIZE
     0  300  running        1s      -         -
     1  301  running        1s      -         -
     2  302  running        1s      -         -
     3  303  running        1s      -         -`,
		},
		{
			name: "two hosts: the slowest rank's host is named; odd count median",
			procs: append(startupProcs("n1", 0,
				agg.Startup{Init: 100 * ms}, agg.Startup{Init: 110 * ms}),
				startupProcs("n2", 2, agg.Startup{Init: 120 * ms}, agg.Startup{Init: 90 * ms}, agg.Startup{Init: 1500 * ms})...),
			want: `Startup (MPI_Init, of which modex; MPI_Finalize):
  RANK  PID  ENDED    MPI_INIT  MODEX  FINALIZE
     0  300  running     100ms      -         -
     1  301  running     110ms      -         -
     2  302  running     120ms      -         -
     3  303  running      90ms      -         -
     4  304  running      1.5s      -         -
  Slowest MPI_Init: rank 4 (pid 304 on n2), 1.5s, 1.39s slower than the median of 5 ranks (110ms).`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := startupSection(t, agg.Build("n1", t0, at(1000), tc.procs, nil, catalog, nil))
			if got != tc.want {
				t.Errorf("startup section =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1: "1ns", 999: "999ns", 1234: "1.23µs", 416666 * time.Microsecond: "417ms",
		4*time.Second + 3*ms: "4s", 61 * time.Second: "1m1s", 123456 * time.Second: "34h17m36s", 1023 * time.Second: "17m3s", 1234567 * time.Microsecond: "1.23s",
		-1500 * ms: "-1.5s",
	} {
		if got := short(d).String(); got != want {
			t.Errorf("short(%d) = %s, want %s", int64(d), got, want)
		}
	}
}
