// Nonblocking receive completed with MPI_Wait before the matching send is
// made: both ranks wait in MPI_Wait on a receive from the other.
// np: 2
// expect: cycle 0->1->0
// expect: rank 0 call=MPI_Wait
#include "corpus.h"

int main(int argc, char **argv)
{
	int out = 1, in;
	MPI_Request req;
	start(&argc, &argv);
	MPI_Irecv(&in, 1, MPI_INT, 1 - rank, 5, MPI_COMM_WORLD, &req);
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	MPI_Send(&out, 1, MPI_INT, 1 - rank, 5, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
