// Two ranks send to each other with MPI_Ssend first: neither posts its
// receive.
// np: 2
// expect: cycle 0->1->0
#include "corpus.h"

int main(int argc, char **argv)
{
	int out = 1, in;
	start(&argc, &argv);
	MPI_Ssend(&out, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD);
	MPI_Recv(&in, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Finalize();
	return 0;
}
