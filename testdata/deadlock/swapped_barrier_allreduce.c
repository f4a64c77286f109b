// The order of two collectives is swapped on rank 1.
// np: 2
// expect: mismatch ranks=0,1 comm=WORLD
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1, sum;
	start(&argc, &argv);
	if (rank == 0) {
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	} else {
		MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
	}
	MPI_Finalize();
	return 0;
}
