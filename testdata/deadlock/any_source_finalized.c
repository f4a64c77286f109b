// Rank 0 waits for a message from any source; the other three ranks have
// finished and sit in MPI_Finalize.
// np: 4
// expect: rank 0 call=MPI_Recv peer=any
// expect: rank 1 call=MPI_Finalize
// expect: lead rank=0
#include "corpus.h"

int main(int argc, char **argv)
{
	int v;
	start(&argc, &argv);
	if (rank == 0)
		MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 17, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Finalize();
	return 0;
}
