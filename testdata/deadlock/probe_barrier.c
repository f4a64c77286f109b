// Rank 0 probes for a message rank 1 never sends; rank 1 waits in the
// barrier.
// np: 2
// expect: missing-collective rank=0 call=MPI_Barrier comm=WORLD waiting=1
// expect: rank 0 call=MPI_Probe peer=1
#include "corpus.h"

int main(int argc, char **argv)
{
	start(&argc, &argv);
	if (rank == 0)
		MPI_Probe(1, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
