// Rank 0 waits in a barrier on a duplicate of WORLD, rank 1 in one on
// WORLD: each waits for the other on a different communicator.
// np: 2
// expect: missing-collective rank=0 call=MPI_Barrier comm=WORLD waiting=1
// expect: missing-collective rank=1 call=MPI_Barrier comm=other waiting=0
#include "corpus.h"

int main(int argc, char **argv)
{
	MPI_Comm dup;
	start(&argc, &argv);
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	MPI_Barrier(rank == 0 ? dup : MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
