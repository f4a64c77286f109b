// Rank 1 receives from any source with tag 4 while rank 0 sends tag 3:
// the message stays unmatched and rank 1 waits forever; rank 0 then
// waits in the barrier.
// np: 2
// expect: rank 1 call=MPI_Recv peer=any tag=4
// expect: missing-collective rank=1 call=MPI_Barrier comm=WORLD waiting=0
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1;
	start(&argc, &argv);
	if (rank == 0)
		MPI_Send(&v, 1, MPI_INT, 1, 3, MPI_COMM_WORLD);
	else
		MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
