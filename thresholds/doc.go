// Package thresholds decides when mpiprobe reports an event, and resolves
// the per-event settings that govern that decision.
//
// # The C/T rule
//
// Every event has a count threshold C and a time delay T (a [Rule]). An
// event is reported only once it has happened C times since its last report,
// and not more than once every T; a report gives the count since the last
// report. The caller feeds a [Limiter] the cumulative running totals it reads
// periodically from the BPF maps, one total per key (for example a
// (pid, event) pair), and the Limiter says when to print.
//
// With C = 1000 an event falls into one of three rate regimes:
//
//   - Low rate: it never reaches C, so nothing is printed while the program
//     runs. At the end, [Limiter.Finalize] sums it up in one line:
//     "At finalize : 23 times : <message>" (kind [Final]).
//
//   - Medium rate: it reaches C only after T has passed since its last
//     report. It is printed each time another C have accumulated, with the
//     actual count since the last report (sampling may overshoot C):
//     "1,003 warnings : <message>" (kind [Threshold]). Such reports are at
//     least T apart by construction.
//
//   - High rate: it reaches C before T has passed since its last report, so
//     the report is held back until T has passed, and then gives the count
//     accrued in that window: "1,234,567 warnings (in 10 seconds) : <message>"
//     (kind [Window]). The window printed is the rule's T; the real interval
//     is at least T because totals are only read periodically.
//
// The first report of a key may happen as soon as C is reached: T counts
// from the previous report of the same key. C = 0 and C = 1 both mean every
// new count is reportable (still limited by T); T = 0 means no time limit.
// A total lower than one seen before for the same key can only come from a
// caller bug; it is treated as "no new counts" and never underflows.
//
// At the end, [Limiter.Finalize] returns one [Final] report per key whose
// count since its last report is not zero, in the order keys were first
// observed. [Report.Prefix] renders the text before " : <message>".
//
// Time comes from an injected [Clock] so tests can drive the Limiter with a
// fake clock; programs use [SystemClock].
//
// # Overrides
//
// The probe catalog supplies each event's default Rule. Users may override
// it, from weakest to strongest:
//
//  1. catalog default
//  2. config file global (C = ..., T = ...)
//  3. config file per event (threshold.EVENT = C/T)
//  4. command line global (-C N, -T DURATION)
//  5. command line per event (--threshold EVENT=C/T)
//
// C and T resolve independently: a layer that sets only T leaves C as the
// weaker layers had it. [Resolve] applies [Overrides] layers, weakest first;
// within one layer the per-event setting beats the global one.
//
// An event spec ("EVENT=C/T", parsed by [ParseEventSpec]) may leave either
// part empty: "ob1.send_pending.new=500/" sets only C, "ob1.send_pending.new=/30s"
// sets only T, and "ob1.send_pending.new=500" (no slash) also sets only C.
// Event names consist of lowercase ASCII letters, digits, '_', '.' and '-'.
// C is a decimal whole number. T is a Go duration such as 10s, 1m30s or
// 500ms, or a bare whole number meaning seconds; it must not be negative.
//
// # Config file
//
// Layers 2 and 3 come from the configuration file, which package
// github.com/mpiprobe/mpiprobe/internal/config parses and documents. Its threshold
// keys are
//
//	C = 1000                          # count threshold for all events
//	T = 10s                           # time delay for all events (10 = 10s)
//	threshold.ob1.send_pending.new = 500/30s   # one event; same syntax as --threshold
//
// with values parsed by [ParseC], [ParseT] and [ParsePartial], and event
// names checked by [CheckEvent]. [Overrides.Format] writes Overrides back
// in this format.
package thresholds
