// The ranks of one node (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED: all
// three here) disagree on the collective: rank 0 broadcasts a window
// size, ranks 1 and 2 reduce it over the node communicator.
// np: 3
// expect: rank 0 call=MPI_Bcast comm=other
// expect: rank 1 call=MPI_Allreduce comm=other
// expect: rank 2 call=MPI_Allreduce comm=other
// expect: mismatch ranks=0,1,2 comm=other
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1, sum;
	MPI_Comm node;
	start(&argc, &argv);
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
	if (rank == 0)
		MPI_Bcast(&v, 1, MPI_INT, 1, node);
	else
		MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, node);
	MPI_Finalize();
	return 0;
}
