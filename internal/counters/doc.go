// Package counters is the step between the kernel's counter map and package
// agg: it turns the readings of the BPF counts map, taken as plain Go values,
// into agg.Samples named by the probe catalog, and says what the C/T rule
// must observe of each.
//
// The data flow is maps → counters → agg → thresholds → report. Reading the
// map is package kernel's (kernel.ReadCounters); this package knows neither
// BPF nor the kernel, so that it is tested without root: a Snapshot is given
// the catalog and a function converting BPF timestamps to wall-clock time.
//
// A counter's detail name (a free list's class, an error's call) is read
// once, when the counter first appears: the BPF side writes it with the
// first hit and never changes it. Readings of events outside the catalog
// (a map filled by another build) are ignored.
//
// The catalog meets aggregation here too: Snapshot.Summary builds the
// summary with the catalog's descriptions of its events.
package counters
