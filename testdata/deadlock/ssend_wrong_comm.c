// Rank 0 sends synchronously (MPI_Ssend) to rank 1 on WORLD; rank 1
// receives from rank 0 with the same tag on a duplicate of WORLD: the
// message cannot match across communicators, so the send never completes
// and the receive never gets it.
// np: 2
// expect: rank 0 call=MPI_Ssend comm=WORLD peer=1 tag=121
// expect: rank 1 call=MPI_Recv comm=other peer=0 tag=121
// expect: cycle 0->1->0
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1;
	MPI_Comm dup;
	start(&argc, &argv);
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	if (rank == 0)
		MPI_Ssend(&v, 1, MPI_INT, 1, 121, MPI_COMM_WORLD);
	else
		MPI_Recv(&v, 1, MPI_INT, 0, 121, dup, MPI_STATUS_IGNORE);
	MPI_Finalize();
	return 0;
}
