// Both ranks receive from each other before sending.
// np: 2
// expect: cycle 0->1->0
#include "corpus.h"

int main(int argc, char **argv)
{
	int out = 1, in;
	start(&argc, &argv);
	MPI_Recv(&in, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Send(&out, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
