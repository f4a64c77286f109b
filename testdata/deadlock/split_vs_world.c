// WORLD split into even and odd ranks. The even half reduces and goes on
// to a barrier on WORLD; rank 1 reduces over the odd half, which rank 3
// never joins: it waits in the barrier on WORLD. The other member of the
// odd half, rank 3, is named from the library's group (Open MPI) or the
// communicator's rank map (MPICH ch4).
// np: 4
// expect: missing-collective rank=1 call=MPI_Barrier comm=WORLD waiting=0,2,3
// expect: rank 1 call=MPI_Allreduce comm=other
// expect: missing-collective rank=3 call=MPI_Allreduce comm=other waiting=1
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1, sum;
	MPI_Comm half;
	start(&argc, &argv);
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
	if (rank != 3)
		MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, half);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
