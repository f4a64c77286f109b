// Rank 0 sends with tag 1, rank 1 receives with tag 2; the synchronous
// send cannot complete and rank 1 never gets its message.
// np: 2
// expect: rank 0 call=MPI_Ssend peer=1 tag=1
// expect: rank 1 call=MPI_Recv peer=0 tag=2
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1;
	start(&argc, &argv);
	if (rank == 0)
		MPI_Ssend(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
	else
		MPI_Recv(&v, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Finalize();
	return 0;
}
