// Ranks 0 and 1 reduce over a duplicate of WORLD, rank 2 over WORLD.
// np: 3
// expect: missing-collective rank=2 call=MPI_Allreduce comm=other waiting=0,1
// expect: missing-collective rank=0 call=MPI_Allreduce comm=WORLD waiting=2
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1, sum;
	MPI_Comm dup;
	start(&argc, &argv);
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, rank == 2 ? MPI_COMM_WORLD : dup);
	MPI_Finalize();
	return 0;
}
