// Rank 2 receives from rank 1, but rank 0 is the one sending to it (with a
// synchronous send); rank 1 waits in a barrier the others never reach.
// np: 3
// expect: rank 2 call=MPI_Recv peer=1
// expect: rank 0 call=MPI_Ssend peer=2
// expect: missing-collective rank=0 call=MPI_Barrier comm=WORLD waiting=1
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1;
	start(&argc, &argv);
	if (rank == 0)
		MPI_Ssend(&v, 1, MPI_INT, 2, 0, MPI_COMM_WORLD);
	else if (rank == 2)
		MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
