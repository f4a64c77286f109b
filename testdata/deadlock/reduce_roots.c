// Each rank reduces to a different root, at different lines: both roots
// wait for the other's contribution. (The operations differ too, so that
// the compiler keeps two call sites.)
// np: 2
// expect: mismatch ranks=0,1 call=MPI_Reduce comm=WORLD
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1, sum;
	start(&argc, &argv);
	if (rank == 0)
		MPI_Reduce(&v, &sum, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	else
		MPI_Reduce(&v, &sum, 1, MPI_INT, MPI_MAX, 1, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
