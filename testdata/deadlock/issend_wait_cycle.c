// Nonblocking synchronous sends completed with MPI_Wait before either
// rank receives.
// np: 2
// expect: cycle 0->1->0
// expect: rank 1 call=MPI_Wait
#include "corpus.h"

int main(int argc, char **argv)
{
	int out = 1, in;
	MPI_Request req;
	start(&argc, &argv);
	MPI_Issend(&out, 1, MPI_INT, 1 - rank, 6, MPI_COMM_WORLD, &req);
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	MPI_Recv(&in, 1, MPI_INT, 1 - rank, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Finalize();
	return 0;
}
