// Three ranks in a ring, each receiving from its left neighbour before it
// sends to the right one: 0 waits on 2, 2 on 1, 1 on 0.
// np: 3
// expect: cycle 0->2->1->0
#include "corpus.h"

int main(int argc, char **argv)
{
	int out = 1, in;
	start(&argc, &argv);
	int left = (rank + size - 1) % size, right = (rank + 1) % size;
	MPI_Recv(&in, 1, MPI_INT, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Send(&out, 1, MPI_INT, right, 3, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
