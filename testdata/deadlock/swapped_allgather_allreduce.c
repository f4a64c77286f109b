// Ranks 0 and 1 call MPI_Allgather then MPI_Allreduce; rank 2 the other
// way round.
// np: 3
// expect: mismatch ranks=0,1,2 comm=WORLD
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1, sum, all[3];
	start(&argc, &argv);
	if (rank != 2) {
		MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
		MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	} else {
		MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
	}
	MPI_Finalize();
	return 0;
}
