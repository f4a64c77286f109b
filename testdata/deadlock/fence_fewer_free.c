// Rank 1 makes one MPI_Win_fence fewer than rank 0; its MPI_Win_free
// matches rank 0's last fence, and rank 0 waits in MPI_Win_free while
// rank 1 is in MPI_Finalize. Rank 1 did call MPI_Win_free: without history
// the verdict must not say it did not.
// np: 2
// expect: rank 0 call=MPI_Win_free
// expect: rank 1 call=MPI_Finalize
// expect: suspect rank=1
// expect: not-says without MPI_Win_free
#include "corpus.h"

int main(int argc, char **argv)
{
	int buf[4] = {0};
	MPI_Win win;
	start(&argc, &argv);
	MPI_Win_create(buf, sizeof buf, sizeof buf[0], MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	MPI_Win_fence(0, win);
	if (rank == 0)
		MPI_Win_fence(0, win);
	MPI_Win_free(&win);
	MPI_Finalize();
	return 0;
}
