// Rank 0 receives from any source, rank 1 receives from rank 0, rank 2
// enters a barrier: no rank sends, so none can move. No cycle of
// point-to-point calls exists (rank 2 is in a collective, rank 0's wait
// is an OR over ranks 1 and 2): the deadlock is a knot of the AND/OR
// wait-for graph.
// np: 3
// expect: knot ranks=0,1,2
// expect: lead rank=0
// expect: rank 0 call=MPI_Recv peer=any tag=7
// expect: rank 1 call=MPI_Recv peer=0 tag=7
// expect: rank 2 call=MPI_Barrier comm=WORLD
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 0;
	start(&argc, &argv);
	if (rank == 0)
		MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	else if (rank == 1)
		MPI_Recv(&v, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	else
		MPI_Barrier(MPI_COMM_WORLD);
	MPI_Send(&v, 1, MPI_INT, (rank + 1) % size, 7, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
