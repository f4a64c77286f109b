// Rank 0 frees its receive request and then waits on a copy of the freed
// handle (erroneous); the message never comes, because rank 1 waits in a
// barrier.
// np: 2
// expect: rank 0 call=MPI_Wait
// expect: missing-collective rank=0 call=MPI_Barrier comm=WORLD waiting=1
#include "corpus.h"

int main(int argc, char **argv)
{
	int v;
	MPI_Request req, copy;
	start(&argc, &argv);
	if (rank == 0) {
		MPI_Irecv(&v, 1, MPI_INT, 1, 13, MPI_COMM_WORLD, &req);
		copy = req;
		MPI_Request_free(&req);
		MPI_Wait(&copy, MPI_STATUS_IGNORE);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
