// Rank 1 waits for a message rank 0 never sends; rank 0 waits in a
// barrier rank 1 never reaches.
// np: 2
// expect: missing-collective rank=1 call=MPI_Barrier comm=WORLD waiting=0
// expect: rank 1 call=MPI_Recv peer=0
#include "corpus.h"

int main(int argc, char **argv)
{
	int in;
	start(&argc, &argv);
	if (rank == 1)
		MPI_Recv(&in, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
