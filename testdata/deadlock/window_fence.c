// Rank 0 waits in MPI_Win_fence on the window's communicator, rank 1 in
// a barrier on WORLD.
// np: 2
// expect: missing-collective rank=1 call=MPI_Win_fence comm=other waiting=0
// expect: missing-collective rank=0 call=MPI_Barrier comm=WORLD waiting=1
#include "corpus.h"

int main(int argc, char **argv)
{
	int buf[4] = {0};
	MPI_Win win;
	start(&argc, &argv);
	MPI_Win_create(buf, sizeof buf, sizeof buf[0], MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	if (rank == 0)
		MPI_Win_fence(0, win);
	else
		MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
