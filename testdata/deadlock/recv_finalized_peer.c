// Rank 0 waits for a message from rank 2; ranks 1 to 3 have finished and
// sit in MPI_Finalize.
// np: 4
// expect: rank 0 call=MPI_Recv peer=2
// expect: suspect rank=2
// expect: lead rank=0
#include "corpus.h"

int main(int argc, char **argv)
{
	int v;
	start(&argc, &argv);
	if (rank == 0)
		MPI_Recv(&v, 1, MPI_INT, 2, 18, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Finalize();
	return 0;
}
