// A library duplicates WORLD for its own traffic; ranks 0 and 2 gather
// over the duplicate, rank 1 over WORLD (the application's
// communicator passed where the library's was meant).
// np: 3
// expect: rank 0 call=MPI_Allgather comm=other
// expect: rank 1 call=MPI_Allgather comm=WORLD
// expect: rank 2 call=MPI_Allgather comm=other
// expect: missing-collective rank=1 call=MPI_Allgather comm=other waiting=0,2
// expect: missing-collective rank=0 call=MPI_Allgather comm=WORLD waiting=1
#include "corpus.h"

int main(int argc, char **argv)
{
	int v, all[3];
	MPI_Comm lib;
	start(&argc, &argv);
	MPI_Comm_dup(MPI_COMM_WORLD, &lib);
	v = rank;
	MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT, rank == 1 ? MPI_COMM_WORLD : lib);
	MPI_Finalize();
	return 0;
}
