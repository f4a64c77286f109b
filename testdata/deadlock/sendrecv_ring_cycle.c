// Each rank sends to its right neighbour and receives from it too (the
// left one was meant) in MPI_Sendrecv: the sends go out eagerly, every
// receive waits for the right neighbour, which waits for its own.
// np: 3
// expect: rank 0 call=MPI_Sendrecv peer=1
// expect: rank 1 call=MPI_Sendrecv peer=2
// expect: rank 2 call=MPI_Sendrecv peer=0
// expect: cycle 0->1->2->0
#include "corpus.h"

int main(int argc, char **argv)
{
	int out = rank, in;
	int right;
	start(&argc, &argv);
	right = (rank + 1) % size;
	MPI_Sendrecv(&out, 1, MPI_INT, right, 41, &in, 1, MPI_INT, right, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Finalize();
	return 0;
}
