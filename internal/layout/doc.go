// Package layout infers where an MPI library keeps a communicator's
// identity (context id, rank, size, name, and MPICH's object tables) when
// the build is not in mpiprobe's table of verified builds and has no debug
// info.
//
// Two methods, each pure and given what the caller read:
//
//   - The predefined objects: MPI_COMM_WORLD and MPI_COMM_SELF hold known
//     values after MPI_Init (context ids, the process's rank and the job's
//     size from its environment, 0 and 1 in SELF, the names
//     "MPI_COMM_WORLD" and "MPI_COMM_SELF", the class pointer or the
//     handle). A field is where WORLD holds the world value and SELF the
//     self value at the same offset.
//   - The accessors: PMPI_Comm_rank, PMPI_Comm_size, PMPI_Comm_get_name
//     (and Open MPI's PMPI_Comm_c2f) decoded with x86asm and interpreted
//     along both sides of every branch, following calls into the library
//     two levels deep: the offsets they load and hand back, and, for
//     MPICH, how they turn a handle into an object address.
//
// A field both methods agree on is used; one that only one method finds is
// used and said so; otherwise it is unknown, with why (Field.Note). The
// analysis reads untrusted code and memory: it is bounded and fuzzed.
// mpiabi.InferCommLayout does the reading from a live process.
//
// ArgHomes, for package status, is a third use of the decoder: a data-flow
// analysis over one API function that says where it keeps an argument
// (the peer of a blocked MPI_Ssend or MPI_Probe, which no request holds)
// while a call it made waits. ObjectStores runs the same data flow to list
// what a function writes into an object it allocates (ob1's irecv and
// isend filling in a request), and InferOB1 combines those stores with
// Open MPI's predefined requests and groups into ob1's request layout,
// for stripped builds.
package layout
