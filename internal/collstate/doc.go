// Package collstate reads the collective-tracking maps of mpiprobe's BPF
// side into per-process, per-communicator figures, and manages the
// communicator slots those maps are made of.
//
// The BPF side (bpf/mpiprobe.bpf.c, --collectives) gives each communicator
// a process uses a slot: coll_index maps (process, context id, group size)
// to the slot, coll_comms says what the slot is, and coll_stats holds one
// counter block per (slot, collective). User space owns the slots: Init
// hands them all to the BPF free queue, Release takes back those of a
// process that has ended. A session pins the maps under a directory of the
// BPF file system so that `mpiprobe status` can read the history while the
// session runs (Pin, OpenPinned).
package collstate
