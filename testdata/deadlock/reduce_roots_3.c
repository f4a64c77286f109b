// Three ranks reduce on WORLD: ranks 0 and 1 to root 0, rank 2 to root 2
// (at another line, with another operation). Rank 1, a leaf, sends its
// contribution and goes on to MPI_Finalize; the two roots each wait for
// contributions to their own reduction.
// known-gap: MPI_Reduce to root 0 on rank 0 and to root 2 on rank 2 is not named a mismatch (only that rank 1 finished)
// np: 3
// expect: rank 0 call=MPI_Reduce comm=WORLD
// expect: rank 2 call=MPI_Reduce comm=WORLD
// expect: mismatch ranks=0,2 call=MPI_Reduce comm=WORLD
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1, sum;
	start(&argc, &argv);
	if (rank != 2)
		MPI_Reduce(&v, &sum, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	else
		MPI_Reduce(&v, &sum, 1, MPI_INT, MPI_MAX, 2, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
