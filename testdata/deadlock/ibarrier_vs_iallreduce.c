// Nonblocking collectives waited with MPI_Wait: rank 0 starts an
// MPI_Ibarrier on WORLD, rank 1 an MPI_Iallreduce on a duplicate of WORLD
// (its library's communicator); each waits for its request, whose
// collective the other never joins. (On the same communicator both
// libraries let a two-rank Ibarrier and Iallreduce complete each other's
// messages and the job ends, so the two are on different ones.)
// known-gap: MPI_Wait on a nonblocking collective's request is not traced to its collective, so no absent member is named
// np: 2
// expect: rank 0 call=MPI_Wait
// expect: rank 1 call=MPI_Wait
// expect: missing-collective rank=1 call=MPI_Ibarrier comm=WORLD waiting=0
// expect: missing-collective rank=0 call=MPI_Iallreduce comm=other waiting=1
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1, sum;
	MPI_Comm lib;
	MPI_Request req;
	start(&argc, &argv);
	MPI_Comm_dup(MPI_COMM_WORLD, &lib);
	if (rank == 0)
		MPI_Ibarrier(MPI_COMM_WORLD, &req);
	else
		MPI_Iallreduce(&v, &sum, 1, MPI_INT, MPI_SUM, lib, &req);
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	MPI_Finalize();
	return 0;
}
