// Ranks 0 and 1 wait in a barrier; rank 2 waits for a message from rank 0
// instead of joining it.
// np: 3
// expect: missing-collective rank=2 call=MPI_Barrier comm=WORLD waiting=0,1
// expect: rank 2 call=MPI_Recv peer=0
#include "corpus.h"

int main(int argc, char **argv)
{
	int v;
	start(&argc, &argv);
	if (rank == 2)
		MPI_Recv(&v, 1, MPI_INT, 0, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
