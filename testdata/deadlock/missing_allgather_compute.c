// Rank 2 never reaches the allgather: it computes forever.
// np: 3
// expect: missing-collective rank=2 call=MPI_Allgather comm=WORLD waiting=0,1
// expect: rank 2 call=none
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = rank, all[3];
	start(&argc, &argv);
	if (rank == 2)
		compute();
	MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
