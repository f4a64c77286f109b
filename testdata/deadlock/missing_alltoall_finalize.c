// Rank 0 finalizes without the all-to-all ranks 1 and 2 wait in.
// np: 3
// expect: finalized rank=0 call=MPI_Alltoall waiting=1,2
#include "corpus.h"

int main(int argc, char **argv)
{
	int out[3] = {1, 2, 3}, in[3];
	start(&argc, &argv);
	if (rank != 0)
		MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
