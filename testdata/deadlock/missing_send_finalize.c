// Rank 1 waits for a message rank 0 never sends: rank 0 goes on to
// MPI_Finalize.
// np: 2
// expect: rank 1 call=MPI_Recv peer=0
// expect: rank 0 call=MPI_Finalize
// expect: suspect rank=0
#include "corpus.h"

int main(int argc, char **argv)
{
	int in;
	start(&argc, &argv);
	if (rank == 1)
		MPI_Recv(&in, 1, MPI_INT, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Finalize();
	return 0;
}
