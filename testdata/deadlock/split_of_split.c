// Two levels of communicators: WORLD split into one group of all three
// ranks (level one), which is split again into {0,1} and {2} (level two).
// Rank 0 reduces over its level-two half; ranks 1 and 2 wait in a barrier
// on level one: rank 1 is absent from rank 0's reduction, rank 0 from the
// others' barrier.
// np: 3
// expect: rank 0 call=MPI_Allreduce comm=other
// expect: rank 1 call=MPI_Barrier comm=other
// expect: rank 2 call=MPI_Barrier comm=other
// expect: missing-collective rank=1 call=MPI_Allreduce comm=other waiting=0
// expect: missing-collective rank=0 call=MPI_Barrier comm=other waiting=1,2
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1, sum;
	MPI_Comm level1, level2;
	start(&argc, &argv);
	MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &level1);
	MPI_Comm_split(level1, rank < 2, rank, &level2);
	if (rank == 0)
		MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, level2);
	else
		MPI_Barrier(level1);
	MPI_Finalize();
	return 0;
}
