// Rank 0 polls with MPI_Iprobe in a busy loop for a message rank 1 never
// sends; rank 1 waits in a barrier. Rank 0 is inside MPI_Iprobe only for
// moments, between them in its own loop: a sample may find it in either,
// and what holds either way is that it is absent from rank 1's barrier.
// np: 2
// expect: rank 0 call=MPI_Iprobe|none
// expect: rank 1 call=MPI_Barrier comm=WORLD
// expect: missing-collective rank=0 call=MPI_Barrier comm=WORLD waiting=1
#include "corpus.h"

int main(int argc, char **argv)
{
	int flag = 0;
	start(&argc, &argv);
	if (rank == 0)
		while (!flag)
			MPI_Iprobe(1, 71, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
