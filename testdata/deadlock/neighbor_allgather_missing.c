// A periodic one-dimensional cartesian communicator of four ranks: ranks
// 0, 1 and 2 gather from their two neighbours (MPI_Neighbor_allgather),
// rank 3 goes to a barrier on WORLD instead. Rank 1's neighbours (0 and 2)
// both contribute, so rank 1 leaves the gather and joins the barrier;
// ranks 0 and 2 wait for rank 3, their other neighbour.
// np: 4
// expect: rank 0 call=MPI_Neighbor_allgather comm=other
// expect: rank 2 call=MPI_Neighbor_allgather comm=other
// expect: rank 1 call=MPI_Barrier comm=WORLD
// expect: rank 3 call=MPI_Barrier comm=WORLD
// expect: missing-collective rank=3 call=MPI_Neighbor_allgather comm=other waiting=0,2
#include "corpus.h"

int main(int argc, char **argv)
{
	int dims[1] = {0}, periods[1] = {1}, v, got[2];
	MPI_Comm ring;
	start(&argc, &argv);
	dims[0] = size;
	MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
	v = rank;
	if (rank != 3)
		MPI_Neighbor_allgather(&v, 1, MPI_INT, got, 1, MPI_INT, ring);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
