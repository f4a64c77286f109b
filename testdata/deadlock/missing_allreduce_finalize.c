// Rank 1 skips the allreduce and finalizes; ranks 0 and 2 wait in it.
// np: 3
// expect: finalized rank=1 call=MPI_Allreduce waiting=0,2
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = rank, sum;
	start(&argc, &argv);
	if (rank != 1)
		MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
