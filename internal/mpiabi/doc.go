// Package mpiabi holds what mpiprobe knows about one MPI library build
// inside one process: which implementation it is (Flavour; MPICHDevice),
// where its objects keep the fields mpiprobe reads, and how to read them.
//
// Every layout comes with its source, in the order of trust (see
// LayoutField): a table of builds verified here, keyed by GNU build id
// (turned off by NoVerifiedLayoutsEnv so that tests run the other paths);
// the build's own DWARF; inferred from its machine code and from the
// values a live process's predefined objects must hold (package layout
// does the code analysis); or assumed from the implementation's sources.
// The layouts:
//
//   - CommLayout: a communicator's identity (context id, rank, size,
//     name, MPICH's handle tables, ch4 rank map, ch3 connection table),
//     which the --collectives programs read in BPF and status reads from
//     /proc/PID/mem (CommIdentity, MPICHObject: the one decoder of MPICH
//     handles);
//   - FreeListLayout: Open MPI's opal_free_list_t, which the free-list
//     programs read;
//   - OB1Layout, MPICHReqLayout, UCPReqLayout and MPICHFrameArgs: the
//     point-to-point requests and the frame slots status reads.
//
// CommReader and RequestReader read a process's communicators and
// point-to-point requests with these layouts, into Comm and Request;
// Learnt is what the processes of one command learn of their builds and
// share. The Resolve functions pick the best source; the LayoutStatus functions
// say, field by field, what `mpiprobe probes -p` lists. Process memory is
// read through procfs.Memory; the package opens no /proc file itself.
package mpiabi
