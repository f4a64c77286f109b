// Package hang decides, from what each rank of an MPI job is doing now,
// who waits where in a hung job.
//
// The collectors tell, per rank, which MPI call it is inside and for how
// long ([Call]), how it ended if it did, and how many times it called each
// collective on each communicator ([Rank.Counts]). [Diagnose] turns that
// into a [Report] whose Verdict is one line such as
//
//	ranks 0-6 wait in MPI_Allreduce #42 on WORLD (size 8) for 12.3 s; rank 7 has made 41 calls and is in MPI_Recv from rank 3
//
// The package never states a guess as fact: when the data does not support
// a conclusion, the verdict says what is known instead.
//
// # Communicators
//
// A [Comm] is compared across ranks by value, except that:
//
//   - a Comm named "WORLD" is MPI_COMM_WORLD on every rank whatever its ID
//     (even a local handle) and Size (the largest size reported is used),
//     and every observed rank is a member;
//   - a Comm named "SELF", and any Comm of Size 1, is private to the rank
//     that names it (the halves of a split into singletons share an ID);
//   - a Local Comm (rank-local handle) is comparable with nothing;
//   - two communicators with the same ID and Size (the halves of a split
//     into equal sizes) cannot be told apart by value. Diagnose detects
//     this when more ranks use the ID than its Size allows; the ID is then
//     "shared". Ranks in a collective on a shared ID are only grouped when
//     their whole histories on it (Counts[comm]) are identical, so halves
//     whose counts differ are never merged; and because even such a group
//     is not known to be one communicator, the verdict says the ranks "are
//     in" the call, with the reason, instead of "wait in", Waiting and Odd
//     stay empty, and no divergence is computed on that ID. A split whose
//     halves are not both observed (for example on another node) cannot be
//     detected.
//
// The known members of a communicator are all observed ranks for WORLD, the
// owner for a private one, and otherwise the ranks that have it in Counts or
// are in a call on it.
//
// A call is a collective if it has a Comm and its name is a known collective
// (blocking, nonblocking or persistent forms, communicator, window and file
// creation; "PMPI_" and Fortran spellings included), or if the collector
// numbered it (Seq > 0) and it is not a known point-to-point, completion or
// one-sided call. When Seq is 0 and the rank's history is known, Seq is
// taken from Counts, which include the current call.
//
// # Verdict
//
// A rank is blocked when it is inside a call for minWait or more. A rank
// that has ended is in no call, whatever In says. Negative rank numbers are
// ignored; when a rank number appears twice, its first entry is used.
//
//  1. Ranks blocked in a collective on a known communicator are grouped by
//     (Name, communicator, Seq); the largest group comes first, ties going
//     to the group with the lowest rank, and sets Waiting and Odd. The verdict starts "ranks 0-6 wait in
//     MPI_Allreduce #42 on WORLD (size 8) for 12.3 s" ("rank 3 waits" for
//     one rank; "#42" only when Seq is known; the time is the shortest
//     inside the group; " at <site>" is added when all share one call site).
//  2. The known members of that communicator outside the group are Odd. Each
//     is described, ranks with identical descriptions together ("ranks 7,9
//     have made 41 calls and are computing"): the count of the group's
//     collective on the communicator when its history is known, then its
//     state: "is in MPI_Recv from rank 3" ("to" for sends, "from any
//     source", "is in MPI_Barrier #41 on comm 3 (size 4)"), "is computing",
//     "ended (killed by SIGKILL)", "entered the same call 0.2 s ago" (inside
//     the group's very call for less than minWait), and " at <site>" when
//     known. At most three descriptions are printed, then "N more ranks of
//     WORLD are in other states" (Odd still lists them all). Members the size implies but nobody
//     identifies are counted, never invented: "1 of 8 ranks of WORLD is not
//     observed here (rank 7)" (WORLD ranks are numbered 0..size-1, so those
//     missing are known by number) or "1 of 4 ranks of comm 3 (size 4) is
//     not identified". If every member is in the group: "all 8 ranks of
//     WORLD are in this call".
//  3. If the largest group is of ranks in one collective on local handles,
//     the verdict does not claim they wait in the same call: "ranks 0-6 are
//     in MPI_Allreduce (communicator not comparable: unknown library build)
//     for 12.3 s", then the state of the other observed ranks (membership
//     is unknown). Such a group is formed by Name alone and competes with
//     the groups of rule 1 by size.
//  4. If no rank is blocked: "no rank has been inside an MPI call for 5.0 s
//     or more: the job is making progress", followed by the ranks that have
//     ended. If every observed rank has ended, the verdict says so instead
//     ("all 8 observed ranks have ended: ranks 0-6 (exit 0), rank 7 (killed
//     by SIGKILL)"); with no rank at all it is "no rank is observed".
//  5. If ranks are blocked but none in a collective on a known communicator,
//     the verdict names the cycles of ranks waiting on each other first
//     ("ranks 0 and 1 wait on each other", "ranks 0 -> 1 -> 2 -> 0 wait in a
//     cycle", "rank 3 waits on itself"; a blocked rank with a known peer
//     waits on that peer), then the blocked ranks ("rank 1 is in MPI_Recv
//     from rank 0 for 9.0 s"), then the state of the peers they wait on that
//     are not blocked themselves ("rank 0 is computing", "rank 9 is not
//     observed here"). Cycles are also appended after rules 1 and 3.
//  6. For each communicator whose counts can be compared (WORLD, and other
//     non-local ones of size 2 or more whose ID is not shared) and each
//     collective on it, when
//     at least two members have a known history, the most common count
//     (ties: the larger) is Others and members with another count are
//     Divergent. A member with a known history but no entry has count 0.
//     The verdict appends "counts diverge: rank 7 made 41 MPI_Allreduce on
//     WORLD, the others 42" (ranks with the same numbers together, the first
//     three, then "and N more"), leaving out a count rule 2 already printed.
//     It is not appended under rule 4: the counts of a running job are read
//     at different moments, so a lag is expected.
//
// # Every rank, every communicator
//
// The verdict accounts for every observed rank (issue 15):
//
//   - Every group of ranks blocked in one collective is explained, not
//     only the largest: the groups are taken largest first, each with the
//     members of its communicator that are not in it ([Report.Absent]). A
//     communicator as large as WORLD, when every rank of WORLD is observed,
//     has every rank as a member, so its absent members are named rather
//     than "not identified".
//   - MPI_Init is collective over WORLD. A rank in MPI_Finalize is in no
//     collective: it "finished". When it is absent from a collective the
//     others wait in and it has not made that call (its history says so,
//     or no history is known), it is the cause, and the verdict leads with
//     it: "rank 1 finished (in MPI_Finalize) without MPI_Gather, which
//     ranks 0,2 wait in on WORLD (size 3) ..." when its history shows it
//     made fewer such calls, and "rank 1 finished (in MPI_Finalize) while
//     ranks 0,2 wait in MPI_Gather on WORLD (size 3) ..." when no history
//     is known: it may have made the call, matched by another of the
//     others' (one MPI_Win_fence fewer, its MPI_Win_free matching their
//     last fence). A finished rank whose history shows the call "made
//     the call and finished".
//   - The ranks blocked in collectives on one communicator are a
//     [Mismatch] when their calls differ, or when every member is blocked
//     and they are at different call sites or with different known
//     arguments ([Call.Args]): "mismatch on WORLD (size 2) for 6.0 s:
//     rank 0 in MPI_Reduce root 0 at x.c:19, rank 1 in MPI_Reduce root 1
//     at x.c:21". Waiting and Odd stay empty then.
//   - A cycle may pass through a collective: a rank blocked in one waits
//     for each member absent from it that is blocked in another call
//     ([Edge.Coll]), so "deadlock cycle: rank 0 waits for 1 (MPI_Barrier
//     at x.c:13, which 1 has not entered), rank 1 waits for 0 (MPI_Recv
//     tag 112 at x.c:11)". Only cycles that hold a point-to-point wait are
//     named so (collectives alone waiting on each other are mismatches
//     and absences), and a wildcard's edge closes a cycle only when every
//     rank it may wait for is blocked in a point-to-point call; the other
//     shapes are knots.
//   - Then come the cycles, the blocked ranks outside any collective
//     (those that did not finish first, so a stuck rank leads ranks that
//     merely sit in MPI_Finalize), the finished ones, and every rank not
//     yet named with its state ("is computing", "is in an unknown state:
//     its stack could not be unwound" for a rank whose stack could not be
//     read, [Rank.Unreadable]).
//
// # Knots
//
// The wait-for graph is an AND/OR graph ([Knot]): a blocking
// point-to-point call and MPI_Waitall wait for every peer, a collective
// for every member of its communicator not in the same call; a receive
// from MPI_ANY_SOURCE and MPI_Waitany/MPI_Waitsome wait for any one of
// their candidates. The ranks that cannot move whatever the others do are
// the knot. A rank whose wait is not fully known (peer unknown, a member
// of the communicator not observed, its stack unreadable) is taken as able
// to move, and so is a rank that ended, so the knot never rests on a guess
// and holds only ranks stuck by each other. When the knot holds a wildcard
// wait the verdict leads with it, each rank with what it waits for
// ("deadlock: ranks 0-2 cannot move: rank 0 waits for any of ranks 1-2
// (MPI_Recv from any source ...), rank 1 waits for 0 (...), rank 2 waits
// for ranks 0-1 (MPI_Barrier on WORLD ...)"); otherwise the clauses
// before name each wait and "deadlock: ranks 0-7 cannot move" is
// appended, unless a cycle or mismatch clause already holds every rank of
// it. Waits inferred from the calls, not read, are counted in the clause.
//
// A stopped rank ([Rank.Stopped]) is named first, "rank 3 is stopped by
// SIGSTOP: …", with how to resume it: it makes no progress, so every rank
// that needs it waits. It is never blocked: the call it stopped in is
// where it stopped, not a wait, and gives no wait-for edge; it is a
// suspect and the lead.
//
// [Report.Suspects] are the ranks that block progress: absent members
// (except those that made the call or are entering it), the sides of a
// mismatch, the ranks of cycles, and the peers blocked ranks wait on that
// are not blocked themselves or finished. [Report.Lead] are the ranks the
// verdict names first.
//
// Every verdict also counts the ranks of WORLD that are not observed, as in
// rule 2, when any rank reports the size of WORLD. Ranks without history (Counts == nil) are never
// flagged and never shown with a count. Rank lists are printed with
// package ranks and shortened when long ("0,2,4,6,8,10,12,...,510 (256 in all)"), and
// caller strings are stripped of line breaks, so the verdict stays one short
// line for any number of ranks.
package hang
