package main

import (
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// The catalog tests run each event's trigger, a small MPI program whose
// parameters make the event happen, and a control that must stay silent for
// the events the trigger checks. Expected counts are derived from the
// parameters below; where the count depends on timing, the tests assert
// bounds that follow from the program and relations between events.

// catNP is the number of ranks of every job here: rank 0 sends, rank 1 receives.
const catNP = 2

// Library defaults the controls rely on (ompi_info, Open MPI 4.1).
const (
	// vaderDefaultFreeListMax is btl_vader_free_list_max's default: a job
	// with fewer sends in flight cannot reach it.
	vaderDefaultFreeListMax = 512
	// tcpEndpointCache is btl_tcp_endpoint_cache's default: the TCP BTL
	// reads up to this much beyond the fragment it expects, so a job whose
	// whole traffic fits in it never reads a fragment in part.
	tcpEndpointCache = 30720
	// catHeaderBound bounds the bytes the PML and BTL add to each message.
	catHeaderBound = 64
)

// testdata/unexpected.c: N messages that all arrive before rank 1 posts
// their receives (and, with -p, the control where all are pre-posted).
const (
	unexpectedN        = 1000
	unexpectedEager    = 1024   // below btl_vader_eager_limit (4096): sent eagerly
	unexpectedRndv     = 262144 // above it: the rendezvous protocol
	unexpectedQuietN   = 20     // fewer than UCX's shared-memory FIFO holds: 100 back-to-back sends filled it under MPICH (ucx.pending_add 38)
	unexpectedBarriers = 1      // MPI_Barrier calls of unexpected.c
	// zeroByteSlack: the arrival probes count a message as unexpected when
	// the match callback returns without unpacking it, which is also what a
	// zero-byte message matched on arrival does; unexpected.c's barrier
	// sends one such message to each rank, and the tests allow up to 3.
	zeroByteSlack = 3
)

// testdata/errors.c: errorsN erroneous sends on rank 0 and errorsN
// truncated receives on rank 1; -c makes all of them valid.
const errorsN = 5

// testdata/flood.c: rank 0 posts n MPI_Isends to rank 1, which sleeps
// delay ms before posting its receives.
const (
	floodFLN, floodFLSize, floodFLDelay = 2000, 2048, 200 // the free-list flood
	floodFLMax                          = 64              // --mca btl_vader_free_list_max of the trigger
	floodFLControlN                     = 100             // control: fewer than vaderDefaultFreeListMax in flight

	rndvN, rndvVaderSize, rndvTCPSize = 64, 262144, 1048576 // rendezvous stalls
	rndvFreeListMax                   = 8                   // btl_vader_free_list_max / btl_tcp_free_list_max

	oosN, oosSize, oosRounds = 5000, 1024, 4 // out of sequence over vader+tcp

	tcpN, tcpSize, tcpSockBuf = 200, 65536, 8192 // partial TCP I/O
	// The control's traffic fits in tcpEndpointCache: with -n 200 -s 1024
	// rank 1 read a fragment in part (tcp.partial_io=1) in 2 of 10 runs.
	tcpControlN, tcpControlSize = 20, 1024
	// tcpConnectQueued: the first message on a TCP connection is queued
	// while the connection is set up; flood's first MPI_Barrier sends one
	// per rank.
	tcpConnectQueued = 1

	sendiN, sendiSize = 2000, 200 // vader fast-path refusals
	// sendiControlN messages overflow the default 4 KiB fast box (18
	// refusals with -d 0), so the control applies the event's advice.
	sendiControlN = 50
	// sendiControlFbox is the fast box of the sendi control (the event's
	// advice applied): sendiControlN small messages fit in it.
	sendiControlFbox = 65536

	ucxFloodN, ucxFloodSize, ucxFloodDelay = 2000, 2048, 200 // UCX pending queue
	ucxFloodControlN                       = 10
)

// floodBarriers is how many MPI_Barrier calls flood.c makes with -r rounds:
// one before timing, one per round, one at the end. On 2 ranks each sends
// one zero-byte message to the other rank.
func floodBarriers(rounds int) uint64 { return uint64(rounds) + 2 }

// total returns the count of event in rank over all its details.
func (s summary) total(rank, event string) uint64 {
	n, _ := s.count(rank, event)
	return n
}

// detail returns the total of event in rank with the given detail.
func (s summary) detail(rank, event, detail string) (summaryEvent, bool) {
	es, _ := s.events(rank, event)
	for _, e := range es {
		if e.Detail == detail {
			return e, true
		}
	}
	return summaryEvent{}, false
}

// ranks returns the ranks of the summary, sorted.
func (s summary) ranks() []string {
	var out []string
	for _, j := range s.Jobs {
		for _, r := range j.Ranks {
			out = append(out, string(r.Rank))
		}
	}
	sort.Strings(out)
	return out
}

// String lists every rank's events, for logs and failure messages.
func (s summary) String() string {
	var b strings.Builder
	for _, j := range s.Jobs {
		for _, r := range j.Ranks {
			fmt.Fprintf(&b, "  rank %s (%s):", r.Rank, r.End.Text)
			if len(r.Events) == 0 {
				b.WriteString(" no events")
			}
			for _, e := range r.Events {
				b.WriteString(" " + e.Event)
				if e.Detail != "" {
					b.WriteString("[" + e.Detail + "]")
				}
				fmt.Fprintf(&b, "=%d", e.Count)
				if e.Peak != 0 {
					fmt.Fprintf(&b, "(peak %d)", e.Peak)
				}
			}
			b.WriteString("\n")
		}
	}
	for _, d := range s.Dropped {
		fmt.Fprintf(&b, "  dropped %s: %d\n", d.What, d.Count)
	}
	return b.String()
}

// catalogRun is one traced job: a testdata program with its arguments,
// the launcher's options (--mca settings) and the --events levels.
type catalogRun struct {
	prog   string
	args   []string
	opts   []string
	events string
}

// ompiMCA returns --mca pml ob1 and the given name/value pairs as --mca options.
func ompiMCA(kv ...string) []string {
	opts := []string{"--mca", "pml", "ob1"}
	for i := 0; i+1 < len(kv); i += 2 {
		opts = append(opts, "--mca", kv[i], kv[i+1])
	}
	return opts
}

// itoa shortens the program arguments below.
func itoa(n int) string { return strconv.Itoa(n) }

// catCheck asserts on the summary of one run; label says which run
// (trigger or control, and its command line) in failure messages.
type catCheck struct {
	t      *testing.T
	s      summary
	label  string
	stderr string // mpiprobe's log
}

func (c catCheck) failf(format string, args ...any) {
	c.t.Helper()
	c.t.Errorf("%s:\n  %s\nevents seen:\n%s", c.label, fmt.Sprintf(format, args...), c.s)
}

// exactly asserts that rank's total of event is want; why says where want comes from.
func (c catCheck) exactly(rank, event string, want uint64, why string) {
	c.t.Helper()
	if got := c.s.total(rank, event); got != want {
		c.failf("rank %s %s = %d, want exactly %d: %s", rank, event, got, want, why)
	}
}

// between asserts lo <= rank's total of event <= hi.
func (c catCheck) between(rank, event string, lo, hi uint64, why string) {
	c.t.Helper()
	if got := c.s.total(rank, event); got < lo || got > hi {
		c.failf("rank %s %s = %d, want %d ≤ count ≤ %d: %s", rank, event, got, lo, hi, why)
	}
}

// atLeast asserts rank's total of event is at least lo.
func (c catCheck) atLeast(rank, event string, lo uint64, why string) {
	c.t.Helper()
	if got := c.s.total(rank, event); got < lo {
		c.failf("rank %s %s = %d, want ≥ %d: %s", rank, event, got, lo, why)
	}
}

// atMostEach asserts every rank's total of event is at most hi.
func (c catCheck) atMostEach(event string, hi uint64, why string) {
	c.t.Helper()
	for _, r := range c.s.ranks() {
		if got := c.s.total(r, event); got > hi {
			c.failf("rank %s %s = %d, want ≤ %d: %s", r, event, got, hi, why)
		}
	}
}

// silent asserts that event fired on no rank.
func (c catCheck) silent(event, why string) {
	c.t.Helper()
	c.atMostEach(event, 0, why)
}

// runCatalog runs r under mpiprobe --json --events r.events and returns
// its summary, after checking that both ranks were traced and exited 0 and
// that no counter update was dropped.
func runCatalog(t *testing.T, bin string, impl mpitest.Impl, progs map[string]string, what string, r catalogRun, more ...string) catCheck {
	t.Helper()
	prog, ok := progs[r.prog]
	if !ok {
		prog = mpitest.Build(t, impl, r.prog)
		progs[r.prog] = prog
	}
	job := impl.Command(catNP, r.opts, prog, r.args...)
	flags := append([]string{"--events", r.events}, more...)
	label := fmt.Sprintf("%s: mpiprobe %s -- %s %s %s", what, strings.Join(flags, " "),
		strings.Join(job[:len(job)-len(r.args)-1], " "), r.prog, strings.Join(r.args, " "))
	res := runMpiprobe(t, bin, append(append(flags, "--"), job...)...)
	s := res.sum
	t.Logf("%s\n%s", label, s)
	if got := s.ranks(); strings.Join(got, ",") != "0,1" {
		t.Fatalf("%s: ranks %v in the summary, want 0,1 (-np %d)\nstdout:\n%s\nstderr:\n%s", label, got, catNP, res.stdout, res.stderr)
	}
	for _, j := range s.Jobs {
		for _, rk := range j.Ranks {
			if rk.End.State != "exited" || rk.End.Code == nil || *rk.End.Code != 0 {
				t.Fatalf("%s: rank %s ended %q, want exited 0 (the programs check their own results)\nstdout:\n%s\nstderr:\n%s",
					label, rk.Rank, rk.End.Text, res.stdout, res.stderr)
			}
		}
	}
	if len(s.Dropped) > 0 {
		t.Fatalf("%s: counter updates were dropped, counts are not exact:\n%s", label, s)
	}
	return catCheck{t: t, s: s, label: label, stderr: res.stderr}
}

// catalogCase is one scenario: a trigger run whose summary checkTrigger
// asserts on, and a control run that checkControl asserts stays silent.
type catalogCase struct {
	name         string
	impl         mpitest.Impl
	trigger      catalogRun
	checkTrigger func(c catCheck)
	control      catalogRun
	checkControl func(c catCheck)
}

func catalogCases(t *testing.T) []catalogCase {
	ompi, mpich := mpitest.OpenMPI(), mpitest.MPICH()
	vader := ompiMCA("btl", "self,vader")
	// The shared-memory BTL's fragments, and the parameters that turn its
	// single copy off: Open MPI 5.0 renamed vader sm and moved single copy
	// to the smsc framework, where btl_vader_single_copy_mechanism means
	// nothing.
	smFrag, noSingleCopy := "mca_btl_vader_frag_t", []string{"btl_vader_single_copy_mechanism", "none"}
	if _, err := exec.LookPath(ompi.CC); err == nil && ompi.SharedMemoryBTL(t) == "sm" {
		smFrag, noSingleCopy = "mca_btl_sm_frag_t", []string{"smsc", "^cma,knem,xpmem"}
	}
	unexpectedArgs := func(size int, more ...string) []string {
		return append([]string{"-n", itoa(unexpectedN), "-s", itoa(size)}, more...)
	}
	// floodArgs: n messages of size bytes, receiver delay ms, rounds.
	floodArgs := func(n, size, delay, rounds int) []string {
		return []string{"-n", itoa(n), "-s", itoa(size), "-d", itoa(delay), "-r", itoa(rounds)}
	}
	errorsTrigger := func(c catCheck) {
		c.t.Helper()
		for _, w := range []struct{ rank, detail string }{
			{"0", "MPI_ERR_RANK in MPI_Send"},     // sends to rank `size`, which does not exist
			{"1", "MPI_ERR_TRUNCATE in MPI_Recv"}, // receives 16 ints with count 8
		} {
			why := fmt.Sprintf("errors -n %d makes %d calls fail on rank %s with %q", errorsN, errorsN, w.rank, w.detail)
			e, ok := c.s.detail(w.rank, "mpi.error", w.detail)
			if !ok || e.Count != errorsN {
				c.failf("rank %s mpi.error[%s] = %d (present: %v), want exactly %d: %s", w.rank, w.detail, e.Count, ok, errorsN, why)
			}
			c.exactly(w.rank, "mpi.error", errorsN, why+", and no other error")
		}
	}
	errorsControl := func(c catCheck) {
		c.t.Helper()
		c.silent("mpi.error", "errors -c makes every call valid")
	}

	return []catalogCase{
		{
			// 1. Eager messages that all arrive before their receives.
			name:    "ompi_unexpected_eager",
			impl:    ompi,
			trigger: catalogRun{"unexpected", unexpectedArgs(unexpectedEager), vader, "default,messages"},
			checkTrigger: func(c catCheck) {
				why := fmt.Sprintf("unexpected -n %d: rank 1 posts every receive after its message arrived", unexpectedN)
				c.exactly("1", "ob1.unexpected.late_recv", unexpectedN, why)
				c.between("1", "ob1.unexpected.arrival", unexpectedN, unexpectedN+zeroByteSlack,
					why+fmt.Sprintf(", plus up to %d zero-byte (barrier) messages the probe cannot tell apart", zeroByteSlack))
			},
			control: catalogRun{"unexpected", unexpectedArgs(unexpectedEager, "-p"), vader, "default,messages"},
			checkControl: func(c catCheck) {
				c.silent("ob1.unexpected.late_recv", "unexpected -p pre-posts every receive before the barrier")
				c.atMostEach("ob1.unexpected.arrival", zeroByteSlack,
					fmt.Sprintf("unexpected -p: only zero-byte messages (%d barrier) can count", unexpectedBarriers))
			},
		},
		{
			// 1b. The same with rendezvous-sized messages.
			name:    "ompi_unexpected_rendezvous",
			impl:    ompi,
			trigger: catalogRun{"unexpected", unexpectedArgs(unexpectedRndv), vader, "messages"},
			checkTrigger: func(c catCheck) {
				c.exactly("1", "ob1.unexpected.late_recv", unexpectedN,
					fmt.Sprintf("unexpected -n %d -s %d: every rendezvous header arrives before its receive", unexpectedN, unexpectedRndv))
			},
			control: catalogRun{"unexpected", unexpectedArgs(unexpectedRndv, "-p"), vader, "messages"},
			checkControl: func(c catCheck) {
				c.silent("ob1.unexpected.late_recv", "unexpected -p pre-posts every receive before the barrier")
			},
		},
		{
			// 2. MPI errors returned to the application (MPI_ERRORS_RETURN).
			name:         "ompi_mpi_error",
			impl:         ompi,
			trigger:      catalogRun{"errors", []string{"-n", itoa(errorsN)}, vader, "default"},
			checkTrigger: errorsTrigger,
			control:      catalogRun{"errors", []string{"-n", itoa(errorsN), "-c"}, vader, "default"},
			checkControl: errorsControl,
		},
		{
			name:         "mpich_mpi_error",
			impl:         mpich,
			trigger:      catalogRun{"errors", []string{"-n", itoa(errorsN)}, nil, "default"},
			checkTrigger: errorsTrigger,
			control:      catalogRun{"errors", []string{"-n", itoa(errorsN), "-c"}, nil, "default"},
			checkControl: errorsControl,
		},
		{
			// 3. The vader send free list capped below the sends in flight.
			name: "ompi_free_list_at_max",
			impl: ompi,
			trigger: catalogRun{"flood", floodArgs(floodFLN, floodFLSize, floodFLDelay, 1),
				ompiMCA("btl", "self,vader", "btl_vader_free_list_max", itoa(floodFLMax)), "default,retries"},
			checkTrigger: func(c catCheck) {
				why := fmt.Sprintf("flood -n %d posts more sends than btl_vader_free_list_max=%d fragments while rank 1 sleeps %d ms",
					floodFLN, floodFLMax, floodFLDelay)
				e, ok := c.s.detail("0", "pal.free_list.at_max", smFrag)
				if !ok || e.Count == 0 {
					c.failf("rank 0 has no pal.free_list.at_max[%s]: %s", smFrag, why)
				}
				for _, r := range c.s.ranks() {
					if e, ok := c.s.detail(r, "pal.free_list.at_max", smFrag); ok && e.Peak != floodFLMax {
						c.failf("rank %s pal.free_list.at_max[%s] peak = %d, want %d = btl_vader_free_list_max", r, smFrag, e.Peak, floodFLMax)
					}
					if e, ok := c.s.detail(r, "pal.free_list.grow", smFrag); ok && e.Peak > floodFLMax {
						c.failf("rank %s pal.free_list.grow[%s] peak = %d, want ≤ %d = btl_vader_free_list_max", r, smFrag, e.Peak, floodFLMax)
					}
				}
			},
			control: catalogRun{"flood", floodArgs(floodFLControlN, floodFLSize, 0, 1), vader, "default,retries"},
			checkControl: func(c catCheck) {
				c.silent("pal.free_list.at_max", fmt.Sprintf("flood -n %d -d 0 has fewer sends in flight than the default btl_vader_free_list_max %d",
					floodFLControlN, vaderDefaultFreeListMax))
			},
		},
		{
			// 4 and 8. Rendezvous over vader without single copy, 8 fragments.
			name: "ompi_rndv_stall_vader",
			impl: ompi,
			trigger: catalogRun{"flood", floodArgs(rndvN, rndvVaderSize, floodFLDelay, 1),
				ompiMCA(append([]string{"btl", "self,vader", "btl_vader_free_list_max", itoa(rndvFreeListMax)}, noSingleCopy...)...),
				"default,retries,messages"},
			checkTrigger: func(c catCheck) {
				c.atLeast("0", "ob1.rndv.stall", 1, fmt.Sprintf("flood -n %d -s %d pipelines %d large messages through %d vader fragments",
					rndvN, rndvVaderSize, rndvN, rndvFreeListMax))
				var failed uint64
				for _, r := range c.s.ranks() {
					alloc := c.s.total(r, "vader.alloc_failed")
					failed += alloc
					atMax, _ := c.s.detail(r, "pal.free_list.at_max", smFrag)
					if alloc > atMax.Count {
						c.failf("rank %s vader.alloc_failed = %d > pal.free_list.at_max[%s] = %d: an allocation fails only when the fragment list is at its maximum",
							r, alloc, smFrag, atMax.Count)
					}
					if atMax.Count > 0 && atMax.Peak != rndvFreeListMax {
						c.failf("rank %s pal.free_list.at_max[%s] peak = %d, want %d = btl_vader_free_list_max", r, smFrag, atMax.Peak, rndvFreeListMax)
					}
				}
				if failed == 0 {
					c.failf("vader.alloc_failed = 0 on every rank, want ≥ 1: %d fragments cannot carry %d messages of %d bytes",
						rndvFreeListMax, rndvN, rndvVaderSize)
				}
			},
			control: catalogRun{"flood", floodArgs(rndvN, rndvVaderSize, 0, 1), vader, "default,retries,messages"},
			checkControl: func(c catCheck) {
				why := fmt.Sprintf("flood -n %d -s %d -d 0 with default free lists (%d) and single copy", rndvN, rndvVaderSize, vaderDefaultFreeListMax)
				c.silent("ob1.rndv.stall", why)
				c.silent("vader.alloc_failed", why)
			},
		},
		{
			// 4. Rendezvous over TCP with 8 fragments per list.
			name: "ompi_rndv_stall_tcp",
			impl: ompi,
			trigger: catalogRun{"flood", floodArgs(rndvN, rndvTCPSize, floodFLDelay, 1),
				ompiMCA("btl", "self,tcp", "btl_tcp_if_include", "lo", "btl_tcp_free_list_max", itoa(rndvFreeListMax)), "default,retries"},
			checkTrigger: func(c catCheck) {
				why := fmt.Sprintf("flood -n %d -s %d over TCP with btl_tcp_free_list_max=%d", rndvN, rndvTCPSize, rndvFreeListMax)
				c.atLeast("0", "ob1.rndv.stall", 1, why)
				found := false
				for _, r := range c.s.ranks() {
					es, _ := c.s.events(r, "pal.free_list.at_max")
					for _, e := range es {
						if !strings.HasPrefix(e.Detail, "mca_btl_tcp_frag") {
							continue
						}
						found = found || r == "0"
						if e.Peak != rndvFreeListMax {
							c.failf("rank %s pal.free_list.at_max[%s] peak = %d, want %d = btl_tcp_free_list_max", r, e.Detail, e.Peak, rndvFreeListMax)
						}
					}
				}
				if !found {
					c.failf("rank 0 has no pal.free_list.at_max[mca_btl_tcp_frag*]: %s", why)
				}
			},
			control: catalogRun{"flood", floodArgs(rndvN, rndvTCPSize, 0, 1),
				ompiMCA("btl", "self,tcp", "btl_tcp_if_include", "lo"), "default,retries"},
			checkControl: func(c catCheck) {
				why := fmt.Sprintf("flood -n %d -s %d -d 0 over TCP with unlimited free lists", rndvN, rndvTCPSize)
				c.silent("ob1.rndv.stall", why)
				c.silent("pal.free_list.at_max", why)
			},
		},
		{
			// 5. One peer's traffic split over vader and tcp.
			name: "ompi_out_of_sequence",
			impl: ompi,
			trigger: catalogRun{"flood", floodArgs(oosN, oosSize, 0, oosRounds),
				ompiMCA("btl", "self,vader,tcp", "btl_tcp_if_include", "lo", "btl_tcp_exclusivity", "65536",
					"btl_tcp_latency", "1", "btl_vader_latency", "1"), "default"},
			checkTrigger: func(c catCheck) {
				c.between("1", "ob1.out_of_sequence", 1, oosRounds*oosN+floodBarriers(oosRounds),
					fmt.Sprintf("flood -n %d -r %d over vader and tcp: at most every message (%d×%d) and barrier message (%d) out of sequence",
						oosN, oosRounds, oosRounds, oosN, floodBarriers(oosRounds)))
			},
			control: catalogRun{"flood", floodArgs(oosN, oosSize, 0, oosRounds), vader, "default"},
			checkControl: func(c catCheck) {
				c.silent("ob1.out_of_sequence", "the same flood over vader alone keeps each peer's messages in order")
			},
		},
		{
			// 6. Socket buffers far smaller than the messages.
			name: "ompi_tcp_partial_io",
			impl: ompi,
			trigger: catalogRun{"flood", floodArgs(tcpN, tcpSize, floodFLDelay, 1),
				ompiMCA("btl", "self,tcp", "btl_tcp_if_include", "lo",
					"btl_tcp_sndbuf", itoa(tcpSockBuf), "btl_tcp_rcvbuf", itoa(tcpSockBuf)), "messages"},
			checkTrigger: func(c catCheck) {
				why := fmt.Sprintf("flood -n %d -s %d through %d-byte socket buffers", tcpN, tcpSize, tcpSockBuf)
				c.atLeast("0", "tcp.partial_io", 1, why)
				c.atLeast("0", "tcp.send_queued", tcpConnectQueued+1,
					why+fmt.Sprintf(" queues sends behind a full socket, beyond the %d queued while connecting", tcpConnectQueued))
			},
			control: catalogRun{"flood", floodArgs(tcpControlN, tcpControlSize, 0, 1),
				ompiMCA("btl", "self,tcp", "btl_tcp_if_include", "lo"), "messages"},
			checkControl: func(c catCheck) {
				c.silent("tcp.partial_io", fmt.Sprintf("flood -n %d -s %d -d 0: all traffic fits in btl_tcp_endpoint_cache (%d bytes) and the default socket buffers",
					tcpControlN, tcpControlSize, tcpEndpointCache))
				c.atMostEach("tcp.send_queued", tcpConnectQueued, "only the first message (a barrier's) waits for the connection")
			},
		},
		{
			// 7. Small messages while the receiver sleeps: the fast box fills.
			name:    "ompi_vader_sendi_refused",
			impl:    ompi,
			trigger: catalogRun{"flood", floodArgs(sendiN, sendiSize, floodFLDelay, 1), vader, "messages"},
			checkTrigger: func(c catCheck) {
				c.between("0", "vader.sendi_refused", 1, sendiN+floodBarriers(1),
					fmt.Sprintf("flood -n %d -s %d while rank 1 sleeps %d ms: at most one refusal per message and barrier message",
						sendiN, sendiSize, floodFLDelay))
			},
			control: catalogRun{"flood", floodArgs(sendiControlN, sendiSize, 0, 1),
				ompiMCA("btl", "self,vader", "btl_vader_fbox_size", itoa(sendiControlFbox)), "messages"},
			checkControl: func(c catCheck) {
				c.silent("vader.sendi_refused", fmt.Sprintf("flood -n %d -s %d -d 0 with btl_vader_fbox_size=%d: every message fits in the fast box",
					sendiControlN, sendiSize, sendiControlFbox))
			},
		},
		ucxLateCase("mpich_ucx_unexpected_eager", mpich, nil, unexpectedEager),
		ucxLateCase("mpich_ucx_unexpected_rendezvous", mpich, nil, unexpectedRndv),
		ucxLateCase("ompi_ucx_unexpected_eager", ompi, ompiUCX, unexpectedEager),
		ucxLateCase("ompi_ucx_unexpected_rendezvous", ompi, ompiUCX, unexpectedRndv),
		ucxPendingCase("ompi_ucx_pending_add", ompi, ompiUCX),
		ucxPendingCase("mpich_ucx_pending_add", mpich, nil),
	}
}

// ompiUCX makes Open MPI use pml/ucx on a node without RDMA devices (its
// defaults accept only InfiniBand-class transports and devices).
var ompiUCX = []string{"--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any", "--mca", "pml_ucx_devices", "any"}

// ucxLateCase: late receives under UCX (MPICH ch4:ucx or Open MPI pml/ucx),
// N messages of size bytes that all arrive before rank 1 posts their
// receives; the control pre-posts them.
func ucxLateCase(name string, impl mpitest.Impl, opts []string, size int) catalogCase {
	args := []string{"-n", itoa(unexpectedN), "-s", itoa(size)}
	return catalogCase{
		name:    name,
		impl:    impl,
		trigger: catalogRun{"unexpected", args, opts, "messages"},
		checkTrigger: func(c catCheck) {
			c.between("1", "ucx.unexpected.late_recv", unexpectedN, unexpectedN+zeroByteSlack,
				fmt.Sprintf("unexpected -n %d -s %d: rank 1 posts every receive after its message arrived, plus up to %d barrier messages",
					unexpectedN, size, zeroByteSlack))
		},
		control: catalogRun{"unexpected", append(slices.Clone(args), "-p"), opts, "messages"},
		checkControl: func(c catCheck) {
			c.atMostEach("ucx.unexpected.late_recv", zeroByteSlack,
				fmt.Sprintf("unexpected -p pre-posts every receive: only barrier messages (%d barrier) can be late", unexpectedBarriers))
		},
	}
}

// ucxPendingCase: sends queued by UCX while the receiver sleeps.
func ucxPendingCase(name string, impl mpitest.Impl, opts []string) catalogCase {
	flood := func(n, delay int) []string {
		return []string{"-n", itoa(n), "-s", itoa(ucxFloodSize), "-d", itoa(delay), "-r", "1"}
	}
	return catalogCase{
		name:    name,
		impl:    impl,
		trigger: catalogRun{"flood", flood(ucxFloodN, ucxFloodDelay), opts, "default"},
		checkTrigger: func(c catCheck) {
			c.between("0", "ucx.pending_add", 1, ucxFloodN,
				fmt.Sprintf("flood -n %d -s %d while rank 1 sleeps %d ms: at most every send is queued once", ucxFloodN, ucxFloodSize, ucxFloodDelay))
		},
		control: catalogRun{"flood", flood(ucxFloodControlN, 0), opts, "default"},
		checkControl: func(c catCheck) {
			c.silent("ucx.pending_add", fmt.Sprintf("flood -n %d -d 0: a few sends to a prompt receiver", ucxFloodControlN))
		},
	}
}

// TestCatalogTriggers runs, for each scenario, the trigger of catalog
// events and a control that must stay silent for them.
func TestCatalogTriggers(t *testing.T) {
	mpitest.RequireE2E(t)
	bin := mpitest.BuildMpiprobe(t)
	// The controls' parameters must keep them below the limits they rely on.
	if floodFLControlN >= vaderDefaultFreeListMax || tcpControlN*(tcpControlSize+catHeaderBound) >= tcpEndpointCache ||
		sendiControlN*(sendiSize+catHeaderBound) > sendiControlFbox {
		t.Fatal("a control's parameters exceed the limit that keeps it silent")
	}
	for _, tc := range catalogCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			mpitest.RequireE2E(t, tc.impl)
			progs := map[string]string{}
			tc.checkTrigger(runCatalog(t, bin, tc.impl, progs, "trigger", tc.trigger))
			tc.checkControl(runCatalog(t, bin, tc.impl, progs, "control", tc.control))
		})
	}
}

// TestCatalogDefaultQuiet runs a well-behaved program at the default level:
// unexpected -p pre-posts every receive, and each rank matches the other's
// barrier message only when it progresses inside its own MPI_Barrier, after
// posting the barrier's receive, so no default event may fire. (flood -n 100 -d 0 is not quiet: rank 0 can match rank
// 1's final barrier message while still in MPI_Waitall, before posting the
// barrier's receive, and ob1.unexpected.late_recv fired once in 5 of 8 runs.)
func TestCatalogDefaultQuiet(t *testing.T) {
	mpitest.RequireE2E(t)
	bin := mpitest.BuildMpiprobe(t)
	quiet := []string{"-n", itoa(unexpectedQuietN), "-s", itoa(unexpectedEager), "-p"}
	for _, tc := range []struct {
		impl mpitest.Impl
		opts []string
	}{
		{mpitest.OpenMPI(), ompiMCA("btl", "self,vader")},
		{mpitest.MPICH(), nil},
	} {
		t.Run(tc.impl.Name, func(t *testing.T) {
			mpitest.RequireE2E(t, tc.impl)
			c := runCatalog(t, bin, tc.impl, map[string]string{}, "quiet run", catalogRun{"unexpected", quiet, tc.opts, "default"})
			for _, j := range c.s.Jobs {
				for _, r := range j.Ranks {
					for _, e := range r.Events {
						c.failf("rank %s: %s[%s] = %d fired at the default level, want nothing: unexpected -p -n %d is well-behaved",
							r.Rank, e.Event, e.Detail, e.Count, unexpectedQuietN)
					}
				}
			}
		})
	}
}

// TestFreeListLayoutOfAnUnknownBuild runs the free-list trigger with the
// ranks loading a copy of Debian's libopen-pal whose build id mpiprobe does
// not know (LD_LIBRARY_PATH; --lib attaches to it). Given the separate
// debug file (a library built against the installed Open MPI headers,
// under --debug-dir), mpiprobe reads the layout from it, and without it
// infers it from the copy's code: either way the list's maximum reads back
// as btl_vader_free_list_max. When the code cannot be read either (the
// function's size hidden in the symbol table) the free-list events are
// unavailable, logged once with the build id, and nothing else is lost:
// the queued sends are still counted.
func TestFreeListLayoutOfAnUnknownBuild(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	pal := mpitest.NewForeignPal(t)
	bin := mpitest.BuildMpiprobe(t)
	progs := map[string]string{}
	opts := append([]string{"-x", "LD_LIBRARY_PATH=" + pal.Dir},
		ompiMCA("btl", "self,vader", "btl_vader_free_list_max", itoa(floodFLMax))...)
	run := catalogRun{"flood", []string{"-n", itoa(floodFLN), "-s", itoa(floodFLSize), "-d", itoa(floodFLDelay), "-r", "1"},
		opts, "default,retries"}
	why := fmt.Sprintf("flood -n %d posts more sends than btl_vader_free_list_max=%d fragments while rank 1 sleeps %d ms",
		floodFLN, floodFLMax, floodFLDelay)

	c := runCatalog(t, bin, impl, progs, "layout from the debug file", run, "--lib", pal.Lib, "--debug-dir", pal.DebugDir)
	e, ok := c.s.detail("0", "pal.free_list.at_max", "mca_btl_vader_frag_t")
	if !ok || e.Peak != floodFLMax {
		c.failf("rank 0 pal.free_list.at_max[mca_btl_vader_frag_t] = %+v (present %v), want peak %d = btl_vader_free_list_max: %s",
			e, ok, floodFLMax, why)
	}

	c = runCatalog(t, bin, impl, progs, "layout inferred from the code", run, "--lib", pal.Lib)
	e, ok = c.s.detail("0", "pal.free_list.at_max", "mca_btl_vader_frag_t")
	if !ok || e.Peak != floodFLMax {
		c.failf("rank 0 pal.free_list.at_max[mca_btl_vader_frag_t] = %+v (present %v), want peak %d = btl_vader_free_list_max: %s",
			e, ok, floodFLMax, why)
	}

	mpitest.HideFunctionSize(t, pal.Lib, "opal_free_list_grow_st")
	c = runCatalog(t, bin, impl, progs, "no layout", run, "--lib", pal.Lib)
	// Debian's own libopen-pal, whose layout is known, is attached too: the
	// events staying silent also shows that the ranks ran the copy.
	c.silent("pal.free_list.at_max", "the copy's layout is unknown without its debug file or readable code")
	c.silent("pal.free_list.grow", "the copy's layout is unknown without its debug file or readable code")
	c.atLeast("0", "ob1.send_pending.new", 1, why+": the rest of the catalog still counts")
	unavailable := 0
	for _, line := range strings.Split(c.stderr, "\n") {
		// The line names the debug file that would give the layout,
		// by its build id: .build-id/7a/1b93....debug.
		if strings.Contains(line, "event unavailable") && strings.Contains(line, "/.build-id/"+pal.BuildID[:2]+"/"+pal.BuildID[2:]+".debug") {
			unavailable++
		}
	}
	if unavailable != 2 {
		c.failf("%d log lines say a free-list event is unavailable and name the debug file of build id %s, want 2 (one per event, once):\n%s", unavailable, pal.BuildID, c.stderr)
	}
}

// TestTCPPeerCrashIsNotPartialIO ends a TCP job as a crash does (flood -x:
// rank 1 exits without MPI_Finalize while rank 0 waits for it in
// MPI_Recv). Rank 0 then reads 0 bytes from the closed connection, and
// mca_btl_tcp_frag_recv closes the endpoint and returns false, as it does
// for a fragment read in part: tcp.partial_io must not count it. Counted
// without telling the two apart, rank 0 had tcp.partial_io=1 in 5 of 5
// runs here; a peer that finalizes first while a rank still progresses
// closes the connection the same way, and made the ompi_tcp_partial_io
// control count 1 once in CI.
func TestTCPPeerCrashIsNotPartialIO(t *testing.T) {
	impl := mpitest.OpenMPI()
	mpitest.RequireE2E(t, impl)
	bin := mpitest.BuildMpiprobe(t)
	flood := mpitest.Build(t, impl, "flood")
	const crashStatus = 3 // flood -x: rank 1's exit status
	job := impl.Command(catNP, ompiMCA("btl", "self,tcp", "btl_tcp_if_include", "lo"), flood,
		"-n", itoa(tcpControlN), "-s", itoa(tcpControlSize), "-d", "0", "-r", "1", "-x")
	res := runMpiprobeExit(t, bin, -1, append([]string{"--events", "messages", "--"}, job...)...)
	c := catCheck{t: t, s: res.sum, label: "flood -x over TCP", stderr: res.stderr}
	crashed := false
	for _, j := range res.sum.Jobs {
		for _, r := range j.Ranks {
			crashed = crashed || (r.Rank == "1" && r.End.State == "exited" && r.End.Code != nil && *r.End.Code == crashStatus)
		}
	}
	if !crashed {
		c.failf("rank 1 did not exit %d without finalizing: the peer's connection was not closed under rank 0", crashStatus)
	}
	// tcp.send_queued counts the first message of each connection: the
	// TCP BTL was traced in rank 0.
	c.atLeast("0", "tcp.send_queued", tcpConnectQueued, "rank 0's first message to rank 1 waited for the connection")
	c.silent("tcp.partial_io", "a connection closed by a peer that ended is not a fragment read in part")
}
