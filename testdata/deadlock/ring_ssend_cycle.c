// Four ranks in a ring, each synchronously sending to its right neighbour
// before receiving: 0 waits on 1, 1 on 2, 2 on 3, 3 on 0.
// np: 4
// expect: cycle 0->1->2->3->0
#include "corpus.h"

int main(int argc, char **argv)
{
	int out = 1, in;
	start(&argc, &argv);
	int left = (rank + size - 1) % size, right = (rank + 1) % size;
	MPI_Ssend(&out, 1, MPI_INT, right, 4, MPI_COMM_WORLD);
	MPI_Recv(&in, 1, MPI_INT, left, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Finalize();
	return 0;
}
